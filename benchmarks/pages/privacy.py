"""The privacy accounting of the paper's MNIST plan under each change of analysis."""

from __future__ import annotations

from pages.common import load, num, source, table


def accounting() -> str:
    """The paper's MNIST plan: epsilon under each change of analysis."""
    data = load("paper_epsilon.json")
    plan = data["plan"]
    rows = [(r["label"].replace("DESIGN.md 3.", "docs/paper.md, note "), f"{r['epsilon']:.4f}",
             num(r["order"])) for r in data["rows"]]
    rows.append(("privacy loss distribution (PLD) accountant, for comparison",
                 f"{data['pld_epsilon']:.4f}", ""))
    rows.append(("the paper's published value", f"{data['paper_epsilon']}", ""))
    return "\n\n".join([
        "## Privacy accounting: the paper's MNIST plan",
        (f"{plan['kmeans_iterations']} DP k-means iterations (noisy counts and sums, sigma_K = "
        f"{plan['sigma_k']:g}), then {plan['steps']:,} DP-SGD steps ({plan['epochs']:g} epochs, "
        f"q = {plan['sampling_rate']:g}) each releasing a DPNorm histogram (sigma_C = "
        f"{plan['sigma_c']:g}) and a gradient (sigma_G = {plan['sigma_g']:g}) from one Poisson "
        f"batch; delta = {plan['delta']:g}. One change of analysis per row "
        "(`benchmarks/paper_epsilon.py`); dpgm's analyses are the rows naming `bound='joint'` "
        "(the default) and `bound='holder'`."),
        table(("analysis", "epsilon", "RDP order"), rows),
        source("paper_epsilon.json")])
