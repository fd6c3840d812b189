"""The time estimate said before a long search on CPU cores: ASHA's share of the epochs, when to speak, and the
speed the dry run plans with (the model timed as one trial trains it, times the trials side by side)."""

import re

import pytest
import torch

from search.commands import parse_run
from search.running.estimate import (
    TIMED,
    asha_epoch_share,
    expected_epochs,
    long_search_line,
    trial_images_per_s,
    typical_hyperparameters,
)
from search.running.study.coding import contains
from trainables.data import MNIST
from trainables.foundation.config import parse_overrides
from trainables.foundation.space import load_space


@pytest.mark.parametrize(
    "epochs, grace, reduction, share",
    [
        (3, 3, 3, 1.0),  # no rung before the end: every epoch runs
        (3, 1, 3, (1 + 2 / 3) / 3),  # rung at 1; a third go on to 3
        (8, 1, 3, (1 + 2 / 3 + 5 / 9) / 8),  # rungs at 1 and 3
        (8, 2, 2, (2 + 2 / 2 + 4 / 4) / 8),  # rungs at 2 and 4
    ],
)
def test_asha_runs_its_share_of_the_epochs(epochs, grace, reduction, share):
    assert asha_epoch_share(epochs, grace, reduction) == pytest.approx(share)


def test_typical_hyperparameters_are_inside_the_ranges():
    space = load_space("resnet_mnist")
    hp = typical_hyperparameters(space)
    for key, dist in space.hyperparameters.items():
        assert contains(dist, hp[key]), key


def test_a_short_search_says_nothing_and_times_no_step():
    config = parse_overrides(["space=resnet_mnist", "trials=2", "epochs=1"])
    assert long_search_line(config, load_space("resnet_mnist"), 256, None, 2) is None  # info None: never measured


def test_a_long_search_on_cpu_cores_says_about_how_long_and_what_shortens_it():
    config = parse_overrides(["space=resnet_mnist", "trials=64", "epochs=20", "grace=20"])
    info = MNIST.info("", {})
    line = long_search_line(config, load_space("resnet_mnist"), 54_000, info, 2)
    assert line.startswith("search: about ") and "no GPU (64 trials x up to 20 epochs of 54,000 images at ~" in line
    assert line.endswith("shorten it with trials=, epochs= or data.limit=")


@pytest.mark.parametrize("concurrency, threads, side_by_side", [(0, 1, 2), (1, 2, 1)])
def test_the_long_line_runs_at_the_dry_runs_speed_for_the_trials_shape(concurrency, threads, side_by_side):
    """Two cores: two one-thread trials side by side, or one trial on both cores (concurrency=1); the speed is the
    dry run's figure for that trial's threads (timed once, then the same), times the trials side by side."""
    words = ["space=mlp_mnist", "trials=64", "epochs=20", "grace=20", f"concurrency={concurrency}"]
    config, space, info = parse_overrides(words), load_space("mlp_mnist"), MNIST.info("", {})
    threads_before = torch.get_num_threads()
    line = long_search_line(config, space, 540_000, info, 2)
    timed = len(TIMED)
    trial_rate = trial_images_per_s(space, typical_hyperparameters(space) | config.fixed, info, threads)
    assert len(TIMED) == timed, "the line used another figure than the dry run's for this trial"
    assert torch.get_num_threads() == threads_before  # the process's own thread count restored
    assert float(re.search(r" at ~(\d+) img/s[,;]", line).group(1)) == pytest.approx(trial_rate * side_by_side, abs=0.5)
    number, unit = re.match(r"search: about ([\d.]+) (min|h) on", line).groups()
    minutes = 64 * 20 * 540_000 / (trial_rate * side_by_side) * 1.1 / 60
    said = pytest.approx(minutes / 60, abs=0.06) if unit == "h" else pytest.approx(minutes, abs=0.5)  # as rounded
    assert float(number) == said


def test_under_an_epoch_budget_the_estimate_is_the_budget_not_the_lifted_trials():
    budget = parse_overrides(["space=resnet_mnist", "trials=60", "epochs=20", "epoch_budget=60", "grace=1"])
    assert expected_epochs(budget) == 60  # not 60 trials x 20 epochs x ASHA's share
    capped = parse_overrides(["space=resnet_mnist", "trials=2", "epochs=3", "epoch_budget=60", "grace=1"])
    assert expected_epochs(capped) == pytest.approx(2 * 3 * asha_epoch_share(3, 1, 3.0))  # the trials cap it first
    alone = parse_run(["space=resnet_mnist", "trials=1", "epochs=9", "lr_schedule=none"])[0]  # rungs at 1, 2, 4, 8
    assert (alone.grace, alone.reduction, expected_epochs(alone)) == (1, 2, 9)  # none to rank it against: all 9
    info = MNIST.info("", {})
    line = long_search_line(budget, load_space("resnet_mnist"), 54_000, info, 2)
    assert "no GPU (60 trial-epochs of 54,000 images at ~" in line
    assert line.endswith("shorten it with epoch_budget=, epochs= or data.limit=")


def test_the_estimates_end_in_whole_words_and_count_asha_only_where_it_stops_trials(tmp_path):
    from search.commands import parse_run
    from search.plan import estimate_words
    from tests.conftest import MNIST_MINI

    words = ["space=mlp_mnist", f"data.root={MNIST_MINI}", "data.limit=512", "epochs=3", f"storage={tmp_path}"]
    searched = estimate_words(*parse_run([*words, "trials=4", "grace=1"]))
    assert searched.startswith("about 7 trial-epochs of 512 images (ASHA pausing some): ~")  # the default: promote
    stopping = estimate_words(*parse_run([*words, "trials=4", "grace=1", "asha=stop"]))
    assert stopping.startswith("about 7 trial-epochs of 512 images (ASHA stopping some): ~")
    assert searched.endswith(" img/s each; Ray's start and each trial's start come on top")
    pins = ["lr=0.001", "hidden=128", "layers=1", "dropout=0.1", "batch_size=64"]
    one = estimate_words(*parse_run([*words, *pins]))
    assert one.startswith("about 3 trial-epochs of 512 images: ~") and "ASHA" not in one
    assert one.endswith(" img/s; Ray's start and each trial's start come on top")
    config, space = parse_run([*words, *pins, "epochs=8"])
    line = long_search_line(config, space, 5_400_000, MNIST.info("", {}), 2)
    assert "no GPU (1 trial x up to 8 epochs of 5,400,000 images at ~" in line and "ASHA" not in line
    assert "img/s; Ray's start and each trial's start come on top); shorten it with trials=" in line
