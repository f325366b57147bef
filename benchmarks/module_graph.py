#!/usr/bin/env python
"""Print dpgm's import graph between its top-level parts, any cycle, and line counts per module.

    python benchmarks/module_graph.py [--root PATH] [--json out.json]

A "part" is a subpackage (dpgm/privacy, dpgm/training, ...) or a top-level module
(dpgm/release.py). ``__main__`` modules are command-line fronts and count as the part "main"
(dpgm/cli.py is their shared plumbing, the part "cli").
The same parsing serves tests/test_layers.py, which fails on a cycle or an upward import.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def part_of(module: str) -> str:
    """'dpgm.pipeline.run' -> 'pipeline'; 'dpgm.privacy.__main__' -> 'main'; 'dpgm' -> 'dpgm'."""
    bits = module.split(".")
    if bits[-1] == "__main__":
        return "main"
    return bits[1] if len(bits) > 1 else "dpgm"


def module_name(path: Path, package: Path) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every dpgm module named by an import in ``path`` (module-level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "dpgm":
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "dpgm")
    return found


def graph(package: Path) -> dict[str, set[str]]:
    """part -> parts it imports (self-imports dropped)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        src = part_of(module_name(path, package))
        edges[src]
        for target in imports(path):
            dst = part_of(target)
            if dst not in (src, "dpgm"):
                edges[src].add(dst)
    return dict(edges)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected parts (Tarjan) with more than one member: each is an import cycle."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def line_counts(package: Path) -> dict[str, int]:
    return {module_name(p, package): len(p.read_text().splitlines()) for p in sorted(package.rglob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to analyse (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the graph, cycles and line counts as JSON")
    args = parser.parse_args(argv)
    package = args.root / "dpgm"
    edges = graph(package)
    for src in sorted(edges):
        print(f"{src:12s} -> {', '.join(sorted(edges[src])) or '-'}")
    found = cycles(edges)
    print("cycles:", "; ".join(" <-> ".join(c) for c in found) or "none")
    counts = line_counts(package)
    print(f"{len(counts)} modules, {sum(counts.values())} lines; largest:",
          ", ".join(f"{m} {n}" for m, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]))
    if args.json:
        args.json.write_text(json.dumps({"edges": {k: sorted(v) for k, v in edges.items()}, "cycles": found,
                                         "lines": counts}, indent=2))
    return 0


if __name__ == "__main__":
    from dpgm.cli import run_cli  # a bad input: one line, exit 2

    sys.exit(run_cli(main))
