"""How Optuna proposes, fit for a search's budget: Optuna's `TPESampler` as it comes, but for its random start (a
quarter of the trials, 2 to 10, plus the configurations given first; under asha=promote 2 to 4, and a good group of the
best 5%), a choice among numbers modelled in order, and, past 250 trials, a model of the best and the most recent
trials rather than of all (search.running.proposals.window; docs/design.md, "How the sampler is set up"). No Ray.
"""

from __future__ import annotations

from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.samplers import RandomSampler, TPESampler

from search.running.proposals.window import RecentAndBest
from search.running.study.optuna_private import GoodShareHook, PastParamsHook, TrialsReadHook

PROMOTING_STARTUP = 4  # under asha=promote, TPE's random start is at most 4 trials (benchmarks/HISTORY.md,
PROMOTING_GOOD_SHARE = 0.05  # `heldout20k-rungs-tpe-peers-324`), and its good group their best 5%, at most 25


class WindowTPESampler(TrialsReadHook, GoodShareHook, TPESampler):
    """Optuna's TPE, whose model reads every trial up to 250 and then the best and the 250 most recent: each proposal
    costs the same at any size of study (search.running.proposals.window); `good_share`: GoodShareHook's."""

    def __init__(self, **tpe):
        super().__init__(**tpe)
        self.window = RecentAndBest()

    def trials_read(self, trials: list, directions: list, states=None) -> list:
        return self.window(trials, directions, states)


class OrderedTPESampler(PastParamsHook, WindowTPESampler):
    """Optuna's TPE over a study that holds a choice among numbers as its value (`batch_size` 128, as trained),
    modelled as its position among the sorted choices, so that TPE sees their order; it proposes exactly what TPE
    proposes over positions with the same seed (tests/test_space_coding.py). `ordered`: name -> sorted choices. Optuna
    5's TPE is multivariate for one objective and independent for several: both paths are mapped."""

    def __init__(self, ordered: dict[str, list], **tpe):
        super().__init__(**tpe)
        self._ordered = ordered

    def sample_relative(self, study, trial, search_space):
        in_order = {name: self._in_order(name, d) for name, d in search_space.items()}
        sampled = super().sample_relative(study, trial, in_order)
        return {name: self._value(name, value, search_space[name]) for name, value in sampled.items()}

    def _in_order(self, name: str, distribution):
        choices = self._ordered.get(name)
        if choices is None or not isinstance(distribution, CategoricalDistribution):
            return distribution
        return IntDistribution(0, len(choices) - 1)

    def _value(self, name: str, sampled, distribution):
        ordered = name in self._ordered and isinstance(distribution, CategoricalDistribution)
        return self._ordered[name][sampled] if ordered else sampled

    def sample_independent(self, study, trial, param_name, param_distribution):
        in_order = self._in_order(param_name, param_distribution)
        sampled = super().sample_independent(study, trial, param_name, in_order)
        return self._value(param_name, sampled, param_distribution)

    def past_params(self, params: dict) -> dict:
        return {name: self._position(name, value) for name, value in params.items()}

    def _position(self, name: str, value):
        choices = self._ordered.get(name)
        return choices.index(value) if choices is not None and value in choices else value


def startup_trials(trials: int, promoting: bool = False) -> int:
    """TPE's random start: a quarter of the budget, at least 2 and at most Optuna's default of 10 (under the promotion
    variant, `promoting`, at most `PROMOTING_STARTUP`)."""
    return max(2, min(PROMOTING_STARTUP if promoting else 10, trials // 4))


def make_sampler(
    sampler: str, seed: int, startup: int, ordered: dict | None = None, **tpe
) -> RandomSampler | TPESampler:
    """`startup`: TPE's random start in finished trials (`startup_trials`, plus the configurations given first);
    `ordered`: the choices among numbers the study holds as values, which TPE models in order; `tpe`: more of
    `TPESampler`'s settings (the benchmarks' variants), and `good_share` (GoodShareHook)."""
    if sampler == "random":
        return RandomSampler(seed=seed)
    if ordered:
        return OrderedTPESampler(ordered, seed=seed, n_startup_trials=startup, **tpe)
    return WindowTPESampler(seed=seed, n_startup_trials=startup, **tpe)
