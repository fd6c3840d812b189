"""The search from Python, for notebooks and scripts: the same keys, checks and search as `python -m search run`
(README.md shows it). A key is a keyword argument (`lr=0.01` pins a hyperparameter); a section's keys go as a dict
(`data={"root": "..."}`) or dotted (`**{"data.root": "..."}`). Bad input raises `UsageError` before Ray starts.
The local Ray instance the first search starts stays up for the next ones of the same process (Ray stops it when
Python exits; `shutdown()` stops it sooner)."""

from __future__ import annotations

import sys
from pathlib import Path

from search.commands import parse_run
from search.running.joining.kept_ray import keep_ray_up, stop_kept_ray
from search.start import SearchResult, start
from trainables.foundation.errors import UsageError
from trainables.foundation.space import Space, builtin_space_names, load_space

__all__ = ["SearchResult", "UsageError", "run", "shutdown", "start"]


def run(space: str | Space, dry_run: bool = False, **keys) -> SearchResult | None:
    """Run a search of `space` (a name, a file, a module path or a `Space` object defined as a module's SPACE) with
    the CLI's keys; returns its result (`dry_run=True`: prints the plan, runs nothing and returns None)."""
    from search.running.clock import start_clock

    start_clock()  # the terminal's clock counts from this call, not from the Python process's start
    words = words_of(space, keys)
    config, loaded = parse_run(words)
    if dry_run:
        from search.plan import dry_run as print_plan

        print_plan(config, loaded)
        return None
    keep_ray_up()  # a script's next search starts its trials at once, not after another Ray start
    return start(config, loaded, words)


def shutdown() -> bool:
    """Stop the Ray instance `run` started and kept for this process's next search (Ray also stops it when Python
    exits); False when there was none. A Ray the caller started with its own `ray.init` is left alone."""
    return stop_kept_ray()


def words_of(space: str | Space, keys: dict) -> list[str]:
    """The CLI's words for `run`: `space=...` and one `key=value` per key (dicts give dotted keys)."""
    words = [f"space={space_reference(space)}"]
    for key, value in keys.items():
        if isinstance(value, dict):
            words += [f"{key}.{sub}={text_of(item)}" for sub, item in value.items()]
        else:
            words.append(f"{key}={text_of(value)}")
    return words


def text_of(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def space_reference(space: str | Space) -> str:
    """What `space=` names: the text given, or for a Space object the built-in space or module file defining it as
    its SPACE (the trials, in other processes, import it from there)."""
    if not isinstance(space, Space):
        return str(space)
    if space.name in builtin_space_names() and load_space(space.name) == space:
        return space.name
    for module in list(sys.modules.values()):
        if getattr(module, "SPACE", None) is space and getattr(module, "__file__", None):
            return str(Path(module.__file__).resolve())
    raise UsageError(
        f"space {space.name}: a Space object must be a module's SPACE (in a .py file), so that the trials can import "
        "it; define it in a file and give it, or its path"
    )
