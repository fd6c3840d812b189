"""What TPE reads of a large study (search.running.proposals.window): up to 250 trials every one, and TPE proposes
exactly what Optuna's proposes; past them the 250 most recent and the older best, with TPE's good group exactly the
one the whole study gives, whatever order the trials end in. Pure logic: milliseconds, no Ray."""

from __future__ import annotations

import random

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.samplers import TPESampler
from optuna.samplers._tpe.sampler import _split_trials, default_gamma
from optuna.trial import TrialState, create_trial

from search.running.proposals.sampler import make_sampler
from search.running.proposals.window import GOOD, RECENT, RecentAndBest

SPACE = {"x": FloatDistribution(0, 1), "y": FloatDistribution(1e-3, 1, log=True)}
STATES = (TrialState.COMPLETE, TrialState.PRUNED)


def _finished(rng: random.Random, number: int, complete_every: int) -> optuna.trial.FrozenTrial:
    """A finished trial: one in `complete_every` complete, the others stopped at epoch 1 or 2; values on a coarse grid
    (ties)."""
    params = {"x": rng.random(), "y": 10 ** rng.uniform(-3, 0)}
    value = rng.randrange(20) / 20
    if number % complete_every == 0:
        curve = {1: value - 0.1, 2: value - 0.05, 3: value}
        return create_trial(params=params, distributions=SPACE, value=value, intermediate_values=curve)
    curve = {epoch: value - 0.1 * (3 - epoch) for epoch in range(1, 1 + rng.choice((1, 2)))}
    return create_trial(
        state=TrialState.PRUNED, params=params, distributions=SPACE, value=value, intermediate_values=curve
    )


def _running(number: int) -> optuna.trial.FrozenTrial:
    running = create_trial(state=TrialState.RUNNING, params={"x": 0.5, "y": 0.1}, distributions=SPACE)
    running.number = number
    return running


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
@pytest.mark.parametrize("complete_every", [5, 60])  # 60: fewer than 25 complete, stopped trials fill the good group
def test_past_250_trials_tpe_reads_the_recent_and_the_best_and_its_good_group_is_the_whole_studys(
    direction, complete_every
):
    rng = random.Random(f"{direction}{complete_every}")
    study = optuna.create_study(direction=direction)
    window = RecentAndBest()
    trials, late = [], []
    for size in (60, 60, 60, 60, 20, 20, 20, 60, 60, 60, 60, 60, 60):  # 260 listed, 244 of them finished, on the way
        # each batch: `size` trials start; 16 trials still run (Optuna's constant liar lists them), some ending only
        # in a later batch, far older then than the newest
        fresh = []
        for _ in range(size):
            fresh.append(_finished(rng, len(trials), complete_every))
            fresh[-1].number = len(trials)
            trials.append(fresh[-1])
        late = [t for t in late if rng.random() < 0.5]
        late += rng.sample(fresh, 16 - len(late))
        listed = [_running(t.number) if t in late else t for t in trials]
        read = window(listed, study.directions)
        finished = [t for t in listed if t.state != TrialState.RUNNING]
        if len(finished) <= RECENT:
            assert read is listed
            continue
        assert [t.number for t in read] == sorted({t.number for t in read})  # in number order, each once
        kept = [t for t in read if t.state != TrialState.RUNNING]
        assert RECENT <= len(kept) <= RECENT + 2 * GOOD and kept[-RECENT:] == finished[-RECENT:]
        assert {t.number for t in listed if t.state == TrialState.RUNNING} <= {t.number for t in read}
        below_all, _ = _split_trials(study, listed, default_gamma(len(finished)))  # as TPE's `_sample` splits
        below_read, _ = _split_trials(study, read, default_gamma(len(kept)))
        assert [t.number for t in below_read] == [t.number for t in below_all] and len(below_all) == GOOD


@pytest.mark.parametrize("liar", [False, True])
def test_the_window_over_every_trial_reads_what_it_reads_over_those_tpe_asks_for(liar):
    """The storage lists every trial (failed and waiting ones among them) and the window picks TPE's states itself:
    what it reads is what it reads over the trials already filtered, at every size."""
    rng = random.Random(liar)
    states = (*STATES, TrialState.RUNNING) if liar else STATES
    over_all, over_asked, trials = RecentAndBest(), RecentAndBest(), []
    for size in (100, 100, 100, 50, 50, 200):
        for _ in range(size):
            kind = rng.random()
            if kind < 0.05:
                trial = create_trial(state=TrialState.FAIL, params={"x": 0.5, "y": 0.1}, distributions=SPACE)
            elif kind < 0.08:
                trial = create_trial(state=TrialState.WAITING, params={"x": 0.5, "y": 0.1}, distributions=SPACE)
            elif kind < 0.12:
                trial = _running(len(trials))
            else:
                trial = _finished(rng, len(trials), 5)
            trial.number = len(trials)
            trials.append(trial)
        asked = [t for t in trials if t.state in states]
        read = [t.number for t in over_all(trials, [optuna.study.StudyDirection.MAXIMIZE], states)]
        assert read == [t.number for t in over_asked(asked, [optuna.study.StudyDirection.MAXIMIZE])]
    assert len(read) < len(asked), "past the window"


def test_up_to_250_trials_the_search_proposes_exactly_what_optunas_tpe_proposes():
    ours = optuna.create_study(direction="maximize", sampler=make_sampler("tpe", 3, 5))
    optunas = optuna.create_study(direction="maximize", sampler=TPESampler(seed=3, n_startup_trials=5))
    rng = random.Random(0)
    for _ in range(40):
        asked = [ours.ask(SPACE), optunas.ask(SPACE)]
        assert asked[0].params == asked[1].params
        value, stopped = rng.random(), rng.random() < 0.6
        for study, trial in zip((ours, optunas), asked):
            trial.report(value, 1)
            study.tell(trial, None if stopped else value, state=STATES[stopped])


def test_a_proposal_in_a_large_study_models_a_bounded_window():
    sampler = make_sampler("tpe", 0, 5)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    rng = random.Random(1)
    study.add_trials([_finished(rng, number, 5) for number in range(700)])
    read, window = [], sampler.window

    def counted(trials, directions, states):
        read.append(len(window(trials, directions, states)))
        return window(trials, directions, states)

    sampler.window = counted
    study.ask(SPACE)
    assert len(read) == 1 and RECENT < read[0] <= RECENT + 2 * GOOD  # of 700
