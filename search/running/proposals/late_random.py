"""Past a search's first trials, a share of its proposals drawn at random, as BOHB (a third) and SMAC (a fifth)
interleave random configurations with their model's: a model that exploits stays where it settled, and on long
searches random proposals under the same ASHA end lower (benchmarks/HISTORY.md, "Long searches"). Pure Optuna, no Ray.
"""

from __future__ import annotations

from optuna.samplers import BaseSampler, RandomSampler

AFTER = 36  # trials proposed by the model alone: every search of the default 12 trials, and three times that
EVERY = 2  # the product's share: every 2nd proposal from trial AFTER on (families tuning-late, heldout20k-late)


def late_random_every(sampler: str, objectives: int) -> int:
    """The share a new search's TPE takes: EVERY for one objective; 0 (none) for random proposals or several
    objectives (unmeasured there)."""
    return EVERY if sampler == "tpe" and objectives == 1 else 0


class LateRandomShare(BaseSampler):
    """`model`'s proposals, but from trial number `after` on every `every`-th trial (by number) is drawn at random
    over the whole space. The draw depends on the trial's number alone, so a resumed search draws where an
    uninterrupted one would; the random draws are seeded from `seed`."""

    def __init__(self, model: BaseSampler, seed: int | None, every: int, after: int = AFTER):
        if every < 2:
            raise ValueError(f"every={every}: at least 2 (every proposal at random is sampler=random)")
        self.model, self.every, self.after = model, every, after
        self.random = RandomSampler(seed=None if seed is None else seed + 7919)

    def drawn_at_random(self, number: int) -> bool:
        return number >= self.after and number % self.every == self.every - 1

    def _for(self, trial) -> BaseSampler:
        return self.random if self.drawn_at_random(trial.number) else self.model

    def infer_relative_search_space(self, study, trial):
        return self._for(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._for(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._for(trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial) -> None:
        self.model.before_trial(study, trial)

    def after_trial(self, study, trial, state, values) -> None:
        self.model.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.model.reseed_rng()
        self.random.reseed_rng()
