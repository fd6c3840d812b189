"""Starting a search of parsed keys, the one way `python -m search run` and `search.api.run` start one: the checks
before Ray, the experiment claimed and locked, the trials run; and what it returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainables.foundation.config import RunConfig
from trainables.foundation.errors import SearchInterrupted, UsageError
from trainables.foundation.space import Space
from trainables.foundation.storage import Experiment, claim, experiment_of


def command_words(name: str, args: list[str]) -> str:
    """The command as the lock names its holder (at most 80 characters)."""
    words = " ".join([f"python -m search {name}", *args])
    return words if len(words) <= 80 else words[:77] + "..."


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
    def repeats(self) -> dict | None:
        """For repeats of one configuration (`trials=N`, nothing left to search): the mean and standard deviation
        across them, {"count", METRIC: {"mean", "std", "n"}, "test_acc": {...}}; None for a search."""
        return self.summary.get("repeats")

    @property
    def trials(self) -> list[dict]:
        """Every trial: its id, status, epochs, configuration and metrics."""
        return self.summary["trials"]

    def export(
        self, out: str | Path | None = None, trial: str | None = None, bounds: list[str] = (), replace: bool = False
    ) -> dict:
        """Export the best trial (or `trial`, or the front's most accurate member within `bounds` such as
        ["max.params=200000"]) as `python -m search export` does; returns the export's model.json. Into the
        experiment, as the command's export goes: `export/` there, or `out` (a relative path) there; an absolute
        or `~` path as given. A notebook's working folder is wherever it was opened: no place for a model."""
        from search.bounds import split_bounds
        from search.results.export import export_experiment

        picked, rest = split_bounds(list(bounds))
        if rest:
            raise UsageError(f"{' '.join(rest)}: not a bound; give bounds as max.OBJECTIVE=N or min.OBJECTIVE=N")
        return export_experiment(self.experiment, self.export_folder(out), trial, picked, replace)

    def export_folder(self, out: str | Path | None) -> Path | None:
        """Where `export(out)` writes: None (the command's default, `export/` in the experiment), `out` inside the
        experiment's folder when relative, else `out` itself."""
        if not out:
            return None
        return self.experiment.local / Path(out).expanduser()  # an absolute path replaces the experiment's


def start(config: RunConfig, space: Space, words: list[str]) -> SearchResult:
    """The search of parsed keys: the checks before Ray, the experiment claimed and locked, the trials run."""
    from search.plan import checked
    from search.running.proposals.study_setup import enqueued_configurations

    checked(config, space)

    enqueued = enqueued_configurations(config, space)
    from search.running.tuner import run_search  # Ray is imported only once the input is known to be good
    from search.running.writer.lock import WriterLock

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
