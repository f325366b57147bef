#!/bin/bash
# The sweep of benchmarks/counting_queries.py behind benchmarks/results/sweep/*.json, 3 seeds each:
#   run.sh baselines     AIM (90 s time limit), MST, MWEM, marginals
#   run.sh dpgm_generic  dpgm with configs/transactions.yaml (rules: public)
#   run.sh mwem_pgm      MWEM+PGM (epsilon 1 only: ~2 minutes a run on 100 items)
# Order: epsilon 1 on every dataset, msnbc samples of 3,000 / 30,000 / 300,000 at epsilon 1, then
# epsilon 0.5, 2, 4. One JSON (rewritten after every run) and one log per setting.
set -u
cd "$(dirname "$0")/../../.."
export DPGM_DATA_DIR=${DPGM_DATA_DIR:-/work/shared/data} OMP_NUM_THREADS=1
label=${1:-}
case "$label" in
  baselines) methods="--methods aim mst mwem marginals --aim-max-rounds 40" ;;
  dpgm_generic) methods="--methods dpgm --config configs/transactions.yaml" ;;
  mwem_pgm) methods="--methods mwem_pgm" ;;
  *) echo "usage: run.sh baselines|dpgm_generic" >&2; exit 2 ;;
esac
out=benchmarks/results/sweep
run() {  # run SETTING ARGS...: one setting
  local name=${1}_$label; shift
  .venv/bin/python benchmarks/counting_queries.py $methods --seeds 3 --queries 1000 "$@" \
    --json $out/$name.json > $out/$name.log 2>&1
}
for ds in msnbc retail gowalla; do run ${ds}_eps1 --datasets $ds --epsilons 1; done
[ "$label" = mwem_pgm ] && { echo done > $out/$label.done; exit 0; }
for n in 3000 30000 300000; do run msnbc_n${n}_eps1 --datasets msnbc --subsample $n --epsilons 1; done
for e in 0.5 2 4; do for ds in msnbc retail gowalla; do run ${ds}_eps${e} --datasets $ds --epsilons $e; done; done
echo done > $out/$label.done
