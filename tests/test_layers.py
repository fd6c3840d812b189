"""The house's layers, read from the code's own imports (every import, a function's too): every import of the
project's names resolves; no module imports itself back through others; the trial side and the spaces never import
the search, and the foundation imports only itself; within `search/`, `running` imports `results`, never the
reverse, and running's rooms point one way (docs/design.md, "The layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("search", "trainables", "spaces")
# search.running's rooms, highest first: a room imports only rooms below it (and the session's lowest modules)
ROOMS = ["tracking", "proposals", "ends", "asha", "joining", "study", "writer"]
# the session's modules any room may use: the terminal's clock, search.json
SESSION_FLOOR = {"search.running.clock", "search.running.settings"}


def module_names() -> dict[str, Path]:
    names = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(parts)] = path
    return names


def imported_names(name: str, path: Path, known: dict) -> set[str]:
    """Every project module (or the name it was asked for, when none resolves) that `name` imports, anywhere in it
    (a function's lazy import too)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package up `level - 1` steps
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {imported for imported in found if imported.split(".")[0] in PACKAGES and imported != name}


@pytest.fixture(scope="module")
def imported() -> dict[str, set[str]]:
    known = module_names()
    return {name: imported_names(name, path, known) for name, path in known.items()}


@pytest.fixture(scope="module")
def graph(imported) -> dict[str, set[str]]:
    known = module_names()
    return {name: {target for target in targets if target in known} for name, targets in imported.items()}


def test_every_import_of_the_projects_names_resolves(imported):
    """A lazy import left pointing at a moved module fails only when its function runs: here it fails at once."""
    known = module_names()
    assert (
        sorted(f"{name} -> {target}" for name, targets in imported.items() for target in targets if target not in known)
        == []
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_no_module_imports_itself_back(graph):
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_trial_side_never_imports_the_search_and_results_never_import_running(graph):
    wrong = [
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if (name.startswith(("trainables", "spaces")) and target.startswith("search"))
        or (name.startswith("trainables.foundation") and not target.startswith("trainables.foundation"))
        or (name.startswith("search.results") and target.startswith("search.running"))
    ]
    assert wrong == []


def room_of(name: str) -> str | None:
    """The room of a module of search.running ("session": its own modules), "above" for the rest of `search`
    that running must not import (the command line, the API), None for what it may import."""
    parts = name.split(".")
    if parts[:2] == ["search", "running"]:
        return parts[2] if len(parts) > 2 and parts[2] in ROOMS else "session"
    if parts[0] == "search" and (len(parts) == 1 or parts[1] not in ("results", "samples")):
        return "above"
    return None


def test_running_rooms_point_one_way(graph):
    wrong = []
    for name, targets in graph.items():
        room = room_of(name)
        if room in (None, "session", "above"):
            continue
        for target in targets:
            other = room_of(target)
            if other is None or other == room or target in SESSION_FLOOR:
                continue
            if other in ("session", "above") or ROOMS.index(other) < ROOMS.index(room):
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_the_session_never_imports_what_stands_above_running(graph):
    wrong = [
        f"{name} -> {target}"
        for name, targets in graph.items()
        if room_of(name) not in (None, "above")
        for target in targets
        if room_of(target) == "above"
    ]
    assert wrong == []
