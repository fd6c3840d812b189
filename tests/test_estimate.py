"""The time estimate said before a long search on CPU cores: ASHA's share of the epochs, and when to speak."""

import pytest

from search.running.estimate import asha_epoch_share, expected_epochs, long_search_line, typical_hyperparameters
from search.running.space_coding import contains
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


def test_under_an_epoch_budget_the_estimate_is_the_budget_not_the_lifted_trials():
    budget = parse_overrides(["space=resnet_mnist", "trials=60", "epochs=20", "epoch_budget=60", "grace=1"])
    assert expected_epochs(budget) == 60  # not 60 trials x 20 epochs x ASHA's share
    capped = parse_overrides(["space=resnet_mnist", "trials=2", "epochs=3", "epoch_budget=60", "grace=1"])
    assert expected_epochs(capped) == pytest.approx(2 * 3 * asha_epoch_share(3, 1, 3.0))  # the trials cap it first
    info = MNIST.info("", {})
    line = long_search_line(budget, load_space("resnet_mnist"), 54_000, info, 2)
    assert "no GPU (60 trial-epochs of 54,000 images at ~" in line
    assert line.endswith("shorten it with epoch_budget=, epochs= or data.limit=")
