"""ASHA's first rung for `grace=0`: one epoch past the longest learning-rate warm-up a trial may have, under asha=stop
at least epoch 2 in trials of 6 epochs or more; `run`'s rungs under either variant; the rungs where `rung_cycles=true`
restarts the schedule."""

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution

from trainables.foundation.schedules import cycle_ends, first_rung, schedules_of


@pytest.mark.parametrize(
    "epochs, schedules, grace, promoting",
    [
        (8, ["onecycle"], 3, 3),  # warm-up to epoch 2: epoch 1 and 2 end inside or at its top
        (3, ["onecycle"], 1, 1),  # the default command: warm-up ends inside epoch 1
        (4, ["onecycle"], 2, 2),
        (20, ["onecycle"], 6, 6),
        (8, ["cosine"], 2, 2),
        (5, ["cosine"], 2, 2),  # past cosine's warm-up in a trial too short for the epoch-2 floor
        (1, ["cosine"], 1, 1),  # never past `epochs`
        (8, ["none"], 2, 1),  # no warm-up: epoch 2 in a trial of 6 epochs or more
        (8, ["plateau"], 2, 1),
        (8, ["none", "onecycle"], 3, 3),  # the longest warm-up among a searched schedule's choices
        (6, [], 2, 1),
        (5, [], 1, 1),  # shorter trials: epoch 1, as the default command's 3 epochs
        (3, ["none"], 1, 1),
        (1, [], 1, 1),
    ],
)
def test_the_first_rung_comes_past_the_warm_up_and_at_epoch_2_or_later_in_long_stopping_trials(
    epochs, schedules, grace, promoting
):
    assert first_rung(epochs, schedules) == grace
    assert first_rung(epochs, schedules, promoting=True) == promoting  # a pause ends nothing: no epoch-2 floor


def test_a_pinned_schedule_wins_over_the_space_and_a_searched_one_gives_its_choices():
    constants = {"lr_schedule": "onecycle"}
    assert schedules_of(constants, {}, {}) == ["onecycle"]
    assert schedules_of(constants, {}, {"lr_schedule": "none"}) == ["none"]
    searched = {"lr_schedule": CategoricalDistribution(["none", "cosine"]), "lr": FloatDistribution(0.01, 0.1)}
    assert schedules_of({}, searched, {}) == ["none", "cosine"]
    assert schedules_of({}, {}, {}) == ["none"]


@pytest.mark.parametrize(
    "args, asha, grace, reduction",
    [
        (["epochs=8"], "promote", 3, 2),  # one epoch past OneCycle's warm-up; half of each rung goes on
        (["epochs=8", "lr_schedule=none"], "promote", 1, 2),  # rungs at 1, 2 and 4
        (["epochs=8", "lr_schedule=none", "asha=stop"], "stop", 2, 3),  # stopping: epoch 2 in long trials, a third
        (["epochs=8", "lr_schedule=none", "objectives=val_acc,params"], "stop", 2, 3),  # a Pareto search stops
        (["epochs=5", "lr_schedule=none", "asha=stop"], "stop", 1, 3),
        (["epochs=8", "grace=2"], "promote", 2, 3),  # either given: it is kept, the other as under asha=stop
        (["epochs=8", "lr_schedule=none", "reduction=2"], "promote", 2, 2),
        (["epochs=8", "lr_schedule=none", "trials=1"], "stop", 1, 2),  # one trial: a `resume` that grows it promotes
    ],
)
def test_run_resolves_grace_zero_and_the_reduction_from_the_space_and_asha_and_keeps_given_ones(
    args, asha, grace, reduction
):
    from search.commands import parse_run

    config, _ = parse_run(["space=resnet_mnist", *args])
    assert (config.asha, config.grace, config.reduction) == (asha, grace, reduction)


@pytest.mark.parametrize(
    "epochs, grace, reduction, ends",
    [
        (8, 3, 3.0, (3,)),  # the target command: one rung, then the last epoch
        (3, 1, 3.0, (1,)),  # the default command: its second rung is the last epoch, where nothing restarts
        (27, 1, 3.0, (1, 3, 9)),
        (20, 2, 2.5, (2, 5, 13)),  # 12.5: Tune judges at the first epoch that reaches it
        (8, 8, 3.0, ()),  # no ASHA
    ],
)
def test_cycles_end_where_asha_judges_before_the_last_epoch(epochs, grace, reduction, ends):
    assert cycle_ends(epochs, grace, reduction) == ends


@pytest.mark.parametrize("epochs, grace, reduction", [(8, 3, 3.0), (3, 1, 3.0), (4, 1, 3.0), (20, 2, 2.0), (9, 1, 3)])
def test_the_rungs_are_the_ones_ray_tunes_asha_compares_trials_at(epochs, grace, reduction):
    """One formula: the foundation's milestones (no Ray there) are checked against Tune's own ASHAScheduler."""
    from ray.tune.schedulers import ASHAScheduler

    from trainables.foundation.schedules import rung_milestones

    asha = ASHAScheduler(time_attr="epoch", max_t=epochs, grace_period=grace, reduction_factor=reduction)
    tunes = sorted(milestone for milestone, _ in asha._brackets[0]._rungs if milestone < epochs)
    assert rung_milestones(epochs, grace, reduction) == pytest.approx(tunes)
