"""The live schedulers write each rung decision into the study as they make it, and a trial ASHA stopped holds the
value of the epoch that stands for it. Real Optuna studies written by `StudyRecord`, trials ended by the decider
(`TrialEnds`); `StudyASHA` runs side by side with Tune's own `ASHAScheduler`, the oracle, event by event;
`ParetoASHA` on two objectives. Ray is imported, never started."""

import random
from types import SimpleNamespace

import pytest
from optuna.distributions import FloatDistribution
from optuna.samplers import RandomSampler
from optuna.trial import TrialState
from ray.tune.schedulers import ASHAScheduler

from search.running.asha.pareto_asha import ParetoASHA, rung_epochs
from search.running.asha.study_asha import StudyASHA
from search.running.ends.callbacks import TrialEnds
from search.running.ends.decider import Decider
from search.running.study.queries import epoch_values, other_objectives_by_epoch, rung_decisions, trial_id_of
from search.running.study.record import StudyRecord
from tests.test_study_asha import on_a_split, ties_at_cutoff
from trainables.foundation.objectives import Objective
from trainables.foundation.trial_files import TRIAL_KEY

SPACE = {"lr": FloatDistribution(1e-3, 1.0, log=True)}
ACC, PARAMS = Objective("val_acc", "max"), Objective("params", "min")
MAX_T = 8
NO_ANNEALING = {"lr_schedule": "none"}  # the epoch that stands for a trial is its best (search.results.score)


def study(objectives, constants=NO_ANNEALING, epochs=MAX_T) -> StudyRecord:
    return StudyRecord.in_memory(
        dict(SPACE), "val_acc", "max", RandomSampler(seed=0), epochs, constants=constants, objectives=objectives
    )


def tune_trial(trial_id, last=None):
    return SimpleNamespace(
        trial_id=f"tune-{trial_id}",
        config={TRIAL_KEY: trial_id},
        last_result=last or {},
        path="/nowhere",
        error_file=None,
        status="RUNNING",
        metric_analysis={},
    )


def live_search(rng, folder, record, scheduler, oracle=None, trials=8, side_by_side=3, events=None, split=(), log=None):
    """Trials side by side report their epochs as Tune hands them over: the scheduler decides (Tune's own ASHA,
    `oracle`, decides the same), the epoch reaches the study (as `StudySearcher` reports it), and a trial stopped or
    done ends through the decider. `events`: stop after so many reported epochs (None: run every trial to its end);
    `split`: the values as a validation split reports them (on_a_split); `log`: a list given each event (trial id,
    epoch, value, decision). Returns each trial's decisions by epoch."""
    ends = TrialEnds(Decider(record, str(folder)), MAX_T, scheduler.stopped_by_me)
    schedulers = [s for s in (scheduler, oracle) if s is not None]
    quality = {f"t{i}": rng.random() for i in range(trials)}
    cost = {trial_id: rng.randrange(1000, 9000) for trial_id in quality}
    waiting, running, decided = list(quality), {}, {}
    while (waiting or running) and events != 0:
        events = None if events is None else events - 1
        while waiting and len(running) < side_by_side:
            trial_id = waiting.pop(0)
            record.create(trial_id)
            running[trial_id] = 0
            for s in schedulers:
                s.on_trial_add(None, tune_trial(trial_id))
        trial_id = rng.choice(sorted(running))
        epoch = running[trial_id] = running[trial_id] + 1
        value = on_a_split(quality[trial_id] * (1 - 0.5 / epoch) + 0.2 * rng.random(), *split)  # often not the best
        result = {"epoch": epoch, "val_acc": value, "params": cost[trial_id]}
        decision = scheduler.on_trial_result(None, tune_trial(trial_id), result)
        if oracle is not None:
            assert decision == oracle.on_trial_result(None, tune_trial(trial_id), result), (trial_id, epoch)
        decided.setdefault(trial_id, {})[epoch] = decision
        if log is not None:
            log.append((trial_id, epoch, value, decision))
        record.report(trial_id, epoch, value, record.other_objectives_in(result))
        if decision == "STOP" or epoch >= MAX_T:
            for s in schedulers:
                s.on_trial_complete(None, tune_trial(trial_id), result)
            ends.on_trial_complete(0, [], tune_trial(trial_id, result))
            del running[trial_id]
    return decided


def assert_the_study_holds_every_decision(record, decided, reduction):
    """Each rung a trial met (the first epoch at or past each milestone below max_t), with the decision Tune acted
    on there, and nothing else."""
    at_rungs = rung_epochs(1, reduction, MAX_T)
    for trial_id, decisions in decided.items():
        expected = {epoch: decision.lower() for epoch, decision in decisions.items() if epoch in at_rungs}
        assert expected and rung_decisions(record.frozen(trial_id)) == expected, trial_id


def stopped_trials(record):
    pruned = [t for t in record.proposed() if t.state == TrialState.PRUNED]
    assert pruned and all(t.user_attrs["status"] == "stopped_early" for t in pruned)
    return pruned


@pytest.mark.parametrize(
    "reduction, split", [(2, ()), (2.5, ()), (3, ()), (2, (200, None)), (2, (200, 10)), (2.5, (200, 10)), (3, (200, 4))]
)
def test_live_study_asha_writes_tunes_decisions_and_a_stopped_trial_holds_its_standing_value(
    tmp_path, reduction, split
):
    """Side by side with Tune's ASHA, event by event, on raw values and on accuracies a 200-image validation split
    reports (on_a_split: the trials over the whole range, or within 10 or 4 images, where most values tie: a value
    equal to the cutoff goes on, as in Tune's ASHA)."""
    rng = random.Random(int(reduction * 10) + len(split))
    last_was_not_best, log = 0, []
    for search in range(5):
        record = study([ACC])
        scheduler = StudyASHA(time_attr="epoch", max_t=MAX_T, grace_period=1, reduction_factor=reduction, record=record)
        scheduler.set_search_properties("val_acc", "max")
        oracle = ASHAScheduler(
            time_attr="epoch", metric="val_acc", mode="max", max_t=MAX_T, grace_period=1, reduction_factor=reduction
        )
        decided = live_search(rng, tmp_path / str(search), record, scheduler, oracle, split=split, log=log)
        assert_the_study_holds_every_decision(record, decided, reduction)
        for trial in stopped_trials(record):
            epochs = epoch_values(trial)
            assert trial.values == [max(epochs.values())], trial_id_of(trial)  # not its last epoch's
            last_was_not_best += epochs[max(epochs)] != max(epochs.values())
        for trial in record.proposed():
            assert trial.values == [max(epoch_values(trial).values())]  # a completed one too, through Study.tell
    assert last_was_not_best  # the test tells the standing epoch from the last
    if split and split[1] is not None:  # decisions made on a tie at the cutoff: one stopped there departs from Tune's
        assert ties_at_cutoff(log, MAX_T, reduction) >= 1


@pytest.mark.parametrize("reduction", [2, 3])
def test_live_pareto_asha_writes_its_decisions_and_a_stopped_trial_holds_its_standing_values(tmp_path, reduction):
    rng = random.Random(int(reduction * 10))
    for search in range(5):
        record = study([ACC, PARAMS])
        scheduler = ParetoASHA(
            objectives=[ACC, PARAMS], max_t=MAX_T, grace_period=1, reduction_factor=reduction, record=record
        )
        decided = live_search(rng, tmp_path / str(search), record, scheduler)
        assert_the_study_holds_every_decision(record, decided, reduction)
        for trial in stopped_trials(record):
            epochs = epoch_values(trial)
            best = max(epochs, key=epochs.get)
            assert trial.values is None  # Optuna holds one value per objective, or none
            assert trial.user_attrs["objectives"] == {"val_acc": epochs[best], **other_objectives_by_epoch(trial)[best]}


def test_a_scheduler_rebuilt_from_what_the_live_one_wrote_holds_its_rungs_and_owes_nothing(tmp_path):
    """Cut short anywhere, a live search that lost no decision leaves a study from which both schedulers are rebuilt
    with the live one's rungs (those below max_t, where decisions are made), owing no stop (a rung a running trial
    met without a decision written would be decided again against the full rung)."""
    rng, running = random.Random(7), 0
    for cut in range(20):
        for objectives in ([ACC], [ACC, PARAMS]):
            record = study(objectives)
            settings = {"max_t": MAX_T, "grace_period": 1, "reduction_factor": 2}
            live = ParetoASHA(objectives=objectives, **settings, record=record)
            if len(objectives) == 1:
                live = StudyASHA(time_attr="epoch", **settings, record=record)
                live.set_search_properties("val_acc", "max")
            live_search(rng, tmp_path / f"{cut}-{len(objectives)}", record, live, events=rng.randrange(3, 25))
            running += any(t.state == TrialState.RUNNING for t in record.proposed())
            if len(objectives) == 1:
                rebuilt = StudyASHA(time_attr="epoch", **settings, history=record.proposed())
                rebuilt.set_search_properties("val_acc", "max")
            else:
                rebuilt = ParetoASHA(objectives=objectives, **settings, history=record.proposed())
            decided_at = [(milestone, points) for milestone, points in live.rungs if milestone < MAX_T]
            assert rebuilt.rungs[-len(decided_at) :] == decided_at and rebuilt.owed_stops == {}, cut
    assert running >= 30  # most cuts leave trials running, whose rungs the rebuild decides


@pytest.mark.parametrize("lr_schedule, value", [("none", 0.8), ("cosine", 0.5)])
def test_a_trial_asha_stopped_is_pruned_with_its_standing_epochs_value(tmp_path, lr_schedule, value):
    """Stopped at its rung (epoch 2) after a better epoch 1: the study's value is epoch 1's (its best), or, under a
    schedule that anneals, epoch 2's (its last), as the summary ranks it."""
    record = study([ACC], {"lr_schedule": lr_schedule}, epochs=4)
    scheduler = StudyASHA(time_attr="epoch", max_t=4, grace_period=2, reduction_factor=2, record=record)
    scheduler.set_search_properties("val_acc", "max")
    ends = TrialEnds(Decider(record, str(tmp_path)), 4, scheduler.stopped_by_me)
    for trial_id, values in {"a": [0.9, 0.92], "b": [0.9, 0.93], "t": [0.8, 0.5]}.items():
        record.create(trial_id)
        for epoch, metric in enumerate(values, 1):
            result = {"epoch": epoch, "val_acc": metric}
            decision = scheduler.on_trial_result(None, tune_trial(trial_id), result)
            record.report(trial_id, epoch, metric)
    assert decision == "STOP" and rung_decisions(record.frozen("t")) == {2: "stop"}
    ends.on_trial_complete(0, [], tune_trial("t", result))
    stopped = record.frozen("t")
    assert (stopped.state, stopped.user_attrs["status"]) == (TrialState.PRUNED, "stopped_early")
    assert stopped.values == [value]
