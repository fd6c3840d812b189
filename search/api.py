"""The search from Python, for notebooks and scripts: the same keys, the same checks and the same search as
`python -m search run` (which goes through `start` below).

    import search.api

    result = search.api.run("mlp_mnist", trials=4, epochs=2, data={"limit": 512})
    result.best["metrics"]["val_acc"], result.best["test_acc"]
    result.export("my_model")

A key is a keyword argument (`trials=4`, `lr=0.01` pins a hyperparameter); a section's keys go as a dict
(`data={"root": "..."}`) or with their dotted name (`**{"data.root": "..."}`). Bad input raises `UsageError` with
the line the CLI prints, before Ray starts.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

from search.commands import command_words, parse_run
from search.running.cluster import is_ray_client
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import SearchInterrupted, UsageError
from trainables.foundation.space import Space, builtin_space_names, load_space
from trainables.foundation.storage import Experiment, claim, experiment_of


@dataclass
class SearchResult:
    """A finished search: its summary (summary.json) and where it is."""

    summary: dict
    experiment: Experiment

    @property
    def location(self) -> str:
        return self.experiment.location

    @property
    def best(self) -> dict:
        """The best trial: trial_id, config, metrics, epoch, checkpoint and test_acc."""
        return self.summary["best"]

    @property
    def front(self) -> list[dict]:
        """The Pareto front of a search of several objectives, most accurate first (empty with one objective)."""
        return self.summary.get("front", [])

    @property
    def trials(self) -> list[dict]:
        """Every trial: its id, status, epochs, configuration and metrics."""
        return self.summary["trials"]

    def export(
        self, out: str | Path | None = None, trial: str | None = None, bounds: list[str] = (), replace: bool = False
    ) -> dict:
        """Export the best trial (with several objectives: the front's most accurate member within `bounds`, e.g.
        ["max.params=200000"]) or `trial`, as `python -m search export` does (`replace=True`: its --replace);
        returns the export's model.json."""
        from search.bounds import split_bounds
        from search.results.export import export_experiment

        picked, rest = split_bounds(list(bounds))
        if rest:
            raise UsageError(f"{' '.join(rest)}: not a bound; give bounds as max.OBJECTIVE=N or min.OBJECTIVE=N")
        if picked and trial:
            raise UsageError("give trial=ID or bounds on the objectives, not both")
        return export_experiment(self.experiment, Path(out).expanduser() if out else None, trial, picked, replace)


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
    if is_ray_client(config.address):
        raise UsageError(f"address={config.address}: from Python, run the search on the cluster (address=auto)")
    return start(config, loaded, words)


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


def start(config: RunConfig, space: Space, words: list[str]) -> SearchResult:
    """The search of parsed keys: the checks before Ray, the experiment claimed and locked, the trials run."""
    from search.plan import warn_pins
    from search.running.preflight import preflight

    said = io.StringIO()
    with contextlib.redirect_stdout(said):  # what the checks say is said once they all passed: a refusal is one line
        preflight(config, space)
    print(said.getvalue(), end="", flush=True)
    warn_pins(config, space)  # a pin outside the searched range: one line, kept
    from search.running.study_setup import enqueued_configurations

    enqueued = enqueued_configurations(config, space)
    from search.running.tuner import run_search  # Ray is imported only once the input is known to be good
    from search.running.writer_lock import WriterLock

    experiment = experiment_of(config.storage, config.name)
    if not experiment.remote:
        claim(experiment, config.name)  # the last check before Ray: of two searches with one name, one runs
    try:
        with WriterLock(experiment, command_words("run", words)):
            if experiment.remote:
                claim(experiment, config.name)  # under the URI's lease, which decides between two drivers
            summary = run_search(config, space, experiment, enqueued)
    except KeyboardInterrupt:
        raise SearchInterrupted(experiment.location) from None
    return SearchResult(summary, experiment)
