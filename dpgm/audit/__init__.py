"""Empirical privacy audit of DP-SGD in one training run (Steinke, Nasr, Jagielski, NeurIPS 2023).

m canaries are built from the base data: canary i is a random base record plus one extra item
("mark") that only canary i has. Each canary joins the training set independently with
probability 1/2 (auditor's seeded generator). One model (k = 1 part) is trained by dpgm's own
DP-SGD path (MixtureTrainer, DPSGD, Poisson batches, the RDP accountant charging every step).
The auditor guesses "in" for the highest canary scores and "out" for the lowest, and
dpgm.audit.bounds turns the count of correct guesses into a lower bound on epsilon
(their Theorem 5.2) at the run's delta, to set against the accountant's claimed epsilon.

The claim is known before training (the plan's epsilon), so the number of guesses follows it:
the fewest whose cap (the bound if every guess is right) is at least claim + margin. With too
few guesses no run, however leaky, could refute the claim. Scores ("weights", default): the
squared movement, from initialisation to release, of the weights that read the canary's mark
(the input column of every linear layer over the record). Only canary i's own gradient reaches
its column, so with the noise off an excluded canary's column stays where it started; with the
noise on every column moves by the same noise. The initial weights are data-independent, and
DP-SGD is private for any initialisation, so using them leaves Thm 5.2 valid. "likelihood"
(black-box): log p(canary) - log p(canary without its mark) under the released model.

Only the training stage is audited: no partition (one part), no noisy part means (the output
bias keeps its default initialisation), no private item choice (data.top_items is ignored);
``rules: public`` configs get their rules from the base data. A target epsilon, if set,
calibrates the training noise alone, so the claim is the epsilon of exactly the run audited.
delta is that of a training run on the base records; the expected batch size uses
the public size n_base + m/2, not a released count. ``leak=True`` is a test switch: training
runs with the noise off (multiplier LEAK_NOISE_MULTIPLIER, fixed clipping) while the claim is
still the plan's epsilon, so the audit must catch it.

The audit's output is NOT a differentially private release: it tests the implementation, on
data the auditor may look at (public or synthetic data, or a custodian's own check).

One module per job: bounds.py (the bound of Thm 5.2, its cap and the audit's size: pure
numpy/scipy), plan.py (``AuditPlan``: what the auditor chooses before training), canaries.py
(the canaries and their scores), run.py (``run_audit``: the experiment and its report) and
cli.py (the command line, also ``dpgm audit``).

    python -m dpgm.audit --config configs/digits.yaml --json audit.json
"""
