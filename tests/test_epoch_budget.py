"""A budget in trial-epochs (`epoch_budget=`): how it is counted and what it decides, without Ray (Tune's Stopper
API and real Optuna studies; the end-to-end run is in test_multi_objective_e2e.py)."""

import dataclasses

import optuna
import pytest

from search.commands import parse_run, resumed_config
from search.running.ends.decider import Decider
from search.running.ends.reconcile import continue_stopped_by_budget
from search.running.proposals.study_setup import expected_trials
from search.running.stopping import SessionStop
from search.running.study.endings import EndFacts, Ending, ending_of
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError

SPACE = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}


def test_the_budget_counts_every_reported_epoch_but_a_replayed_one_and_stops_when_spent():
    stop = SessionStop(epoch_budget=5, epochs_spent=2)
    assert not stop.stop_all()
    stop("a", {"epoch": 1, "recovered": True})  # replayed from the files: the study counted it already
    stop("a", {"epoch": 2})
    stop("a", {"epoch": 2, "done": True})  # Tune hands a finished trial's last result over again
    stop("b", {"epoch": 1})
    assert not stop.stop_all() and stop.epochs_spent == 4
    stop("b", {"epoch": 2})
    assert stop.stop_all() and stop.out_of_budget and not stop.out_of_time and stop.budget == "epoch"


def test_a_trial_the_epoch_budget_cuts_says_so():
    assert ending_of(2, 3, budget="epoch") == Ending("stopped_by_budget", "stopped by the epoch budget after epoch 2")


def test_the_budget_lifts_the_trial_count_unless_it_is_given(tmp_path):
    config, _ = parse_run(["space=mlp_mnist", "epoch_budget=24", f"storage={tmp_path}"])
    assert config.trials == 24 and expected_trials(config) == 8  # a random start sized for 24 / 3 epochs
    config, _ = parse_run(["space=mlp_mnist", "epoch_budget=24", "trials=5", f"storage={tmp_path}"])
    assert config.trials == 5 and expected_trials(config) == 5


def test_resume_with_a_larger_budget_grows_the_trials_it_had_lifted(tmp_path):
    before, _ = parse_run(["space=mlp_mnist", "epoch_budget=12", f"storage={tmp_path}", "name=x"])
    grown = resumed_config(before.to_dict(), {"epoch_budget": "30"})
    assert grown.epoch_budget == 30 and grown.trials == 30
    capped, _ = parse_run(["space=mlp_mnist", "epoch_budget=12", "trials=4", f"storage={tmp_path}", "name=y"])
    assert resumed_config(capped.to_dict(), {"epoch_budget": "30"}).trials == 4


def test_the_epochs_spent_count_a_continued_trial_once():
    record = StudyRecord.in_memory(SPACE, "val_acc", "max", optuna.samplers.RandomSampler(seed=0), 3)
    for trial_id, epochs in (("a", 3), ("b", 1)):
        record.create(trial_id)
        for epoch in range(1, epochs + 1):
            record.report(trial_id, epoch, 0.5 + epoch / 10)
    decider = Decider.without_files(record)
    decider.end("a", EndFacts(0, written=Ending("completed")))
    decider.end("b", EndFacts(0, written=Ending("stopped_by_budget", "stopped by the epoch budget after epoch 1")))
    assert record.epochs_spent() == 4
    continue_stopped_by_budget(record)
    record.report("b", 2, 0.8)
    assert record.epochs_spent() == 5


@pytest.mark.parametrize("bad", ["-1", "x"])
def test_a_bad_budget_is_refused_naming_the_key(tmp_path, bad):
    from trainables.foundation.errors import UsageError

    with pytest.raises(UsageError, match="epoch_budget="):
        parse_run(["space=mlp_mnist", f"epoch_budget={bad}", f"storage={tmp_path}"])


def test_given_neither_trials_nor_a_budget_a_search_runs_twelve_trials_and_no_budget(tmp_path):
    config, _ = parse_run(["space=mlp_mnist", f"storage={tmp_path}"])
    assert (config.epoch_budget, config.trials) == (0, 12)  # a trial count, as Tune's num_samples and Optuna's n_trials
    assert expected_trials(config) == 12
    longer, _ = parse_run(["space=mlp_mnist", "epochs=5", f"storage={tmp_path}"])
    assert (longer.epoch_budget, longer.trials) == (0, 12)  # the count does not follow the epochs
    counted, _ = parse_run(["space=mlp_mnist", "trials=8", f"storage={tmp_path}"])
    assert (counted.epoch_budget, counted.trials) == (0, 8)
    unlimited, _ = parse_run(["space=mlp_mnist", "epoch_budget=0", f"storage={tmp_path}"])
    assert (unlimited.epoch_budget, unlimited.trials) == (0, 12)
    budget, _ = parse_run(["space=mlp_mnist", "epoch_budget=30", f"storage={tmp_path}"])
    assert (budget.epoch_budget, budget.trials) == (30, 30)  # a budget alone still lifts the trials


def test_the_first_line_says_the_budget_decides_the_trials():
    from search.running.driver_words import first_line_words

    class Finished:  # what the line reads of the study: how many trials finished before this run or resume
        def __init__(self, count):
            self.count = count

        def finished(self):
            return self.count

    budget = RunConfig(space="mlp_mnist", trials=24, epoch_budget=24)
    spent = "trials until 24 trial-epochs are spent"
    assert first_line_words(budget, 24, Finished(0)) == spent
    assert first_line_words(budget, 20, Finished(4)) == f"{spent} (4 done before)"
    capped = dataclasses.replace(budget, trials=9)  # a finite space of 9 configurations, each run once
    assert (
        first_line_words(capped, 9, Finished(0), 24, 9)
        == f"{spent}, at most 9 (the space holds 9 configurations, each run once)"
    )
    counted = RunConfig(space="mlp_mnist", trials=8)
    assert first_line_words(counted, 8, Finished(0)) == "8 trials"
    assert first_line_words(counted, 5, Finished(3)) == "5 of 8 trials (3 done before)"
    finite = dataclasses.replace(counted, trials=6)
    assert (
        first_line_words(finite, 6, Finished(0), 8, 6) == "6 trials (the space holds 6 configurations, each run once)"
    )
    assert first_line_words(finite, 2, Finished(4), 8, 6) == (
        "2 of 6 trials (4 done before; the space holds 6 configurations, each run once)"
    )


def test_resume_trials_grows_a_default_search_to_that_many_trials_in_all(tmp_path):
    """`resume runs/<name> trials=15` after a default search of 12 trials: the count grows to 15, no budget appears;
    fewer than the study holds is refused."""
    from search.running.growth import SoFar, grow

    before = parse_run(["space=mlp_mnist", "epochs=2", f"storage={tmp_path}", "name=d"])[0].to_dict()
    grown = grow(before, resumed_config(before, {"trials": "15"}), {"trials": "15"}, SoFar(12, 16, 0))
    assert (grown.trials, grown.epoch_budget) == (15, 0)
    with pytest.raises(UsageError, match="trials=11: the search already has 12 trials"):
        grow(before, resumed_config(before, {"trials": "11"}), {"trials": "11"}, SoFar(12, 16, 0))


def test_a_search_started_under_the_former_default_budget_resumes_with_trials_as_before():
    """Settings written under the former default (the epochs of 8 full trials: epoch_budget 24 at 3 epochs, trials
    lifted to 24): `resume trials=30` lifts that budget and grows to 30 trials in all, fewer than the study holds is
    refused with the count it holds (20, not the lifted 24); the budget a user gave beside trials= stands."""
    from search.running.growth import SoFar, grow

    before = RunConfig(space="mlp_mnist", trials=24, epochs=3, epoch_budget=24).to_dict()
    grown = grow(before, resumed_config(before, {"trials": "30"}), {"trials": "30"}, SoFar(20, 25, 0))
    assert (grown.trials, grown.epoch_budget) == (30, 0)
    with pytest.raises(UsageError, match="trials=19: the search already has 20 trials"):
        grow(before, resumed_config(before, {"trials": "19"}), {"trials": "19"}, SoFar(20, 25, 0))
    given = {"trials": "30", "epoch_budget": "40"}
    assert (grow(before, resumed_config(before, given), given, SoFar(20, 25, 0)).epoch_budget) == 40
    capped = RunConfig(space="mlp_mnist", trials=10, epochs=3, epoch_budget=24).to_dict()  # trials= and a budget
    with pytest.raises(UsageError, match="epoch budget of 24 trial-epochs is spent"):
        grow(capped, resumed_config(capped, {"trials": "30"}), {"trials": "30"}, SoFar(10, 25, 0))


def test_resume_with_a_budget_alone_lets_the_budget_decide_the_trials_of_a_counted_search(tmp_path):
    """A search of 12 trials (the default count) resumed with epoch_budget=60 alone: the trials follow from the
    budget, as they do on `run`; with trials= beside it, trials= caps."""
    before = parse_run(["space=mlp_mnist", f"storage={tmp_path}", "name=n"])[0].to_dict()
    assert (resumed_config(before, {"epoch_budget": "60"}).trials) == 60
    assert (resumed_config(before, {"epoch_budget": "60", "trials": "14"}).trials) == 14


def test_a_budget_the_user_gave_that_is_spent_is_named_before_any_trial_starts(tmp_path):
    from search.running.growth import SoFar, grow

    before = parse_run(["space=mlp_mnist", "epochs=2", "epoch_budget=10", f"storage={tmp_path}", "name=g"])[0]
    before = before.to_dict()
    with pytest.raises(UsageError, match="epoch budget of 10 trial-epochs is spent .* or epoch_budget=0 to lift it"):
        grow(before, resumed_config(before, {"trials": "24"}), {"trials": "24"}, SoFar(6, 10, 0))
    lifted = {"trials": "24", "epoch_budget": "0"}
    assert grow(before, resumed_config(before, lifted), lifted, SoFar(6, 10, 0)).trials == 24


def test_a_finished_search_that_resume_would_not_train_is_refused_naming_why(tmp_path):
    """resume epoch_budget=10 after 16 trial-epochs, or time_budget=60 with no trial a budget stopped: nothing would
    train, so one line says why and what grows it (exit 2), instead of exiting 0 having done nothing."""
    from search.running.growth import SoFar, refuse_idle

    before = parse_run(["space=mlp_mnist", "epochs=2", "epoch_budget=16", f"storage={tmp_path}", "name=f"])[0]
    smaller = {"epoch_budget": "10"}
    with pytest.raises(UsageError, match="epoch_budget=10: this finished search has spent 16 trial-epochs"):
        refuse_idle(resumed_config(before.to_dict(), smaller), smaller, SoFar(9, 16, 0))
    counted = parse_run(["space=mlp_mnist", "epochs=2", "trials=4", f"storage={tmp_path}", "name=c"])[0]
    timed = {"time_budget": "60"}
    with pytest.raises(UsageError, match="time_budget=60: this search already finished, with all of its 4 trials"):
        refuse_idle(resumed_config(counted.to_dict(), timed), timed, SoFar(4, 6, 0))
    refuse_idle(resumed_config(counted.to_dict(), timed), timed, SoFar(4, 6, 1))  # one to continue: it goes on


def test_the_settings_record_whether_trials_was_given_and_resume_keeps_the_cap_it_gave(tmp_path):
    """`run trials=12 epoch_budget=12`, then `resume epoch_budget=24`: trials= was given, so it still caps (12), though
    it equals the budget; `resume trials=30` of a search given trials=24 epoch_budget=24 at 3 epochs (the former
    default's figures) keeps its budget. Settings written before the record keep the guess (trials != budget)."""
    from search.running.growth import SoFar, grow

    given = parse_run(["space=mlp_mnist", "trials=12", "epoch_budget=12", f"storage={tmp_path}", "name=g"])[0]
    assert given.to_dict()["trials_given"] is True
    assert resumed_config(given.to_dict(), {"epoch_budget": "24"}).trials == 12
    lifted = parse_run(["space=mlp_mnist", "epoch_budget=12", f"storage={tmp_path}", "name=l"])[0].to_dict()
    assert lifted["trials_given"] is False and resumed_config(lifted, {"epoch_budget": "24"}).trials == 24
    old = {key: value for key, value in given.to_dict().items() if key != "trials_given"}  # written before the record
    assert resumed_config(old, {"epoch_budget": "24"}).trials == 24
    like_former = parse_run(["space=mlp_mnist", "trials=24", "epoch_budget=24", f"storage={tmp_path}", "name=f"])[0]
    before = like_former.to_dict()
    with pytest.raises(UsageError, match="epoch budget of 24 trial-epochs is spent"):
        grow(before, resumed_config(before, {"trials": "30"}), {"trials": "30"}, SoFar(20, 25, 0))
