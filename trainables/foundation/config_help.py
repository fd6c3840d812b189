"""`run --help`: every key with its default and the docstring under its field (litgpt's args.py convention)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from typing import Any

from trainables.foundation.config import RunConfig, section_key


def field_docs(cls) -> dict[str, str]:
    """The docstring under each field of a dataclass (the attribute-docstring convention)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                docs[node.target.id] = " ".join(str(following.value.value).split())
    return docs


def _default_text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "auto" if value is None else str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def help_rows() -> list[tuple[str, str, str]]:
    """(key, default, help) for every CLI key, in declaration order."""
    rows = []
    docs = field_docs(RunConfig)
    for f in dataclasses.fields(RunConfig):
        if not f.metadata.get("cli", True):
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            section_docs = field_docs(type(default))
            for sub in dataclasses.fields(default):
                if sub.metadata.get("cli", True):
                    key = section_key(f.name, sub)
                    rows.append((key, _default_text(getattr(default, sub.name)), section_docs[sub.name]))
        else:
            rows.append((f.name, _default_text(default), docs[f.name]))
    return rows


def format_help(rows: list[tuple[str, str, str]]) -> str:
    width = max(len(f"{k}={d}") for k, d, _ in rows) + 2
    return "\n".join(f"  {f'{k}={d}':<{width}}{h}" for k, d, h in rows)
