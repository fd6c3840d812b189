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
    from search.running.study.queries import GOOD_SHARE_ATTR  # nor, under asha=promote, the good group of the best 5%

    assert reopened.study.user_attrs[GOOD_SHARE_ATTR] == 0 and reopened.study.sampler._gamma is None


def test_a_new_promoting_search_records_a_random_start_of_4_and_tpes_good_group_as_its_best_5_percent(tmp_path):
    """Under asha=promote a new search records TPE's random start (at most 4 trials) and good group (its best 5%, at
    most 25; Optuna's default is a tenth) in its study, and its TPE proposes as Optuna's TPE given that good group
    does, with no deprecation warning; asha=stop keeps a quarter of the trials (2 to 10) and Optuna's good group, and
    so does a study begun before the setting, when it is resumed, though it stopped before its first trial."""
    import math
    import warnings

    from search.running.proposals.study_setup import coding_for
    from search.running.study.queries import GOOD_SHARE_ATTR
    from trainables.foundation.objectives import objectives_of

    def opened(name: str, **keys) -> StudyRecord:
        experiment = Experiment.at(str(tmp_path / name))
        experiment.local.mkdir(exist_ok=True)
        config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name=name, trials=40, epochs=3, **keys)
        return open_search_study(config, SPACE, experiment)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Optuna 5 warns of TPESampler(gamma=...) with a FutureWarning
        promoting = opened("promote")
    tpe, attrs = promoting.study.sampler.model, promoting.study.user_attrs
    assert (attrs[STARTUP_ATTR], attrs[GOOD_SHARE_ATTR], tpe._n_startup_trials) == (4, 0.05, 4)
    assert [tpe._gamma(n) for n in (1, 20, 21, 100, 499, 501, 1000)] == [1, 1, 2, 5, 25, 25, 25]

    def proposals(sampler) -> list[float]:
        study = optuna.create_study(sampler=sampler)
        study.optimize(lambda trial: (trial.suggest_float("x", -3, 3) - 1) ** 2, n_trials=30)
        return [trial.params["x"] for trial in study.trials]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        optunas = optuna.samplers.TPESampler(seed=5, n_startup_trials=4, gamma=lambda n: min(math.ceil(0.05 * n), 25))
    ours = proposals(make_sampler("tpe", 5, 4, good_share=0.05))
    assert ours == proposals(optunas) != proposals(make_sampler("tpe", 5, 4))  # as Optuna's own gamma, not its default
    lone = opened("lone", asha="stop", asha_for_one=True)  # one trial: stopped, promoting once `resume` grows it
    assert lone.study.user_attrs[GOOD_SHARE_ATTR] == 0.05
    stopping = opened("stop", asha="stop")
    assert (stopping.study.user_attrs[STARTUP_ATTR], stopping.study.user_attrs[GOOD_SHARE_ATTR]) == (10, 0)
    assert stopping.study.sampler.model._gamma is None  # Optuna's own, a tenth
    config = configured(tmp_path, trials=40, epochs=3)  # a study with trials begun before: test_..._proposes_as_it_did
    (tmp_path / "early").mkdir()  # begun before the setting and stopped before its first trial: its start recorded
    early = StudyRecord.in_folder(tmp_path / "early", coding_for(config, SPACE), objectives_of(config, SPACE), 3, {})
    early.study.set_user_attr(STARTUP_ATTR, 10)
    resumed = open_search_study(config, SPACE, Experiment.at(str(tmp_path / "early"))).study
    assert (resumed.user_attrs[STARTUP_ATTR], resumed.user_attrs[GOOD_SHARE_ATTR]) == (10, 0)
