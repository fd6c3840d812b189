"""A search's study as a session opens it (no Ray): configurations given first, checked before Ray; the random start
kept when a search grows, so its first new proposal is TPE's."""

import json

import optuna
import pytest

from search.running.ends.decider import Decider
from search.running.proposals.sampler import make_sampler
from search.running.proposals.study_setup import enqueued_configurations, open_search_study
from search.running.study.endings import EndFacts, Ending
from search.running.study.queries import STARTUP_ATTR
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.space import load_space
from trainables.foundation.storage import Experiment

SPACE = load_space("mlp_mnist")  # lr log 1e-4..1e-2, hidden 128/256/512, layers 1..3, dropout, batch_size


def configured(tmp_path, **keys) -> RunConfig:
    return RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e", **keys)


def test_enqueued_configurations_are_read_and_checked_against_the_space(tmp_path):
    given = tmp_path / "given.json"
    given.write_text(json.dumps([{"lr": 0.001, "hidden": 256}, {"lr": 0.005}]))
    assert enqueued_configurations(configured(tmp_path, enqueue=str(given)), SPACE) == [
        {"lr": 0.001, "hidden": 256},
        {"lr": 0.005},
    ]
    for content, culprit in [
        ([{"lr": 5.0}], "configuration 1: lr=5.0 is outside the space"),
        ([{"lr": 0.001}, {"depth": 3}], "configuration 2: depth is not searched"),
        ({"lr": 0.001}, "expected a JSON list of configurations"),
    ]:
        given.write_text(json.dumps(content))
        with pytest.raises(UsageError, match=culprit):
            enqueued_configurations(configured(tmp_path, enqueue=str(given)), SPACE)
    with pytest.raises(UsageError, match="enqueue=.*missing.json: cannot read it"):
        enqueued_configurations(configured(tmp_path, enqueue=str(tmp_path / "missing.json")), SPACE)
    with pytest.raises(UsageError, match="lr is not searched"):  # fixed with lr=...: no longer searched
        given.write_text(json.dumps([{"lr": 0.001}]))
        enqueued_configurations(configured(tmp_path, enqueue=str(given), fixed={"lr": 0.002}), SPACE)


def test_enqueued_configurations_run_first_and_count_in_the_random_start(tmp_path):
    config = configured(tmp_path, trials=8)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    record = open_search_study(config, SPACE, experiment, [{"lr": 0.001, "hidden": 512}, {"lr": 0.004}])
    assert record.study.user_attrs[STARTUP_ATTR] == 2 + 2
    first, second = record.create("a"), record.create("b")
    assert first.params["lr"] == 0.001 and record.coding.to_config(first.params)["hidden"] == 512
    assert second.params["lr"] == 0.004


def finish(record: StudyRecord, trial_id: str, value: float) -> None:
    record.create(trial_id)
    record.report(trial_id, 1, value)
    Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending("completed")))


def test_a_grown_search_keeps_its_random_start_so_its_first_new_proposal_is_tpes(tmp_path):
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    record = open_search_study(configured(tmp_path, trials=8, epochs=1), SPACE, experiment)
    for index in range(8):
        finish(record, f"t{index}", 0.5 + index / 100)
    grown_config = configured(tmp_path, trials=40, epochs=1)  # a quarter of 40 would be 10 random trials
    grown = open_search_study(grown_config, SPACE, experiment)
    assert grown.study.sampler.model._n_startup_trials == 2 and len(grown.proposed()) == 8
    proposal = grown.create("new").params
    random_start = (
        optuna.create_study(sampler=make_sampler("random", grown_config.seed + 8, 2))
        .ask(grown.coding.distributions)
        .params
    )
    assert proposal != random_start  # TPE, conditioned on the 8 trials, not the random draw at this seed


def test_a_budget_of_eight_full_trials_given_now_stands_when_resume_gives_trials(tmp_path):
    """`run epoch_budget=24` at 3 epochs writes the settings the former default wrote (budget 24, trials 24); its
    study, created since the default became a count, says so, and `resume trials=30` keeps the budget the user gave.
    A study created before (no such attribute) is grown as the former default was: the budget lifted."""
    from search.commands import resumed_config
    from search.running.growth import grow, study_so_far
    from search.running.study.queries import COUNT_DEFAULT_ATTR

    config = configured(tmp_path, trials=24, epochs=3, epoch_budget=24)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    record = open_search_study(config, SPACE, experiment)
    for index in range(13):
        finish(record, f"t{index}", 0.5)
    before, options = config.to_dict(), {"trials": "30"}
    so_far = study_so_far(experiment.local)
    assert so_far.under_count_default and so_far.trials == 13
    assert grow(before, resumed_config(before, options), options, so_far).epoch_budget == 24
    assert record.study.user_attrs[COUNT_DEFAULT_ATTR] == "trials=12"
    older = so_far._replace(under_count_default=False)  # a study created before the attribute existed
    assert grow(before, resumed_config(before, options), options, older).epoch_budget == 0


def test_a_study_that_already_holds_trials_is_not_marked_as_started_under_the_count_default(tmp_path):
    """A study created before the record existed, reopened: it holds trials, so nothing says it began under the
    count default, and `resume trials=N` may still lift a former default budget."""
    from search.running.proposals.study_setup import coding_for
    from search.running.study.queries import COUNT_DEFAULT_ATTR
    from trainables.foundation.objectives import objectives_of

    config = configured(tmp_path, trials=24, epochs=3, epoch_budget=24)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    coding, objectives = coding_for(config, SPACE), objectives_of(config, SPACE)
    older = StudyRecord.in_folder(experiment.local, coding, objectives, 3, SPACE.constants)
    finish(older, "t0", 0.5)
    assert COUNT_DEFAULT_ATTR not in open_search_study(config, SPACE, experiment).study.user_attrs


def test_a_new_search_takes_a_random_share_past_trial_36_and_one_begun_before_proposes_as_it_did(tmp_path):
    """A new one-objective TPE search records its share (past trial number 36, every proposal at random) in its
    study, and a resumed one reads the record back rather than working it out again; random proposals and several
    objectives take none; a study that already held trials without the record (begun before the rule) takes none."""
    from search.running.proposals.late_random import AFTER, EVERY, LateRandomShare
    from search.running.proposals.study_setup import coding_for
    from search.running.study.queries import LATE_RANDOM_ATTR
    from trainables.foundation.objectives import objectives_of

    def opened(name: str, **keys) -> StudyRecord:
        experiment = Experiment.at(str(tmp_path / name))
        experiment.local.mkdir(exist_ok=True)
        return open_search_study(
            RunConfig(space="mlp_mnist", storage=str(tmp_path), name=name, **keys), SPACE, experiment
        )

    record = opened("new", trials=40, epochs=1)
    assert record.study.user_attrs[LATE_RANDOM_ATTR] == {"every": EVERY, "after": AFTER} == {"every": 1, "after": 36}
    share = record.study.sampler
    assert isinstance(share, LateRandomShare) and [share.drawn_at_random(n) for n in (36, 37, 38, 39)] == [0, 1, 1, 1]
    record.study.set_user_attr(LATE_RANDOM_ATTR, {"every": 2, "after": 36})  # as a search begun under every 2nd
    resumed = opened("new", trials=80, epochs=1).study.sampler
    assert (resumed.every, resumed.after) == (2, 36)  # read back, not worked out again: trials 37, 39, ... drawn
    assert [resumed.drawn_at_random(n) for n in (36, 37, 38, 39)] == [0, 1, 0, 1]
    assert opened("random", sampler="random").study.user_attrs[LATE_RANDOM_ATTR]["every"] == 0
    assert opened("costs", objectives="val_acc,params").study.user_attrs[LATE_RANDOM_ATTR]["every"] == 0
    config = configured(tmp_path, trials=40, epochs=1)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    older = StudyRecord.in_folder(experiment.local, coding_for(config, SPACE), objectives_of(config, SPACE), 1, {})
    finish(older, "t0", 0.5)
    reopened = open_search_study(config, SPACE, experiment)
    assert reopened.study.user_attrs[LATE_RANDOM_ATTR]["every"] == 0
    assert not isinstance(reopened.study.sampler, LateRandomShare)
