"""A share of a long search's proposals drawn at random (search.running.proposals.late_random): pure Optuna, no Ray."""

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.samplers import BaseSampler

from search.running.proposals.late_random import AFTER, LateRandomShare
from search.running.proposals.study_setup import sampler_for
from search.running.proposals.unrun import OnceEachSampler
from search.running.study.coding import SpaceCoding

SPACE = {"x": FloatDistribution(0.0, 1.0)}


class Half(BaseSampler):
    """Proposes x = 0.5 always: which proposals are the model's shows."""

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return 0.5


def models(every: int, trials: int) -> list[bool]:
    study = optuna.create_study(sampler=LateRandomShare(Half(), seed=0, every=every))
    return [study.ask(SPACE).params["x"] == 0.5 for _ in range(trials)]


@pytest.mark.parametrize("every", [1, 2, 3])
def test_past_trial_36_every_kth_proposal_is_drawn_at_random_and_up_to_it_none(every):
    proposed = models(every, AFTER + 1 + 2 * every)
    assert all(proposed[: AFTER + 1])  # trial numbers 0..AFTER: the model's
    assert proposed[AFTER + 1 :] == [(n % every != every - 1) for n in range(AFTER + 1, AFTER + 1 + 2 * every)]


def test_which_trials_are_drawn_depends_on_their_numbers_alone_and_the_draws_on_the_seed():
    study = optuna.create_study(sampler=Half())
    for _ in range(40):  # trials 0..39 proposed by something else: a study that already holds them
        study.ask(SPACE)
    study.sampler = LateRandomShare(Half(), seed=3, every=2)  # a resumed run's sampler over the same study
    assert [study.ask(SPACE).params["x"] == 0.5 for _ in range(4)] == [True, False, True, False]  # 40, 41, 42, 43
    draws = {seed: [] for seed in (3, 4)}
    for seed, values in draws.items():
        other = optuna.create_study(sampler=LateRandomShare(Half(), seed=seed, every=2))
        values += [other.ask(SPACE).params["x"] for _ in range(AFTER + 4)][AFTER:]
    assert draws[3] != draws[4] and draws[3][1] == study.trials[41].params["x"]  # seeded: the same seed, the same draw
    with pytest.raises(ValueError, match="at least 1"):
        LateRandomShare(Half(), seed=0, every=0)


def test_sampler_for_puts_the_share_inside_the_once_each_rule_and_leaves_it_out_by_default():
    finite = SpaceCoding({"k": CategoricalDistribution([1, 2, 3])})
    assert isinstance(sampler_for("tpe", finite, 0, 2, every=2).base, LateRandomShare)
    assert isinstance(sampler_for("tpe", SpaceCoding(SPACE), 0, 2, every=2), LateRandomShare)
    assert not isinstance(sampler_for("tpe", SpaceCoding(SPACE), 0, 2), LateRandomShare)
    assert isinstance(sampler_for("tpe", finite, 0, 2), OnceEachSampler)
