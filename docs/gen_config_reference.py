"""The configuration reference, generated from the typed config (``dpgm/config.py``).

A mkdocs hook (``hooks`` in mkdocs.yml): on the page that holds ``MARKER``, the marker is
replaced by one table per section of ``dpgm.config.Config`` (option, default, values, meaning),
so the reference is rebuilt from the code on every build and cannot drift from it; an option that
names a registered component (``partition.method``, ``model.kind``) lists the registered ones. Run alone,
it prints the generated Markdown:

    python docs/gen_config_reference.py
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal

import yaml

from dpgm.commands.main import component_options, components
from dpgm.config import Config, component_rows, default_of, option_doc

#: The line of docs/reference/config.md that the tables replace.
MARKER = "<!-- generated: configuration options -->"


def type_text(tp: Any) -> str:
    """A type hint in words: ``one of `a`, `b```, ``int or `null```, ``list of int``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        words = [type_text(a) for a in args if a is not type(None)]
        return " or ".join(words + ["`null`"] * (type(None) in args))
    if origin is list:
        return f"list of {type_text(args[0])}"
    return getattr(tp, "__name__", str(tp))


def yaml_text(value: Any) -> str:
    """``value`` as it is written in a config file (``null``, ``true``, ``[200]``)."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def cell(text: str) -> str:
    """Plain text (no Markdown, no HTML) that is safe inside one cell of a Markdown table."""
    text = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def breakable(key: str) -> str:
    """A dotted key as code that may wrap after its dots and underscores, never inside a word."""
    return "<code>" + key.replace(".", ".<wbr>").replace("_", "_<wbr>") + "</code>"


def options(cls: type, prefix: str = "", registered: dict[str, str] | None = None) -> list[tuple[str, str, str, str]]:
    """(dotted key, default, values, meaning) of every plain option of ``cls``, in source order;
    ``registered``: the components of each option that names one (``dpgm.commands.main.components``); a section
    of components' own options (``model.options``) is followed by each component's (``component_options``)."""
    hints, kinds, rows = typing.get_type_hints(cls), component_options(), []
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if not dataclasses.is_dataclass(hints[f.name]):
            rows.append((key, yaml_text(default_of(f)), type_text(hints[f.name]), option_doc(f, key, registered or {})))
            rows += [(name, yaml_text(default), type_text(tp), doc)
                     for name, default, tp, doc in component_rows(key, kinds.get(key, {}))]
    return rows


def sections() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """(title, description, options): the run's top-level options, then each section."""
    hints, registered = typing.get_type_hints(Config), components()
    out = [("run", "the run as a whole", options(Config))]
    for f in dataclasses.fields(Config):
        if dataclasses.is_dataclass(hints[f.name]):
            out.append((f.name, f.metadata.get("doc", ""), options(hints[f.name], f"{f.name}.", registered)))
    return out


def reference_markdown() -> str:
    """The tables that replace ``MARKER``."""
    out = []
    for title, about, rows in sections():
        out += [f"## {title}", "", cell(about[:1].upper() + about[1:]) + ".", "",
                "| option | default | values | meaning |", "|---|---|---|---|"]
        out += [f"| {breakable(key)} | `{default}` | {values} | {cell(doc)} |"
                for key, default, values, doc in rows]
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs hook: the marker line becomes the generated tables."""
    return markdown.replace(MARKER, reference_markdown()) if MARKER in markdown else markdown


if __name__ == "__main__":
    print(reference_markdown())
