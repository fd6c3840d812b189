"""Past a search's first trials, its proposals, or a share of them, drawn at random (BOHB draws a third at random,
SMAC a fifth, from the start): a model that exploits stays where it settled, and on long searches random proposals
under the same ASHA end lower (benchmarks/HISTORY.md, "Long searches", "TPE's 37 trials, then random"). Pure Optuna,
no Ray.
"""

from __future__ import annotations

from optuna.samplers import BaseSampler, RandomSampler

AFTER = 36  # trial numbers 0..AFTER (the first 37 trials) are the model's alone: the default 12, and three times that
EVERY = 1  # the product's share: every trial number past AFTER at random (tuning-tail, heldout20k-tail); 2 before


def late_random_every(sampler: str, objectives: int) -> int:
    """The share a new search's TPE takes: EVERY for one objective; 0 (none) for random proposals or several
    objectives (unmeasured there)."""
    return EVERY if sampler == "tpe" and objectives == 1 else 0


class LateRandomShare(BaseSampler):
    """`model`'s proposals, but past trial number `after` every trial whose number is `every - 1` modulo `every`
    (`every` 1: every trial past `after`) is drawn at random over the whole space (seeded from `seed`; the offset
    keeps it apart from the model's own generator). Which trials are drawn depends on their numbers alone, less
    `promotions()`, the continuations ASHA's promotion variant added before (each takes a number no proposal did, as
    the replays count proposals); another trial the study adds itself (a budget's continuation, a rebuilt trial)
    takes a number too."""

    def __init__(self, model: BaseSampler, seed: int | None, every: int, after: int = AFTER, promotions=lambda: 0):
        if every < 1:
            raise ValueError(f"every={every}: at least 1 (1: every proposal past `after` at random)")
        self.model, self.every, self.after, self.promotions = model, every, after, promotions
        self.random = RandomSampler(seed=None if seed is None else seed + 7919)

    def drawn_at_random(self, number: int) -> bool:
        return number > self.after and number % self.every == self.every - 1

    def _for(self, trial) -> BaseSampler:
        return self.random if self.drawn_at_random(trial.number - self.promotions()) else self.model

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
