"""A search's study opened for a session: its sampler, its random start, and the configurations given first.

No Ray: `run` reads and checks the configurations given with `enqueue=` before Ray starts.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

from optuna.distributions import IntDistribution

from search.results.summary import SUMMARY_FILE
from search.running.proposals.late_random import AFTER, LateRandomShare, late_random_every
from search.running.proposals.sampler import PROMOTING_GOOD_SHARE, make_sampler, startup_trials
from search.running.proposals.unrun import configuration_count, held_configurations, once_each
from search.running.study.coding import SpaceCoding, contains, ordered_choices
from search.running.study.queries import (
    COUNT_DEFAULT_ATTR,
    GOOD_SHARE_ATTR,
    LATE_RANDOM_ATTR,
    SEARCH_ID_ATTR,
    STARTUP_ATTR,
)
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import objectives_of
from trainables.foundation.space import Space
from trainables.foundation.storage import Experiment


def coding_for(config: RunConfig, space: Space) -> SpaceCoding:
    """The space's searched keys (those not fixed with key=value), held as the values that train; the search's TPE
    models a choice among numbers in order (search.running.proposals.sampler.OrderedTPESampler)."""
    space = space.for_objectives(len(objectives_of(config, space)))  # the cost knobs, with a second objective
    searched = {name: d for name, d in space.hyperparameters.items() if name not in config.fixed}
    return SpaceCoding(searched)


def open_search_study(
    config: RunConfig, space: Space, experiment: Experiment, enqueued: list[dict] = ()
) -> StudyRecord:
    """The experiment's study, created with `enqueued` waiting first when the search starts, when its random start is
    fixed (a grown search keeps it); the sampler's seed moves on by the trials proposed: a resume repeats no draw."""
    coding, objectives = coding_for(config, space), objectives_of(config, space)
    constants = config.constants(space)
    record = StudyRecord.in_folder(experiment.local, coding, objectives, config.epochs, constants)
    study = record.study
    trials = study.get_trials(deepcopy=False)  # what the study held when this run of the command opened it
    record.coding = coding = held_coding(config, space, trials)  # as its study began
    if SEARCH_ID_ATTR not in study.user_attrs:  # who the search is wherever it moves (its MLflow runs find it)
        study.set_user_attr(SEARCH_ID_ATTR, uuid.uuid4().hex)
    if not trials:  # a new search: started under today's default stop rule (growth.py)
        study.set_user_attr(COUNT_DEFAULT_ATTR, f"trials={RunConfig.trials}")
    if LATE_RANDOM_ATTR not in study.user_attrs:  # a search begun before the rule goes on proposing as it did
        every = late_random_every(config.sampler, len(objectives)) if not trials else 0
        study.set_user_attr(LATE_RANDOM_ATTR, {"every": every, "after": AFTER})
    promoting = config.may_promote()  # the promotion variant's TPE settings (search.running.proposals.sampler)
    new = not trials and STARTUP_ATTR not in study.user_attrs  # not one begun before, even if it ran no trial yet
    # the share before the start: a search stopped between the two records keeps its share when resumed
    if GOOD_SHARE_ATTR not in study.user_attrs:  # a search begun before the setting keeps Optuna's good group
        study.set_user_attr(GOOD_SHARE_ATTR, PROMOTING_GOOD_SHARE if promoting and new else 0)
    if STARTUP_ATTR not in study.user_attrs:
        for configuration in enqueued:
            study.enqueue_trial(coding.to_params(configuration))
        expected = min(expected_trials(config), search_trials(config, space))
        study.set_user_attr(STARTUP_ATTR, startup_trials(expected, promoting) + len(enqueued))
    seed, startup = config.seed + len(record.proposed()), study.user_attrs[STARTUP_ATTR]
    late = study.user_attrs[LATE_RANDOM_ATTR]  # as recorded: {"every", "after"}, no other key reaches the sampler
    every, after = int(late["every"]), int(late["after"])
    promotions = lambda: record.promotions  # noqa: E731 - the count as it grows
    tpe = {"good_share": float(study.user_attrs[GOOD_SHARE_ATTR])} if config.sampler == "tpe" else {}
    study.sampler = sampler_for(
        config.sampler, coding, seed, startup, every=every, after=after, promotions=promotions, **tpe
    )
    return record


def sampler_for(
    sampler: str, coding: SpaceCoding, seed: int, startup: int, every=0, after=AFTER, promotions=lambda: 0, **tpe
):
    """The search's sampler over a study held as `coding`: where the study holds values, its TPE models each choice
    among numbers by its position (a study holding positions orders them itself); over a space of finitely many
    configurations it proposes each once (search.running.proposals.unrun). `every`, `after`: past trial number `after`,
    one in `every` proposals drawn at random (search.running.proposals.late_random; every=0: none; `promotions`: the
    count of ASHA's promotions in the study); `tpe`: make_sampler's."""
    base = make_sampler(sampler, seed, startup, {} if coding.ordered else ordered_choices(coding.space), **tpe)
    base = LateRandomShare(base, seed, every, after, promotions) if every else base
    return once_each(base, coding.distributions, seed)  # a finite space: each configuration once


def held_coding(config: RunConfig, space: Space, trials: list) -> SpaceCoding:
    """coding_for, in the coding the study's `trials` hold: a search begun when studies held a choice among numbers
    as its position goes on in positions (Optuna refuses another kind of distribution for a name)."""
    coding = coding_for(config, space)
    held = held_as_positions(trials, coding)
    return coding if held is None or held == bool(coding.ordered) else SpaceCoding(coding.space, order_numbers=held)


def held_as_positions(trials: list, coding: SpaceCoding) -> bool | None:
    """Whether `trials` hold a choice among numbers as its position (an IntDistribution) or as its value (a
    CategoricalDistribution); None before any trial."""
    numeric = set(ordered_choices(coding.space))
    for trial in trials:
        for name, distribution in trial.distributions.items():
            if name in numeric:
                return isinstance(distribution, IntDistribution)
    return None


def finite_count(config: RunConfig, space: Space) -> int | None:
    """How many configurations the searched keys hold; None with a continuous range or nothing searched."""
    return configuration_count(coding_for(config, space).distributions)


def configurations_left(config: RunConfig, space: Space, proposed: list) -> int | None:
    """How many configurations of a finite space none of the `proposed` trials holds; None for a continuous one. A
    configuration the space no longer holds (its code changed since) takes none of its places."""
    count = finite_count(config, space)
    if count is None:
        return None
    coding = held_coding(config, space, proposed)
    distributions = list(coding.distributions.values())
    inside = [
        values
        for values in held_configurations(proposed, list(coding.distributions))
        if all(map(contains, distributions, values))
    ]
    return count - len(inside)


def search_trials(config: RunConfig, space: Space, proposed: list = ()) -> int:
    """The trials the search runs at most, counting the `proposed` ones (the study's): `trials`, or fewer where the
    space has fewer configurations left (each is proposed once: search.running.proposals.unrun)."""
    left = configurations_left(config, space, list(proposed))
    return config.trials if left is None else min(config.trials, len(proposed) + left)


def within_space(config: RunConfig, space: Space, proposed: list = ()) -> RunConfig:
    """`config` with its trials those the search runs at most (search_trials), for its shape and estimates."""
    trials = search_trials(config, space, proposed)
    return config if trials == config.trials else dataclasses.replace(config, trials=trials)


def expected_trials(config: RunConfig) -> int:
    """The trials a search expects to run: `trials`, or under an epoch budget the trials it buys at full length
    (ASHA's savings buy more; the sampler's random start is sized for the fewer)."""
    if config.epoch_budget:
        return min(config.trials, max(1, config.epoch_budget // config.epochs))
    return config.trials


def enqueued_configurations(config: RunConfig, space: Space) -> list[dict]:
    """The configurations `enqueue=` names, each checked against the space (refused in one line naming the key); a
    whole configuration (every searched key) given twice, once: it would train the same curve again."""
    if not config.enqueue:
        return []
    source = Path(config.enqueue).expanduser()
    coding = coding_for(config, space)
    if source.is_dir():  # the best `enqueue_top` trials of a finished search, by its summary's ranking
        try:
            summary = json.loads((source / SUMMARY_FILE).read_text())
        except (OSError, json.JSONDecodeError):
            raise UsageError(f"enqueue={source}: not a finished experiment (no readable {SUMMARY_FILE})") from None
        ranked = [trial for trial in summary.get("trials", []) if trial.get("status") != "failed"]
        configurations = [
            {name: value for name, value in trial["config"].items() if name in coding.space}
            for trial in ranked[: config.enqueue_top]
        ]
    else:
        try:
            configurations = json.loads(source.read_text())
        except OSError as exc:
            raise UsageError(
                f"enqueue={source}: cannot read it ({exc.strerror or exc}); give a JSON file or an experiment folder"
            ) from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"enqueue={source}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(configurations, list) or not all(isinstance(item, dict) for item in configurations):
            raise UsageError(f'enqueue={source}: expected a JSON list of configurations, e.g. [{{"lr": 0.05}}]')
    for number, configuration in enumerate(configurations, start=1):
        why = coding.refusal(configuration)
        if why:
            raise UsageError(f"enqueue={config.enqueue}: configuration {number}: {why}")
    whole = [one for one in configurations if one.keys() >= coding.space.keys()]  # every searched key given
    twice = [n for n, one in enumerate(whole) if one in whole[:n]]  # the same curve again: given once is enough
    return [one for one in configurations if not any(one is whole[n] for n in twice)]
