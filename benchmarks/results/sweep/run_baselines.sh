#!/bin/bash
# baselines sweep: AIM (90 s limit), MST, MWEM, marginals; 3 seeds
cd /work/main
export DPGM_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 JAX_NUM_THREADS=1 XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
out=benchmarks/results/sweep
B=".venv/bin/python benchmarks/counting_queries.py --methods aim mst mwem marginals --seeds 3 --aim-time-limit 90 --queries 1000"
for ds in msnbc retail gowalla; do $B --datasets $ds --epsilons 1 --json $out/${ds}_eps1_baselines.json > $out/${ds}_eps1_baselines.log 2>&1; done
for n in 3000 30000 300000; do $B --datasets msnbc --subsample $n --epsilons 1 --json $out/msnbc_n${n}_eps1_baselines.json > $out/msnbc_n${n}_eps1_baselines.log 2>&1; done
for e in 0.5 2 4; do for ds in msnbc retail gowalla; do $B --datasets $ds --epsilons $e --json $out/${ds}_eps${e}_baselines.json > $out/${ds}_eps${e}_baselines.log 2>&1; done; done
echo done > $out/baselines.done
