"""ASHA as the search runs it (search.running.scheduler): Tune's own ASHAScheduler, rebuilt from the study when a
search resumes. Real Optuna trials, Tune's real scheduler code; Ray is imported, never started."""

from types import SimpleNamespace

import optuna
from optuna.trial import TrialState, create_trial

from search.running.scheduler import StudyASHA
from trainables.foundation.trial_files import TRIAL_KEY

DIST = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}


def study_trial(number, trial_id, values, state=TrialState.RUNNING, **attrs):
    trial = create_trial(
        state=state,
        params={"lr": 0.01},
        distributions=DIST,
        intermediate_values=values,
        user_attrs={"trial_id": trial_id, **attrs},
        value=list(values.values())[-1] if state == TrialState.COMPLETE else None,
    )
    trial.number = number
    return trial


def asha(history) -> StudyASHA:
    scheduler = StudyASHA(time_attr="epoch", max_t=4, grace_period=1, reduction_factor=2, history=history)
    scheduler.set_search_properties("val_acc", "max")
    return scheduler


def tune_trial(trial_id):
    return SimpleNamespace(trial_id=f"tune-{trial_id}", config={TRIAL_KEY: trial_id})


def report(scheduler, trial_id, epoch, value):
    return scheduler.on_trial_result(None, tune_trial(trial_id), {"epoch": epoch, "val_acc": value, "recovered": True})


GOOD = [study_trial(i, f"good{i}", {1: 0.9, 2: 0.92, 3: 0.93, 4: 0.94}, TrialState.COMPLETE) for i in range(3)]


def test_a_rung_decision_a_kill_took_with_it_is_made_on_resume():
    """The killed trial's epoch 1 (a rung) reached the study, ASHA's stop did not: run again, it is stopped when it
    reports that epoch, although its rung already holds its value (Tune's ASHA alone would let it pass)."""
    killed = study_trial(3, "killed", {1: 0.2})
    scheduler = asha([*GOOD, killed])
    scheduler.on_trial_add(None, tune_trial("killed"))
    assert report(scheduler, "killed", 1, 0.2) == scheduler.STOP

    plain = asha([*GOOD, killed])
    plain.owed_stops.clear()  # what the scheduler did before: the rung holds the value, so the trial passes
    plain.on_trial_add(None, tune_trial("killed"))
    assert report(plain, "killed", 1, 0.2) == plain.CONTINUE


def test_a_rung_the_trial_had_passed_stays_passed():
    """Its epoch 2 is in the study: it passed the rung at epoch 1 (whatever the rebuilt rungs would say now)."""
    passed = study_trial(3, "passed", {1: 0.2, 2: 0.3, 3: 0.35})
    scheduler = asha([*GOOD, passed])
    scheduler.on_trial_add(None, tune_trial("passed"))
    assert [report(scheduler, "passed", epoch, value) for epoch, value in ((1, 0.2), (2, 0.3), (3, 0.35))] == [
        scheduler.CONTINUE
    ] * 3


def test_a_good_trial_killed_at_its_rung_goes_on():
    good = study_trial(3, "kept", {1: 0.95})
    scheduler = asha([*GOOD, good])
    scheduler.on_trial_add(None, tune_trial("kept"))
    assert report(scheduler, "kept", 1, 0.95) == scheduler.CONTINUE and not scheduler.owed_stops


def test_a_continued_trial_keeps_the_rungs_it_passed_before_the_budget_stopped_it():
    continued = study_trial(3, "cont", {1: 0.2}, continues=1, inherited_epochs=1)
    scheduler = asha([*GOOD, continued])
    scheduler.on_trial_add(None, tune_trial("cont"))
    assert report(scheduler, "cont", 1, 0.2) == scheduler.CONTINUE
