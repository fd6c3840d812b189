"""The training recipe's pieces: learning-rate schedules (and their restart), shifts on whole batches, the stem."""

import pytest
import torch

from trainables.augment import random_rotations, random_shifts
from trainables.foundation.schedules import ANNEALING_SCHEDULES, LR_SCHEDULES, warmup_epochs
from trainables.models import resnet18
from trainables.training import LearningRate, StepOptions, make_optimizer


def lrs(hp: dict, epochs: int, steps: int, first_epoch: int = 1, ends: tuple[int, ...] = ()) -> list[float]:
    optimizer = make_optimizer(hp, torch.nn.Linear(2, 2))
    schedule = LearningRate(hp, optimizer, epochs, steps, first_epoch, ends)
    seen = []
    for _ in range((epochs - first_epoch + 1) * steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.after_step()
    return seen


@pytest.mark.parametrize("name", ANNEALING_SCHEDULES)
def test_a_per_step_schedule_warms_up_to_lr_then_anneals(name):
    seen = lrs({"lr": 0.1, "momentum": 0.9, "lr_schedule": name}, epochs=4, steps=10)
    peak = seen.index(max(seen))
    assert max(seen) == pytest.approx(0.1, rel=1e-3) and 0 < peak < len(seen) - 1
    assert seen[0] < 0.05 and seen[-1] < 0.01


@pytest.mark.parametrize("name", ["onecycle", "cosine"])
def test_a_restarted_trial_continues_the_schedule_where_it_stopped(name):
    hp = {"lr": 0.1, "momentum": 0.9, "lr_schedule": name}
    whole = lrs(hp, epochs=4, steps=10)
    assert lrs(hp, epochs=4, steps=10, first_epoch=3) == pytest.approx(whole[20:])


@pytest.mark.parametrize("name", ANNEALING_SCHEDULES)
def test_rung_cycles_anneal_at_each_end_then_warm_up_again_and_restart_where_they_stopped(name):
    hp = {"lr": 0.1, "momentum": 0.9, "lr_schedule": name}
    seen = lrs(hp, epochs=8, steps=10, ends=(3,))
    first, second = seen[:30], seen[30:]
    assert max(first) == pytest.approx(0.1, rel=1e-2) and first[-1] < 0.01  # annealed when the rung judges
    assert second[0] < 0.05 and max(second) == pytest.approx(0.1, rel=1e-2) and second[-1] < 0.01
    assert first == pytest.approx(lrs(hp, epochs=3, steps=10))  # the first cycle is the 3-epoch schedule itself
    for restart in (3, 4, 6):
        assert lrs(hp, epochs=8, steps=10, first_epoch=restart, ends=(3,)) == pytest.approx(seen[(restart - 1) * 10 :])


@pytest.mark.parametrize("name", ["onecycle", "cosine"])
@pytest.mark.parametrize("epochs, steps", [(1, 1), (2, 1), (1, 3)])
def test_a_schedule_over_a_few_steps_still_runs(name, epochs, steps):
    assert all(0 < lr <= 0.1 + 1e-9 for lr in lrs({"lr": 0.1, "momentum": 0.9, "lr_schedule": name}, epochs, steps))


def test_an_unknown_schedule_is_named():
    with pytest.raises(ValueError, match="lr_schedule=step: allowed values are none, plateau, onecycle, cosine"):
        lrs({"lr": 0.1, "lr_schedule": "step"}, epochs=1, steps=1)


def test_nesterov_and_label_smoothing_reach_the_step():
    optimizer = make_optimizer({"lr": 0.1, "momentum": 0.9, "nesterov": True}, torch.nn.Linear(2, 2))
    assert optimizer.param_groups[0]["nesterov"] is True
    assert (
        StepOptions.of(
            type("Run", (), {"channels_last": False, "precision": "fp32"}), {"label_smoothing": 0.1}
        ).label_smoothing
        == 0.1
    )


def test_each_image_of_a_batch_moves_by_its_own_offset_within_the_bound():
    images = torch.zeros(64, 1, 9, 9)
    images[:, :, 4, 4] = 1.0  # one lit pixel in the middle of every image
    moved = random_shifts(images, 2, torch.Generator().manual_seed(0))
    assert moved.shape == images.shape and (moved.sum(dim=(1, 2, 3)) == 1).all()  # nothing cut off at 2 px
    where = moved[:, 0].flatten(1).argmax(1)
    rows, cols = where // 9, where % 9
    assert rows.min() >= 2 and rows.max() <= 6 and cols.min() >= 2 and cols.max() <= 6
    assert len(set(zip(rows.tolist(), cols.tolist()))) > 10  # not one offset for the whole batch


def test_each_image_of_a_batch_turns_by_its_own_angle_within_the_bound():
    images = torch.zeros(256, 1, 29, 29)
    images[:, :, 4, 14] = 1.0  # one lit pixel 10 px above the centre of every image
    turned = random_rotations(images, 30, 0, torch.Generator().manual_seed(0))
    assert turned.shape == images.shape
    ys, xs = torch.meshgrid(torch.arange(29.0), torch.arange(29.0), indexing="ij")
    mass = turned[:, 0].sum(dim=(1, 2))
    y, x = (turned[:, 0] * ys).sum(dim=(1, 2)) / mass, (turned[:, 0] * xs).sum(dim=(1, 2)) / mass
    angles = torch.atan2(x - 14, 14 - y) * 180 / torch.pi  # 0 degrees: straight up
    assert angles.abs().max() <= 31 and angles.std() > 10  # within the bound, and not one angle for the batch
    assert torch.allclose(random_rotations(images, 1e-9, 0), images, atol=1e-5)  # no turn, no move: the same image


def test_the_small_stem_keeps_more_of_a_28x28_image():
    imagenet, small = resnet18(1, 10), resnet18(1, 10, stem="small")
    x = torch.zeros(1, 1, 28, 28)
    assert imagenet.maxpool(imagenet.conv1(x)).shape[-1] == 7 and small.maxpool(small.conv1(x)).shape[-1] == 14
    assert small(x).shape == (1, 10)


@pytest.mark.parametrize("name", LR_SCHEDULES)
@pytest.mark.parametrize("epochs", [3, 8])
def test_the_warm_up_the_driver_places_asha_by_is_where_the_training_loop_peaks(name, epochs):
    """foundation/schedules.py states each warm-up without torch; the loop's learning rate must peak inside it."""
    steps = 10
    seen = lrs({"lr": 0.1, "momentum": 0.9, "lr_schedule": name}, epochs=epochs, steps=steps)
    peak_epoch = (seen.index(max(seen)) + 1) / steps
    assert peak_epoch <= max(warmup_epochs(name, epochs), 1 / steps) + 1 / steps, (name, peak_epoch)
    assert (name in ANNEALING_SCHEDULES) == (seen[-1] < 0.01)
