"""A search with several objectives, its pure parts: the objectives key, non-dominated sorting and hypervolume, the
Pareto front and the export's pick from it, ParetoASHA's rung decisions (Tune's scheduler API, Ray never started),
the study's record of several objectives, and the counted costs of the spaces' models. Milliseconds each."""

from types import SimpleNamespace

import optuna
import pytest
from optuna.trial import TrialState, create_trial

from search.results.pareto import crowding, front_of, hypervolume, nondominated_ranks, pareto_order, pick_member
from search.running.asha.pareto_asha import ParetoASHA, rung_epochs
from search.running.ends.decider import Decider
from search.running.study.endings import EndFacts, Ending
from search.running.study.queries import epoch_values, trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import Objective, parse_bound, parse_objectives
from trainables.foundation.trial_files import TRIAL_KEY

ACC_PARAMS = [Objective("val_acc", "max"), Objective("params", "min")]


@pytest.mark.parametrize(
    "text, words",
    [
        (
            "val_acc,flops",
            "unknown objective 'flops'; allowed: val_acc, val_loss, val_f1, val_auc, params, macs, latency_ms",
        ),
        ("val_acc,params:max", "params is minimised, not maximised"),
        ("val_acc,params,params", "params is named twice"),
        ("params,val_acc", "the first objective is the primary and must be the space's metric, val_acc"),
    ],
)
def test_a_bad_objectives_key_is_refused_naming_the_culprit(text, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_objectives(text, "val_acc", "max")


def test_objectives_are_the_metric_alone_by_default_and_carry_their_directions():
    assert parse_objectives("", "val_acc", "max") == [Objective("val_acc", "max")]
    assert parse_objectives("val_acc:max,latency_ms,macs", "val_acc", "max") == [
        Objective("val_acc", "max"),
        Objective("latency_ms", "min"),
        Objective("macs", "min"),
    ]


def test_a_bound_is_an_objective_an_operator_and_a_number():
    bound = parse_bound("params<=200000")
    assert (bound.name, bound.op, bound.value) == ("params", "<=", 200000.0)
    assert bound.holds(150000) and not bound.holds(250000) and bound.excess(300000) == pytest.approx(0.5)
    assert parse_bound("out=/tmp/x") is None
    with pytest.raises(UsageError, match="unknown objective 'flops'"):
        parse_bound("flops<=3")


def test_non_dominated_sorting_fronts_and_crowding():
    points = [(1, 5), (2, 2), (5, 1), (3, 3), (6, 6)]  # minimised
    assert nondominated_ranks(points) == [0, 0, 0, 1, 2]
    assert crowding(points, [0, 1, 2]) == {0: float("inf"), 1: pytest.approx(2.0), 2: float("inf")}
    assert pareto_order(points) == [0, 2, 1, 3, 4]


def test_hypervolume_is_exact_in_two_and_three_dimensions():
    assert hypervolume([(1, 3), (2, 2), (3, 1)], (4, 4)) == pytest.approx(6.0)
    assert hypervolume([(1, 3), (2, 2), (3, 1), (3, 3)], (4, 4)) == pytest.approx(6.0)  # a dominated point adds 0
    assert hypervolume([(5, 5)], (4, 4)) == 0.0
    assert hypervolume([(0, 0, 0)], (1, 2, 3)) == pytest.approx(6.0)
    assert hypervolume([(0, 1, 1), (1, 0, 0)], (2, 2, 2)) == pytest.approx(2 + 4 - 1)


SUMMARY_TRIALS = [
    {"trial_id": "big", "status": "completed", "objectives": {"val_acc": 0.95, "params": 300_000}},
    {"trial_id": "mid", "status": "completed", "objectives": {"val_acc": 0.93, "params": 120_000}},
    {"trial_id": "small", "status": "completed", "objectives": {"val_acc": 0.90, "params": 50_000}},
    {"trial_id": "worse", "status": "completed", "objectives": {"val_acc": 0.89, "params": 130_000}},
    {"trial_id": "stopped", "status": "stopped_early", "objectives": {"val_acc": 0.99, "params": 1}},
]
OBJECTIVES = [{"name": "val_acc", "mode": "max"}, {"name": "params", "mode": "min"}]


def summary_with_front() -> dict:
    trials = [{**t, "checkpoint": f"/c/{t['trial_id']}", "best_epoch": 3, "config": {}} for t in SUMMARY_TRIALS]
    return {"objectives": OBJECTIVES, "front": front_of(trials, OBJECTIVES), "trials": trials}


def test_the_front_is_the_completed_non_dominated_trials_most_accurate_first():
    assert [m["trial_id"] for m in summary_with_front()["front"]] == ["big", "mid", "small"]


def test_export_picks_the_most_accurate_member_within_the_bounds_or_names_the_closest():
    summary = summary_with_front()
    assert pick_member(summary, [])["trial_id"] == "big"
    assert pick_member(summary, [parse_bound("params<=200000")])["trial_id"] == "mid"
    assert pick_member(summary, [parse_bound("params<=60000"), parse_bound("val_acc>=0.9")])["trial_id"] == "small"
    with pytest.raises(UsageError, match=r"the closest is trial small \(params=50000\)"):
        pick_member(summary, [parse_bound("params<=10000")])
    with pytest.raises(UsageError, match="macs is not an objective of this search"):
        pick_member(summary, [parse_bound("macs<=1")])
    with pytest.raises(UsageError, match="no Pareto front"):
        pick_member({"trials": []}, [parse_bound("params<=1")])


def test_rungs_are_asha_s():
    assert rung_epochs(1, 3, 9) == [1, 3] and rung_epochs(2, 3, 20) == [2, 6, 18] and rung_epochs(3, 3, 8) == [3]


def tune_trial(trial_id):
    return SimpleNamespace(trial_id=f"tune-{trial_id}", config={TRIAL_KEY: trial_id})


def report(scheduler, trial_id, epoch, acc, params):
    return scheduler.on_trial_result(None, tune_trial(trial_id), {"epoch": epoch, "val_acc": acc, "params": params})


def pareto_asha(history=()) -> ParetoASHA:
    return ParetoASHA(objectives=ACC_PARAMS, max_t=9, grace_period=1, reduction_factor=3, history=history)


def test_a_rung_keeps_the_best_third_by_non_dominated_sorting():
    scheduler = pareto_asha()
    assert report(scheduler, "a", 1, 0.90, 100) == scheduler.CONTINUE  # alone at the rung
    assert report(scheduler, "b", 1, 0.80, 200) == scheduler.STOP  # dominated by a
    assert report(scheduler, "c", 1, 0.95, 300) == scheduler.CONTINUE  # not the best third, but on the front
    assert report(scheduler, "d", 1, 0.50, 50) == scheduler.CONTINUE  # the smallest: front, an extreme
    assert report(scheduler, "a", 2, 0.91, 100) == scheduler.CONTINUE  # no rung at epoch 2
    assert report(scheduler, "e", 1, 0.85, None) == scheduler.CONTINUE  # an objective missing: it passes


def test_asha_on_the_accuracy_alone_would_have_stopped_the_small_model():
    accuracy_only = ParetoASHA(objectives=ACC_PARAMS[:1], max_t=9, grace_period=1, reduction_factor=3)
    for trial_id, acc in (("a", 0.90), ("b", 0.80), ("c", 0.95)):
        report(accuracy_only, trial_id, 1, acc, 0)
    assert report(accuracy_only, "d", 1, 0.50, 50) == accuracy_only.STOP


def study_trial(number, trial_id, epochs, params, state=TrialState.RUNNING):
    trial = create_trial(
        state=state,
        params={"lr": 0.01},
        distributions={"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)},
        values=[list(epochs.values())[-1], params] if state == TrialState.COMPLETE else None,
        user_attrs={
            "trial_id": trial_id,
            "epoch_values": {str(e): v for e, v in epochs.items()},
            "costs": {"params": params},
        },
    )
    trial.number = number
    return trial


def test_rungs_are_rebuilt_from_the_study_and_a_lost_stop_is_made_again():
    history = [
        study_trial(0, "a", {1: 0.9, 2: 0.91}, 100, TrialState.COMPLETE),
        study_trial(1, "c", {1: 0.95}, 300, TrialState.COMPLETE),
        study_trial(2, "killed", {1: 0.8}, 200),  # dominated by a: its stop was lost with the driver
    ]
    scheduler = pareto_asha(history)
    assert scheduler.owed_stops == {"killed": 1}
    assert report(scheduler, "killed", 1, 0.8, 200) == scheduler.STOP


def test_a_rung_a_trial_passed_before_a_kill_stays_passed_when_its_epochs_are_replayed():
    history = [
        study_trial(0, "passed", {1: 0.8, 2: 0.85}, 200),  # went on at rung 1, then the driver was killed
        study_trial(1, "a", {1: 0.9}, 100, TrialState.COMPLETE),  # later trials that dominate it at rung 1
        study_trial(2, "c", {1: 0.95}, 150, TrialState.COMPLETE),
    ]
    scheduler = pareto_asha(history)
    assert "passed" not in scheduler.owed_stops
    assert report(scheduler, "passed", 1, 0.8, 200) == scheduler.CONTINUE  # replayed from its files


def mo_record() -> StudyRecord:
    space = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}
    return StudyRecord.in_memory(
        space,
        "val_acc",
        "max",
        optuna.samplers.RandomSampler(seed=0),
        3,
        constants={"lr_schedule": "none"},
        objectives=ACC_PARAMS,
    )


def test_the_study_of_several_objectives_holds_every_objective_of_a_completed_trial():
    record = mo_record()
    for trial_id in ("done", "pruned", "nocost"):
        record.create(trial_id)
    for epoch, acc in ((1, 0.8), (2, 0.85), (3, 0.9)):
        record.report("done", epoch, acc, {"params": 1234})
    record.report("pruned", 1, 0.5, {"params": 99})
    record.report("nocost", 1, 0.5)
    for trial_id, status in (("done", "completed"), ("pruned", "stopped_early"), ("nocost", "completed")):
        Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending(status)))
    done, pruned, nocost = (record.frozen(t) for t in ("done", "pruned", "nocost"))
    assert record.study.directions == [optuna.study.StudyDirection.MAXIMIZE, optuna.study.StudyDirection.MINIMIZE]
    assert done.state == TrialState.COMPLETE and done.values == [0.9, 1234]
    assert epoch_values(done) == {1: 0.8, 2: 0.85, 3: 0.9} and not done.intermediate_values
    assert pruned.state == TrialState.PRUNED and pruned.values is None
    assert pruned.user_attrs["objectives"] == {"val_acc": 0.5, "params": 99}
    assert nocost.state == TrialState.FAIL and nocost.user_attrs["reason"] == "reported no params"
    optuna.samplers.TPESampler(seed=0, n_startup_trials=1, constant_liar=True).sample_independent(
        record.study, record.frozen("done"), "lr", record.coding.distributions["lr"]
    )  # Optuna's TPE reads this study (a pruned trial's epochs would make it ask for one direction)
    assert record.best() == (0.9, "done")


@pytest.mark.parametrize("space_name", ["mlp_mnist", "cnn_mnist", "resnet_mnist"])
def test_counted_costs_are_exact_and_the_cost_knobs_change_them(space_name):
    import torch

    from trainables.costs import counted_costs, latency
    from trainables.data_info import DataInfo
    from trainables.foundation.space import load_space
    from trainables.models import model_for

    space = load_space(space_name).for_objectives(2)
    info = DataInfo(tuple("0123456789"), 1, 28, (0.5,), (0.5,))
    knob = next(iter(space.cost_hyperparameters))
    small, large = space.cost_hyperparameters[knob].choices[0], space.cost_hyperparameters[knob].choices[-1]
    base = {"dropout": 0.1, "hidden": 64, "layers": 2}
    costs = [counted_costs(model_for(space, {**base, knob: value}, info), info) for value in (small, large)]
    assert costs[0]["params"] < costs[1]["params"] and costs[0]["macs"] < costs[1]["macs"]
    if space_name == "mlp_mnist":  # two hidden layers of 32: weights and biases, and one multiply-add per weight
        assert costs[0] == {"params": 784 * 32 + 32 + 32 * 32 + 32 + 32 * 10 + 10, "macs": 784 * 32 + 32 * 32 + 320}
    network = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))
    measured = latency(network, SimpleNamespace(in_channels=1, image_size=2), repeats=9)
    assert measured["latency_ms"] > 0 and measured["latency_iqr_ms"] >= 0


@pytest.mark.parametrize("space_name", ["resnet_imagefolder", "resnet50_transfer"])
def test_an_image_folder_space_searches_its_image_size_only_with_a_second_objective(space_name):
    from trainables.foundation.space import load_space

    space = load_space(space_name)
    assert "image_size" in space.constants and "image_size" not in space.hyperparameters
    two = space.for_objectives(2)
    assert "image_size" in two.hyperparameters and "image_size" not in two.constants
    assert space.for_objectives(1) is space


def test_one_front_the_study_the_summary_and_export_agree_when_latency_moves_between_epochs():
    """Latency measured again at each epoch: the study's values of a trial are its standing epoch's (its best
    val_acc here) with that epoch's latency, not the latest; so optuna-dashboard's front (the study's best trials),
    summary.json's front and export's choice are the same trials with the same values."""
    from search.results.summary import TrialResult, summarize

    objectives = [Objective("val_acc", "max"), Objective("latency_ms", "min")]
    record = StudyRecord.in_memory(
        {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)},
        "val_acc",
        "max",
        optuna.samplers.RandomSampler(seed=0),
        3,
        constants={"lr_schedule": "none"},
        objectives=objectives,
    )
    curves = {  # per epoch: (val_acc, latency_ms)
        "a": [(0.80, 5.0), (0.90, 9.0), (0.85, 2.0)],  # its latest latency would dominate b
        "b": [(0.70, 3.0), (0.88, 4.0), (0.86, 4.0)],
        "c": [(0.60, 1.0), (0.70, 1.0), (0.75, 1.0)],
    }
    results = []
    for trial_id, curve in curves.items():
        record.create(trial_id)
        rows = []
        for epoch, (acc, latency) in enumerate(curve, start=1):
            record.report(trial_id, epoch, acc, {"latency_ms": latency})
            rows.append({"epoch": epoch, "val_acc": acc, "latency_ms": latency, "checkpoint_path": f"ck{epoch}"})
        Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending("completed")))
        results.append(TrialResult(trial_id, record.config_of(trial_id), rows, "completed"))
    study_front = {trial_id_of(t): tuple(t.values) for t in record.study.best_trials}
    summary = summarize(
        "s",
        "val_acc",
        "max",
        {"epochs": 3},
        results,
        lambda path: True,
        [{"name": o.name, "mode": o.mode} for o in objectives],
    )
    summary_front = {
        m["trial_id"]: (m["objectives"]["val_acc"], m["objectives"]["latency_ms"]) for m in summary["front"]
    }
    assert study_front == summary_front == {"a": (0.90, 9.0), "b": (0.88, 4.0), "c": (0.75, 1.0)}
    chosen = pick_member(summary, [parse_bound("latency_ms<=5")])
    in_study = max((t for t in record.study.best_trials if t.values[1] <= 5), key=lambda t: t.values[0])
    assert chosen["trial_id"] == trial_id_of(in_study) == "b"
