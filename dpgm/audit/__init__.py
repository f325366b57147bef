"""Empirical privacy audits: DP-SGD in one training run, and the generic pipeline's statistics releases.

DP-SGD (Steinke, Nasr, Jagielski, NeurIPS 2023): m canaries each join the training set
independently with probability 1/2 (auditor's seeded generator); one model (k = 1 part) is trained
by dpgm's own DP-SGD path (MixtureTrainer, DPSGD, Poisson batches, the RDP accountant charging every
step). Default canaries are Dirac gradients (Nasr et al., USENIX Security 2023) on weights that no
record reaches, read off every step's released gradient (canaries.GradientCanaries, a
``dpsgd.GradientHook``); record canaries (a base record plus a mark item only it has) are scored by
how far their weights moved or by their likelihood. The auditor guesses "in" for the highest scores
and "out" for the lowest, and bounds.py turns the count of correct guesses into a lower bound on
epsilon (their Theorem 5.2) at the run's delta, to set against the accountant's claim. The number
of guesses follows the claim (known before training): the fewest whose cap (the bound if every
guess is right) is at least claim + margin.

Only the training stage is audited there: no partition (one part), no noisy part means, no private
item choice; ``rules: public`` configs get their rules from the base data. A target epsilon
calibrates the training noise alone, so the claim is the epsilon of exactly the run audited. The
expected batch size uses the public size n_base + m/2, not a released count.

Statistics releases (releases.py): a stage's own release run many times on two neighbours, scored
by projection on the canary's direction, bounded by a threshold test (bounds.py).

``noise_scale`` (``--noise-scale F``) is a test switch: every noise of the audited run is drawn
multiplied by F (``noise_scale.scaled_noise``) while the claim stays the plan's; such a run's report
says NOT DIFFERENTIALLY PRIVATE, and the audit must refute it.

The audit's output is NOT a differentially private release: it tests the implementation, on
data the auditor may look at (public or synthetic data, or a custodian's own check).

One module per job: bounds.py (the bounds: pure numpy/scipy), plan.py (``AuditPlan``: what the
auditor chooses before training), canaries.py (the canaries and their scores), run.py
(``run_audit``: the DP-SGD experiment and its report), releases.py (``audit_release``) and cli.py
(the command line, also ``dpgm audit``).

    python -m dpgm.audit --config configs/digits.yaml --json audit.json
"""
