"""The efficiency benchmark's own logic (pure, milliseconds): when an arm first held a model near its final best,
and the loop arm sampling a space's distributions through Optuna's public suggest calls."""

import optuna
import pytest

from benchmarks.efficiency import first_near, mean_of, sample
from trainables.foundation.space import builtin_space_names, load_space


def test_near_best_is_the_first_finished_trial_within_three_tenths_of_a_point():
    finished = [(300.0, 0.990), (100.0, 0.980), (200.0, 0.9875), (400.0, 0.9904)]
    assert first_near(finished, best=0.9904) == 200.0  # 0.9875 is within 0.3 pt; 0.980 is not
    assert first_near([], best=0.99) is None


def test_means_over_seeds():
    runs = [
        {"test_acc": 0.99, "wall_s": 100.0, "epochs_run": 10},
        {"test_acc": 0.98, "wall_s": 200.0, "epochs_run": 20},
    ]
    assert mean_of(runs) == pytest.approx({"test_acc": 0.985, "wall_s": 150.0, "epochs_run": 15})


@pytest.mark.parametrize("name", builtin_space_names())
def test_the_loop_samples_every_space_as_the_search_does(name):
    space = load_space(name)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    params = sample(trial, space.hyperparameters)
    assert set(params) == set(space.hyperparameters)
    assert trial.distributions == space.hyperparameters  # the same distributions the search's study asks with


def test_val_vs_test_ranks_agree_disagree_and_need_three():
    from benchmarks.val_vs_test import spearman

    assert spearman([0.90, 0.95, 0.99], [0.91, 0.96, 0.98]) == 1.0
    assert spearman([0.90, 0.95, 0.99], [0.98, 0.96, 0.91]) == -1.0
    assert spearman([0.90, 0.95], [0.91, 0.96]) is None
    # ties share their mean rank: the order the trials come in does not change the figure
    tied = spearman([0.99, 0.99, 0.98, 0.98], [0.991, 0.9895, 0.988, 0.9835])
    assert tied == spearman([0.99, 0.99, 0.98, 0.98], [0.9895, 0.991, 0.9835, 0.988])
    assert abs(tied - 0.894) < 0.001
