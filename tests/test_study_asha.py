"""ASHA as the search runs it (search.running.asha.study_asha, our own on Tune's public FIFOScheduler), rebuilt from the
study when a search resumes, against Tune's own ASHAScheduler, live, as the oracle. Real Optuna trials, Tune's real
scheduler code; Ray is imported, never started."""

import random
from types import SimpleNamespace

import optuna
import pytest
from optuna.trial import TrialState, create_trial
from ray.tune.schedulers import ASHAScheduler

from search.running.asha.pareto_asha import ParetoASHA
from search.running.asha.rungs import asha_cutoff, milestones, rung_met
from search.running.asha.study_asha import StudyASHA
from trainables.foundation.objectives import Objective
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


def test_a_continued_trial_s_inherited_rung_is_decided_when_no_decision_was_written():
    """The budget stopped it at epoch 1 before Tune decided that rung (its epoch came from its files): continued,
    the rung is decided against every trial recorded there, and it is stopped."""
    continued = study_trial(3, "cont", {1: 0.2}, continues=1, inherited_epochs=1, rung_decisions={})
    scheduler = asha([*GOOD, continued])
    scheduler.on_trial_add(None, tune_trial("cont"))
    assert report(scheduler, "cont", 1, 0.2) == scheduler.STOP


def test_a_written_decision_stands_where_the_full_rung_would_now_decide_otherwise():
    """It went on from rung 1 when it arrived there first; better trials arrived after it. Its written decision
    stands (Tune decided against what the rung held then), and no stop is owed."""
    early = study_trial(0, "early", {1: 0.5}, rung_decisions={"1": "continue"})
    later = [study_trial(i, f"later{i}", {1: 0.9}, TrialState.PRUNED) for i in (1, 2, 3)]
    scheduler = asha([early, *later])
    assert not scheduler.owed_stops


# The rebuilt scheduler against Tune's own ASHA: random searches, trials side by side, a kill at any event.
class _Trial:
    def __init__(self, trial_id):
        self.trial_id, self.config = trial_id, {TRIAL_KEY: trial_id}


def on_a_split(raw, images=None, span=None):
    """The accuracy a validation split of `images` images reports for a trial whose `raw` value (0 to about 1) is
    drawn: a multiple of 1/images, the search's trials spread over `span` images of it (None: over the whole range;
    trials of one search often lie a few images apart). `raw` itself for None. Such values tie often, and a value
    equal to ASHA's cutoff goes on."""
    if images is None:
        return raw
    value = raw if span is None else 0.8 + raw * span / images
    return round(value * images) / images


def _random_search(rng, max_t, concurrency, count, live, split=()):
    """Events (trial id, epoch, value) as trials side by side would report them, and the `live` scheduler's
    decisions; `split`: the values as a validation split reports them (on_a_split's images and span)."""
    quality = {f"t{i}": rng.random() for i in range(count)}
    waiting, running, events = list(quality), {}, []
    while waiting or running:
        while waiting and len(running) < concurrency:
            trial_id = waiting.pop(0)
            running[trial_id] = 0
            live.on_trial_add(None, _Trial(trial_id))
        trial_id = rng.choice(sorted(running))
        epoch = running[trial_id] + 1
        value = on_a_split(quality[trial_id] * (1 - 0.5 / epoch) + 0.1 * rng.random(), *split)
        decision = live.on_trial_result(None, _Trial(trial_id), {"epoch": epoch, "val_acc": value})
        events.append((trial_id, epoch, value, decision))
        running[trial_id] = epoch
        if decision == "STOP" or epoch >= max_t:  # stopped, or trained its epochs (its trainable returns)
            live.on_trial_complete(None, _Trial(trial_id), {"epoch": epoch, "val_acc": value})
            del running[trial_id]
    return events


def _study_after_kill(events, kill_at, lost, max_t):
    """The study a kill right after event `kill_at` leaves: every epoch reported by then; each rung decision written
    before Tune acted on it, except when `lost` ("acted": none lost; "decided": the last event's written, not acted
    on; "files": the last events of the last event's trial, in a row, reached the study from its files only, with
    no decision written: several epochs, which may cross several rungs)."""
    history, ended = {}, set()
    rung_epochs = {}
    prefix = events[: kill_at + 1]
    from_files = 0
    while lost == "files" and from_files < len(prefix) and prefix[-1 - from_files][0] == prefix[-1][0]:
        from_files += 1
    for index, (trial_id, epoch, value, decision) in enumerate(prefix):
        history.setdefault(trial_id, {})[epoch] = value
        last = index == kill_at
        in_files_only = index >= len(prefix) - from_files
        if not in_files_only and epoch < max_t and _meets_rung(rung_epochs, trial_id, epoch, max_t):
            history.setdefault(f"{trial_id}/rungs", {})[str(epoch)] = "stop" if decision == "STOP" else "continue"
        elif in_files_only and epoch < max_t:
            _meets_rung(rung_epochs, trial_id, epoch, max_t)  # the rung is met; its decision never written
        if decision == "STOP" and not (last and lost in ("decided", "files")):
            ended.add(trial_id)
    trials = []
    for number, trial_id in enumerate(sorted({e[0] for e in events[: kill_at + 1]}, key=lambda t: int(t[1:]))):
        state = TrialState.PRUNED if trial_id in ended else TrialState.RUNNING
        trials.append(
            study_trial(number, trial_id, history[trial_id], state, rung_decisions=history.get(f"{trial_id}/rungs", {}))
        )
    return trials


def _meets_rung(met, trial_id, epoch, max_t):
    """Whether `epoch` meets a new rung for the trial, as Tune's ASHA tests it (epoch >= milestone)."""
    from search.running.asha.rungs import milestones, rung_met

    rungs = met.setdefault(trial_id, [(m, {}) for m in milestones(1, REDUCTION, max_t)])
    milestone = rung_met(rungs, trial_id, epoch)
    if milestone is None:
        return False
    dict(rungs)[milestone][trial_id] = True
    return True


REDUCTION = 2


def tunes_asha(max_t, history=None):
    if history is None:
        return ASHAScheduler(
            time_attr="epoch", metric="val_acc", mode="max", max_t=max_t, grace_period=1, reduction_factor=REDUCTION
        )
    rebuilt = StudyASHA(time_attr="epoch", max_t=max_t, grace_period=1, reduction_factor=REDUCTION, history=history)
    rebuilt.set_search_properties("val_acc", "max")
    return rebuilt


def pareto_asha_on_accuracy(max_t, history=()):
    objectives = [Objective("val_acc", "max")]
    return ParetoASHA(objectives=objectives, max_t=max_t, grace_period=1, reduction_factor=REDUCTION, history=history)


@pytest.mark.parametrize("scheduler", [tunes_asha, pareto_asha_on_accuracy])
@pytest.mark.parametrize("reduction", [2, 2.5, 3])
def test_the_rebuilt_rungs_decide_as_tunes_own_asha_did_live(reduction, scheduler):
    """100 random searches of 6 trials, 3 side by side, each killed at a random event in one of three ways: the
    rebuilt scheduler owes exactly the stops Tune decided and never carried out, lets every other running trial
    replay its epochs, and then decides every later event as Tune's own ASHA, which saw them all live, did (for the
    multi-objective ASHA: as one that saw them live)."""
    assert_rebuilt_decides_as_live(scheduler, reduction, random.Random(int(reduction * 10)), searches=100)


@pytest.mark.parametrize("scheduler", [tunes_asha, pareto_asha_on_accuracy])
@pytest.mark.parametrize("reduction, span", [(2, None), (2, 10), (2.5, 10), (3, 10), (2, 4), (3, 4)])
def test_the_rebuilt_rungs_decide_as_tunes_own_asha_did_live_when_values_tie(reduction, span, scheduler):
    """The same on accuracies a 200-image validation split reports (multiples of 1/200), the trials spread over the
    whole range or over `span` images, where most values tie: a value equal to the cutoff goes on, live and rebuilt,
    as in Tune's ASHA. Decisions are made on such a tie (one stopped there departs from Tune's ASHA)."""
    rng = random.Random(int(reduction * 10) + (span or 0))
    ties = assert_rebuilt_decides_as_live(scheduler, reduction, rng, searches=30, split=(200, span))
    assert ties >= (1 if span is None else 10), ties


def ties_at_cutoff(events, max_t, reduction):
    """How many of the events meet a rung with a value equal to the cutoff there (Tune's rule: the quantile of the
    values recorded there before)."""
    rungs, ties = [(m, {}) for m in milestones(1, reduction, max_t)], 0
    for trial_id, epoch, value, _ in events:
        milestone = rung_met(rungs, trial_id, epoch)
        if milestone is not None:
            ties += epoch < max_t and value == asha_cutoff(dict(rungs)[milestone].values(), reduction)
            dict(rungs)[milestone][trial_id] = value
    return ties


def assert_rebuilt_decides_as_live(scheduler, reduction, rng, searches, split=()) -> int:
    """Runs `searches` random searches live (`_random_search`), kills each at a random event, and holds the scheduler
    rebuilt from the study to the live one's decisions; returns how many rung decisions were made on a tie."""
    global REDUCTION
    REDUCTION = reduction
    max_t, ties = 8, 0
    for _ in range(searches):
        events = _random_search(rng, max_t, 3, 6, scheduler(max_t), split)
        ties += ties_at_cutoff(events, max_t, reduction)
        kill_at, lost = rng.randrange(len(events)), rng.choice(["acted", "decided", "files"])
        trials = _study_after_kill(events, kill_at, lost, max_t)
        rebuilt = scheduler(max_t, trials)
        trial_id, epoch, _, decision = events[kill_at]
        owed = {trial_id: epoch} if decision == "STOP" and lost != "acted" and epoch < max_t else {}
        assert rebuilt.owed_stops == owed, (events, kill_at, lost)
        for trial in trials:
            if trial.state == TrialState.RUNNING:  # run again: its recorded epochs replayed first
                rebuilt.on_trial_add(None, tune_trial(trial.user_attrs["trial_id"]))
                replayed = [
                    report(rebuilt, trial.user_attrs["trial_id"], e, v)
                    for e, v in sorted(trial.intermediate_values.items())
                ]
                stop_at = owed.get(trial.user_attrs["trial_id"])
                expected = [
                    "STOP" if stop_at is not None and e >= stop_at else "CONTINUE"
                    for e in sorted(trial.intermediate_values)
                ]
                at_rungs = [d for d, e in zip(replayed, sorted(trial.intermediate_values)) if e < max_t]
                assert at_rungs == expected[: len(at_rungs)]
        stopped = set(owed)
        for trial_id, epoch, value, decision in events[kill_at + 1 :]:
            if trial_id in stopped:
                continue
            if trial_id not in {t.user_attrs["trial_id"] for t in trials}:
                rebuilt.on_trial_add(None, tune_trial(trial_id))
            assert report(rebuilt, trial_id, epoch, value) == decision, (events, kill_at, lost, trial_id, epoch)
    return ties
