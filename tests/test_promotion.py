"""ASHA's promotion variant in the product (`asha=promote`): the rule (search.running.asha.promotions), the
scheduler that pauses at a rung (StudyASHA with `promote`), a study that holds a promoted trial once, and the same
searches as the replays' `search|asha=promote` arm. Pure logic: no Ray (the end-to-end search: test_promotion_e2e)."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from search.running.asha.promotions import Promotions
from search.running.asha.study_asha import StudyASHA
from search.running.study.endings import EndFacts
from search.running.study.queries import CONTINUES_ATTR, rung_decisions
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError

SPACE = {"lr": FloatDistribution(1e-4, 1.0, log=True)}


def promoting(max_t: int = 9, grace: int = 1, history=(), record=None, reduction: float = 3) -> StudyASHA:
    scheduler = StudyASHA(
        time_attr="epoch",
        max_t=max_t,
        grace_period=grace,
        reduction_factor=reduction,
        history=history,
        record=record,
        promote=True,
    )
    scheduler.set_search_properties("val_acc", "max")
    return scheduler


def test_the_rule_resumes_the_best_paused_trial_in_the_top_third_of_its_rung_top_rung_first():
    rule = Promotions([9, 3, 1], 3, max_t=9)
    for trial_id, point in zip("abcdef", (0.5, 0.7, 0.9, 0.1, 0.2, 0.3)):
        rule.arrived(trial_id, 1, point)
        if trial_id != "a":  # a was promoted from rung 1 and runs
            rule.pause(trial_id, 1)
    for trial_id, point in (("a", 0.8), ("b", 0.6)):
        rule.arrived(trial_id, 3, point)
    assert rule.resume("b") == 1 and rule.resume("b") is None  # b went on from rung 1 and reached rung 3
    rule.pause("b", 3)
    assert rule.first() == "c"  # rung 3 holds two: no top third yet; rung 1's top two are c and b (gone on)
    assert rule.first(ready=lambda trial_id: trial_id != "c") is None  # c's pause not yet recorded: d is not top
    rule.arrived("g", 3, 0.9)
    rule.pause("g", 3)
    assert rule.first() == "g" and rule.waiting_ids() == set("bcdefg")  # three at rung 3: its best first
    rule.arrived("a", 1, 0.99)  # a point is recorded once at a rung
    assert rule.points[1][0][0] == -0.9
    ties = Promotions([3, 1], 3, max_t=3)
    for trial_id in "xyz":
        ties.arrived(trial_id, 1, 0.5)
        ties.pause(trial_id, 1)
    assert ties.first() == "x"  # among equal points, the earlier arrival without an order
    ordered = Promotions([3, 1], 3, max_t=3)
    for trial_id, order in (("y", 1), ("x", 0), ("z", 2)):
        ordered.arrived(trial_id, 1, 0.5, order)
        ordered.pause(trial_id, 1)
    assert ordered.first() == "x"  # with an order (the proposal's), the earlier proposal
    nan = Promotions([3, 1], 3, max_t=3)
    for trial_id, point in (("n", float("nan")), ("p", 0.1), ("q", 0.2)):
        nan.arrived(trial_id, 1, point)
        nan.pause(trial_id, 1)
    assert nan.first() == "q"  # a NaN point ranks last


def test_a_trial_pauses_at_a_rung_unless_it_is_the_one_a_free_place_would_resume():
    scheduler = promoting()
    decisions = [scheduler.decide(trial_id, 1, {"val_acc": v}) for trial_id, v in (("a", 0.5), ("b", 0.4))]
    assert decisions == ["STOP", "STOP"] and scheduler.stopped == {"a", "b"}  # fewer than 3 at the rung: none goes on
    assert scheduler.decide("c", 1, {"val_acc": 0.9}) == "CONTINUE"  # the rung's best of three: it goes on at once
    assert scheduler.decide("d", 1, {"val_acc": 0.3}) == "STOP" and scheduler.promotion() is None  # c went on
    assert scheduler.decide("e", 1, {"val_acc": 0.2}) == "STOP"
    assert scheduler.decide("f", 1, {"val_acc": 0.1}) == "STOP" and scheduler.promotion() == "a"  # six: top two
    assert scheduler.promoted("a") == 1 and "a" not in scheduler.stopped and scheduler.promotion() is None
    assert scheduler.decide("a", 2, {"val_acc": 0.6}) == "CONTINUE"  # between rungs
    assert scheduler.decide("a", 3, {"val_acc": 0.7}) == "STOP"  # alone at rung 3
    assert scheduler.decide("a", 9, {"val_acc": 0.7}) == "CONTINUE"  # max_t is an end, no rung


def record_with(trials: list[tuple[str, dict[int, float], bool]]) -> StudyRecord:
    """An in-memory study of trials (id, epochs, paused at their last epoch: else still running), in this order."""
    record = StudyRecord.in_memory(SPACE, "val_acc", "max", optuna.samplers.RandomSampler(seed=0), epochs=9)
    for trial_id, epochs, paused in trials:
        record.create(trial_id)
        for epoch, value in epochs.items():
            record.report(trial_id, epoch, value)
            if epoch in (1, 3):
                record.note_rung(trial_id, epoch, "stop" if paused and epoch == max(epochs) else "continue")
        if paused:
            record.write_end(trial_id, record.decide(trial_id, EndFacts(max(epochs), stopped_by_scheduler=True)))
    return record


def test_a_resumed_search_rebuilds_its_paused_trials_and_owes_no_stop_to_a_promoted_one():
    record = record_with([("a", {1: 0.5}, True), ("b", {1: 0.4}, True), ("c", {1: 0.9}, True)])
    scheduler = promoting(history=record.proposed(), record=record)
    assert scheduler.stopped == {"a", "b", "c"} and scheduler.promotion() == "c"
    rung = scheduler.promoted("c")
    continued = record.continue_trial(record.frozen("c"), promoted_at=rung)
    assert continued.state == TrialState.RUNNING and continued.user_attrs[CONTINUES_ATTR] == 2
    assert rung_decisions(continued) == {1: "promoted"} and [t.number for t in record.proposed()] == [0, 1, 3]
    for trial_id, point in (("d", 0.95), ("e", 0.96)):  # c falls out of rung 1's top third (one of five)
        record.create(trial_id)
        record.report(trial_id, 1, point)
        record.note_rung(trial_id, 1, "stop")
        record.write_end(trial_id, record.decide(trial_id, EndFacts(1, stopped_by_scheduler=True)))
    # A kill now: the next session's scheduler finds c running past its rung, promoted there (owed no stop, though
    # its point is no longer in the top third), and a, b, d, e waiting; rung 1's top third (e) waits to be resumed.
    again = promoting(history=record.proposed(), record=record)
    assert again.owed_stops == {} and again.stopped == set("abde") and again.promotion() == "e"


def test_a_decision_a_kill_lost_is_made_again_with_the_paused_trials_waiting():
    three = {1: 0.2, 2: 0.3}
    record = record_with([(t, {**three, 3: v}, True) for t, v in (("p", 0.9), ("q", 0.8), ("r", 0.7))])
    record.create("c")
    record.report("c", 1, 0.95)  # the best at rung 1; the kill took its decision there with it
    again = promoting(history=record.proposed(), record=record)
    assert again.owed_stops == {"c": 1}  # p waits at rung 3, the top rung first: c pauses, as it would have live
    assert again.promotion() == "p"  # the next free place resumes p


def test_equal_points_rank_by_proposal_live_and_after_a_resume():
    record = record_with([("a", {}, False), ("b", {}, False), ("c", {}, False)])  # proposed a, b, c
    live = promoting(record=record)
    for trial_id, point in (("b", 0.5), ("a", 0.5), ("c", 0.1)):  # b reaches the rung first
        assert live.decide(trial_id, 1, {"val_acc": point}) == "STOP"  # fewer than 3, then a, b ahead of c
        record.report(trial_id, 1, point)
        record.note_rung(trial_id, 1, "stop")
        record.write_end(trial_id, record.decide(trial_id, EndFacts(1, stopped_by_scheduler=True)))
    assert live.promotion() == "a" == promoting(history=record.proposed(), record=record).promotion()


def test_tpe_reads_a_promoted_trial_once():
    from search.running.proposals.window import RecentAndBest

    record = record_with([("a", {1: 0.5}, True), ("b", {1: 0.4}, True)])
    record.continue_trial(record.frozen("a"), promoted_at=1)
    window, trials = RecentAndBest(), record.study.get_trials(deepcopy=False)
    read = window(trials, record.study.directions, (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING))
    assert [t.number for t in read] == [1, 2]  # b, and a's continuation: not the pause it continues


@pytest.mark.parametrize("table,trials", [("cnn_mnist-9ep-4seeds", 24), ("mlp_mnist-3ep-4seeds", 12)])
def test_the_products_rule_replays_the_searches_of_the_replays_arm(monkeypatch, table, trials):
    """The replays' promotion arm (benchmarks.replay_arms.PromotingArm, as RUNGS) measured the variant; the product
    decides with StudyASHA, equal points ranked by proposal as the arm ranks them (the study's first numbers; here
    the arm's trial ids). Both replay the same searches, epoch for epoch, ties and all, when a resumption costs no
    start (the product resumes the trial a free place would take without a pause)."""
    import benchmarks.replay as replay
    from benchmarks.families import RUNGS
    from benchmarks.replay import _table, replay_search, table_space
    from benchmarks.replay_arms import make_arm

    monkeypatch.setattr(replay, "START_S", 0.0)
    curves = _table(f"benchmarks/results/tables/{table}.jsonl.gz")
    space = table_space(curves)

    class Product:  # the arm proposes (TPE over its trials), the product's StudyASHA decides
        def __init__(self, arm):
            self.arm, self.resumed = arm, 0
            self.asha = promoting(max_t=curves.epochs, grace=1, reduction=2)  # RUNGS': `run`'s without a warm-up
            self.asha.order_of = int  # the arm's trial ids count its proposals

        def propose(self, trial_id):
            return self.arm.propose(trial_id)

        def tell(self, trial_id, epoch, value):
            self.arm.trials[trial_id]["values"][epoch] = value
            return self.asha.decide(trial_id, epoch, {"val_acc": value}) == "STOP"

        def end(self, trial_id, completed):
            self.arm.end(trial_id, completed)

        def promoted(self):
            trial_id = self.asha.promotion()
            if trial_id is not None:
                self.asha.promoted(trial_id)
                self.arm.trials[trial_id]["state"] = TrialState.RUNNING
                self.resumed += 1
            return trial_id

    for seed in range(3):
        arm = make_arm(RUNGS, space, seed, trials, curves.epochs)
        arm_run = replay_search(curves, space, arm, seed, trials, concurrency=2)
        product = Product(make_arm(RUNGS, space, seed, trials, curves.epochs))
        product_run = replay_search(curves, space, product, seed, trials, concurrency=2)
        epochs_of = lambda run: {t: [r["epoch"] for r in trial["rows"]] for t, trial in run["trials"].items()}  # noqa: E731
        assert epochs_of(product_run) == epochs_of(arm_run) and product_run["regret"] == arm_run["regret"]
        assert product.resumed > 0 and len(arm.promotions) > product.resumed  # paused trials resumed; some at once


@pytest.mark.parametrize(
    "keys,message",
    [
        ({"asha": "halve"}, "asha=halve: allowed values are auto, promote, stop"),
        ({"asha": "promote", "objectives": "val_acc,params"}, "one objective only (asha=stop for several)"),
    ],
)
def test_a_promotion_setting_it_cannot_run_is_refused(keys, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RunConfig(space="mlp_mnist", **keys)


def test_the_default_asha_promotes_with_one_objective_and_rungs_and_stops_otherwise(tmp_path):
    """asha=auto (the default): the promotion variant with one objective; several objectives, a search with no rung
    (every key pinned, or epochs=1), a search of one trial and settings written before the key existed stop."""
    from search.commands import parse_run
    from tests.conftest import MNIST_MINI

    assert RunConfig(space="mlp_mnist").asha == "promote" == RunConfig(space="mlp_mnist", asha="auto").asha
    assert RunConfig(space="cnn_mnist", objectives="val_acc,params").asha == "stop"
    assert RunConfig.from_dict({"space": "mlp_mnist"}).asha == "stop"  # a search.json of before the key
    assert RunConfig.from_dict(RunConfig(space="mlp_mnist").to_dict()).asha == "promote"  # as recorded
    words = ["space=mlp_mnist", f"data.root={MNIST_MINI}", f"storage={tmp_path}", "epochs=3"]
    pins = ["lr=0.001", "hidden=128", "layers=1", "dropout=0.1", "batch_size=64"]
    resolved = {
        (): "promote",
        ("epochs=1",): "stop",  # no rung: nothing to pause
        ("epochs=1", "asha=auto"): "stop",
        ("epochs=1", "asha=promote"): "promote",  # given: kept
        ("trials=1",): "stop",  # a lone trial: pausing it would only restart it
        ("trials=1", "asha=promote"): "promote",
        ("trials=2",): "promote",
        ("epoch_budget=1",): "stop",  # the budget's one trial
        tuple(pins): "stop",  # one configuration: trained to the end
        ("objectives=val_acc,params",): "stop",
    }
    assert {given: parse_run([*words, *given])[0].asha for given in resolved} == resolved


def test_a_search_of_one_trial_that_resume_grows_promotes_as_auto_would_have_from_the_start(tmp_path):
    """asha=auto stopped for a lone trial; `resume` that grows the search past it (trials=, or an epoch budget that
    decides the trials) promotes; one that does not, or a search given asha=stop, stops as it began."""
    from search.commands import parse_run, resumed_config
    from tests.conftest import MNIST_MINI

    words = ["space=mlp_mnist", f"data.root={MNIST_MINI}", f"storage={tmp_path}", "epochs=3"]
    lone = parse_run([*words, "trials=1"])[0].to_dict()
    budget = parse_run([*words, "epoch_budget=1"])[0].to_dict()
    told = parse_run([*words, "trials=1", "asha=stop"])[0].to_dict()
    assert lone["asha"] == budget["asha"] == told["asha"] == "stop"
    grown = {
        "trials=5": resumed_config(lone, {"trials": "5"}).asha,
        "trials=1": resumed_config(lone, {"trials": "1"}).asha,
        "time_budget": resumed_config(lone, {"time_budget": "60"}).asha,
        "epoch_budget=30": resumed_config(budget, {"epoch_budget": "30"}).asha,
        "told, trials=5": resumed_config(told, {"trials": "5"}).asha,
    }
    assert grown == {
        "trials=5": "promote",
        "trials=1": "stop",
        "time_budget": "stop",
        "epoch_budget=30": "promote",
        "told, trials=5": "stop",
    }
    assert resumed_config(resumed_config(lone, {"trials": "5"}).to_dict(), {"trials": "1"}).asha == "promote"


def test_the_searcher_resumes_before_it_proposes_and_ends_once_nothing_runs_and_one_trial_trained_to_the_end():
    from ray.tune.search import Searcher

    from search.running.proposals.searcher import StudySearcher
    from trainables.foundation.trial_files import TRIAL_KEY

    record = record_with([])
    scheduler = promoting(record=record)
    searcher = StudySearcher(record, [], "val_acc", "max", promotions=scheduler, new_trials=3)

    def pause(tune_id, point):  # the trial reports its rung's epoch; ASHA pauses it; Tune ends it
        trial_id = searcher.suggest(tune_id)[TRIAL_KEY]
        assert scheduler.decide(trial_id, 1, {"val_acc": point}) == "STOP"
        record.report(trial_id, 1, point)
        searcher.on_trial_complete(tune_id, {"epoch": 1, "val_acc": point})
        record.write_end(trial_id, record.decide(trial_id, EndFacts(1, stopped_by_scheduler=True)))
        return trial_id

    first = pause("t1", 0.9)
    pause("t2", 0.5)
    third = searcher.suggest("t3")[TRIAL_KEY]  # the last new trial, running
    assert searcher.suggest("t4") is None  # no new trial left, none waits yet, one runs: Tune asks again later
    assert scheduler.decide(third, 1, {"val_acc": 0.1}) == "STOP"  # three at the rung: the best (first) waits
    record.report(third, 1, 0.1)
    searcher.on_trial_complete("t3", {"epoch": 1, "val_acc": 0.1})
    record.write_end(third, record.decide(third, EndFacts(1, stopped_by_scheduler=True)))
    resumed = searcher.suggest("t5")
    assert resumed[TRIAL_KEY] == first and record.frozen(first).state == TrialState.RUNNING  # its continuation
    assert record.frozen(first).user_attrs["promoted_at"] == 1 and record.promotions == 1
    assert searcher.suggest("t6") is None  # the resumed one runs
    for epoch in range(2, 10):  # its epochs to the last, as the study records them (the scheduler not asked here)
        record.report(first, epoch, 0.95)
    searcher.on_trial_complete("t5", {"epoch": 9, "val_acc": 0.95})
    record.write_end(first, record.decide(first, EndFacts(9, stopped_by_scheduler=False)))
    assert searcher.suggest("t7") == Searcher.FINISHED  # nothing runs, no new trial left, one trained to the end


def test_once_nothing_new_starts_and_nothing_runs_the_best_paused_trial_trains_to_its_last_epoch():
    """Two trials of 9 epochs (rungs at 1 and 3) never fill a rung's top third: the searcher then resumes the best
    paused trial of the highest rung, rung after rung, until one trial has trained its last epoch, and ends; the
    driver sees that owed only once no new trial is left (`last`), and a search that rebuilds finds it again."""
    from ray.tune.search import Searcher

    from search.running.asha.of_search import promotion_owed
    from search.running.proposals.searcher import StudySearcher
    from trainables.foundation.trial_files import TRIAL_KEY

    record = record_with([])
    scheduler = promoting(record=record)
    searcher = StudySearcher(record, [], "val_acc", "max", promotions=scheduler, new_trials=2)
    config = RunConfig(space="mlp_mnist", epochs=9, grace=1, asha="promote")

    def train(tune_id, values: dict):  # the trial Tune starts reports these epochs; the last is ASHA's pause or its end
        trial_id = searcher.suggest(tune_id)[TRIAL_KEY]
        for epoch, value in values.items():
            record.report(trial_id, epoch, value)
            decision = "STOP" if epoch == 9 else scheduler.decide(trial_id, epoch, {"val_acc": value})
        assert decision == "STOP"
        searcher.on_trial_complete(tune_id, {"epoch": epoch, "val_acc": value})
        facts = EndFacts(epoch, stopped_by_scheduler=epoch < 9)
        record.write_end(trial_id, record.decide(trial_id, facts))
        return trial_id

    train("t1", {1: 0.4})
    best = train("t2", {1: 0.6})  # both paused at rung 1, neither in a top third (floor(2 / 3) = 0)
    assert scheduler.promotion() is None and not promotion_owed(config, scheduler)
    assert scheduler.last_promotion() == best and promotion_owed(config, scheduler, last=True)
    assert train("t3", {2: 0.65, 3: 0.7}) == best  # resumed, paused again at rung 3, alone there
    assert scheduler.last_promotion() == best  # the highest rung any trial waits at: 3
    rebuilt = promoting(history=record.proposed(), record=record)  # a kill here: `resume` finds the same one owed
    assert rebuilt.promotion() is None and rebuilt.last_promotion() == best
    assert train("t4", dict.fromkeys(range(4, 10), 0.8)) == best and record.counts()["completed"] == 1
    assert scheduler.last_promotion() is None and searcher.suggest("t5") == Searcher.FINISHED  # one trained to 9
    assert record.frozen(best).user_attrs["promoted_at"] == 3 and record.promotions == 2
    failed = record_with([])  # nothing waits and nothing finished (its one trial failed): the search ends
    alone = StudySearcher(failed, [], "val_acc", "max", promotions=promoting(record=failed), new_trials=1)
    lost = alone.suggest("f1")[TRIAL_KEY]
    alone.on_trial_complete("f1", {})
    failed.write_end(lost, failed.decide(lost, EndFacts(0, error="boom")))
    assert alone.suggest("f2") == Searcher.FINISHED


def test_a_resumed_search_owing_only_its_last_promotion_runs_a_session_for_it_and_is_not_finished_before(
    tmp_path, monkeypatch
):
    """search.running.tuner.drive on a search whose trials are all proposed and ended, two paused at rung 1 and none
    trained to its last epoch (a kill between the last pause and the last promotion): it runs a session (Tune, here
    `fit`, stubbed: no Ray) and, that session having trained nothing, calls the search interrupted, not finished."""
    from search.running import tuner
    from search.running.proposals.study_setup import open_search_study
    from trainables.foundation.errors import SearchInterrupted
    from trainables.foundation.space import load_space
    from trainables.foundation.storage import experiment_of

    config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e", trials=2, epochs=4, grace=1, asha="promote")
    space, experiment = load_space("mlp_mnist"), experiment_of(config.storage, config.name)
    experiment.local.mkdir(parents=True)
    record = open_search_study(config, space, experiment)
    for trial_id, point in (("a", 0.4), ("b", 0.6)):
        record.create(trial_id)
        record.report(trial_id, 1, point)
        record.note_rung(trial_id, 1, "stop")
        record.write_end(trial_id, record.decide(trial_id, EndFacts(1, stopped_by_scheduler=True)))
    sessions = []
    monkeypatch.setattr(tuner, "reconcile", lambda decider: [])  # the trials' files: none here
    monkeypatch.setattr(tuner, "start_tracker", lambda *args: None)
    monkeypatch.setattr(tuner, "fit", lambda *args, **keys: sessions.append(args[4]))  # Tune, given to_run
    with pytest.raises(SearchInterrupted):
        tuner.drive(config, space, experiment, record)
    assert sessions == [0]  # a session with no new trial: for the last promotion (b, the best, goes on)


def test_a_promoted_trial_is_not_final_in_its_files_and_tunes_empty_twin_folders_go(tmp_path):
    from trainables.foundation.trial_files import TrialFiles, remove_empty_twins

    files = TrialFiles(str(tmp_path), "abc")
    files.write_ending("stopped_early", "stopped by ASHA at epoch 1")
    assert files.ending()["status"] == "stopped_early" and files.final_ending() is None  # a promotion continues it
    files.write_ending("failed", "boom")
    assert files.final_ending()["status"] == "failed"
    (tmp_path / "trial_abc_1f2e").mkdir()
    (tmp_path / "trial_abc_9a8b").mkdir()
    (tmp_path / "trial_abc_9a8b" / "error.txt").write_text("Tune's")
    (tmp_path / "trial_lone_77aa").mkdir()  # no trial_lone beside it: not a twin
    remove_empty_twins(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trial_abc", "trial_abc_9a8b", "trial_lone_77aa"]


def test_past_37_trials_a_promotion_takes_no_proposals_place_in_the_late_random_share():
    from types import SimpleNamespace

    from search.running.proposals.late_random import LateRandomShare

    model, promotions = optuna.samplers.TPESampler(seed=0), [0]
    share = LateRandomShare(model, 0, every=1, after=36, promotions=lambda: promotions[0])
    assert share._for(SimpleNamespace(number=36)) is model and share._for(SimpleNamespace(number=37)) is share.random
    promotions[0] = 5  # number 40 is the 36th proposal: five promotions took numbers before it
    assert share._for(SimpleNamespace(number=40)) is model and share._for(SimpleNamespace(number=42)) is share.random


def test_the_driver_sees_a_promotion_owed_before_tune_runs_and_a_search_of_several_objectives_owes_none():
    """search.running.tuner.drive runs a session while a promotion is owed (a kill between a pause and the resumption
    left every trial ended) and calls a search finished only when none is: the scheduler is rebuilt before Tune runs."""
    from types import SimpleNamespace

    from search.running.asha.of_search import promotion_owed, scheduler_of
    from trainables.foundation.objectives import Objective

    space = SimpleNamespace(metric="val_acc", mode="max")
    record = record_with([(t, {1: v}, True) for t, v in (("a", 0.5), ("b", 0.4), ("c", 0.9))])
    promote = RunConfig(space="mlp_mnist", epochs=9, grace=1, asha="promote")
    scheduler = scheduler_of(promote, record, space)
    assert promotion_owed(promote, scheduler) and scheduler.promotion() == "c"
    assert scheduler.set_search_properties("val_acc", "max") and not scheduler.set_search_properties("val_loss", None)
    stop = RunConfig(space="mlp_mnist", epochs=9, grace=1, asha="stop")
    assert not promotion_owed(stop, scheduler_of(stop, record, space))
    several = StudyRecord.in_memory(
        SPACE,
        "val_acc",
        "max",
        optuna.samplers.RandomSampler(seed=0),
        9,
        objectives=[Objective("val_acc", "max"), Objective("params", "min")],
    )
    both = RunConfig(space="mlp_mnist", epochs=9, grace=1, objectives="val_acc,params")
    assert not promotion_owed(both, scheduler_of(both, several, space))  # ParetoASHA: no promotions, no error


def test_a_promotion_is_written_under_the_epoch_that_met_its_rung():
    scheduler = StudyASHA(time_attr="epoch", max_t=20, grace_period=2, reduction_factor=2.5, promote=True)
    scheduler.set_search_properties("val_acc", "max")
    assert [milestone for milestone, _ in scheduler.rungs] == [12.5, 5.0, 2.0]
    for trial_id, point in (("a", 0.9), ("b", 0.5), ("c", 0.4)):
        assert scheduler.record_value(trial_id, 13, {"val_acc": point}) == 12.5  # epoch 13 meets the rung at 12.5
    scheduler.wait({"a", "b", "c"})
    assert scheduler.promotion() == "a" and scheduler.promoted("a") == 13  # its decision there is written at 13
