"""The arms `benchmarks.replay_cli` replays, each proposing while other trials run and told each epoch as it ends:
propose(trial_id) -> config, tell(trial_id, epoch, value) -> stop?, end(trial_id, completed).

Every arm has the search's random start and, where it stops trials, the search's grace and reduction factor:
  search                 the search's sampler and Tune's ASHA, as `python -m search run` sets them up
  random_asha            random proposals, the same ASHA
  random                 random proposals, every trial to the last epoch (normalised regret's 1)
  search_no_asha         the search's sampler, every trial to the last epoch
  search_hyperband       the search's sampler + Optuna's `HyperbandPruner`
  optuna_tpe_sh          Optuna's `TPESampler` + `SuccessiveHalvingPruner`, ask and tell
  optuna_tpe_hyperband   Optuna's `TPESampler` + `HyperbandPruner`
  optuna_tpe_ordered_sh  Optuna's TPE + successive halving on the ordered encoding of numeric choices (positions)
  rung_tpe_asha          a TPE model per rung, as BOHB fits one per budget, under the search's ASHA: not BOHB
"""

from __future__ import annotations

import optuna

from benchmarks.replay import DEFAULTS, _Named, asha_stops, end_in_study, grace_of, search_asha, study_searcher
from benchmarks.replay_peers import PEERS, make_peer
from search.running.proposals.late_random import LateRandomShare, late_random_every
from search.running.proposals.sampler import OrderedTPESampler, make_sampler, startup_trials
from search.running.proposals.study_setup import coding_for, sampler_for
from search.running.study.coding import SpaceCoding, ordered_choices
from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space
from trainables.foundation.trial_files import TRIAL_KEY

ARMS = ("search", "random_asha", "random", "search_no_asha", "search_hyperband")
ARMS += ("optuna_tpe_sh", "optuna_tpe_hyperband", "optuna_tpe_ordered_sh", "rung_tpe_asha")
VARIANT_KEYS = ("grace", "reduction", "startup", "trials", "budget", "epoch_budget", "tpe", "coding", "liar", "grow")
VARIANT_KEYS += ("space", "once", "late")  # space=choices: the grid as choices (finite); once=0: no OnceEach; late=K
ALLOWED = {"tpe": ("optuna", "endpoints"), "coding": ("values", "ordered"), "liar": ("0",), "grow": ("1",)}
ALLOWED |= {"space": ("choices",), "once": ("0",), "late": tuple("0123456789")}  # a variant key's values, where few


class SideBySideArm:
    """The search's proposal path over an in-memory study, under its ASHA (or none); `settings`: parse_variant's."""

    def __init__(
        self, space: Space, sampler: str, seed: int, trials: int, epochs: int, asha=True, settings=None, concurrency=1
    ):
        settings = settings or {}
        startup = int(settings.get("startup", startup_trials(trials))) + (concurrency - 1) * ("grow" in settings)
        every = 0 if settings.get("tpe") == "optuna" else int(settings.get("late", late_random_every(sampler, 1)))
        if settings.get("liar") == "0":
            coding = coding_for(RunConfig(sampler=sampler), space)
            ordered = {} if coding.ordered else ordered_choices(coding.space)  # as sampler_for models them
            proposer = OrderedTPESampler(ordered, seed=seed, n_startup_trials=startup, constant_liar=False)
        elif settings.get("tpe") == "optuna":  # Optuna's TPE as it comes, on the search's encoding, under its ASHA
            proposer = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        elif "coding" in settings:  # the search's TPE over the coding as given, numbers unordered in `values`
            proposer = make_sampler(sampler, seed, startup)
        else:  # over a finite space, each configuration once (search.running.proposals.unrun) unless once=0
            tpe = {"consider_endpoints": True} if settings.get("tpe") == "endpoints" else {}  # tpe=endpoints
            proposer = search_sampler(sampler, space, seed, startup, every=every, **tpe)
            proposer = getattr(proposer, "base", proposer) if settings.get("once") == "0" else proposer
        proposer = LateRandomShare(proposer, seed, every) if every and {"liar", "coding"} & set(settings) else proposer
        self.searcher = study_searcher(space, proposer, epochs, order_numbers=coding_orders(settings, sampler, space))
        self.scheduler, self.metric = (search_asha(space, epochs, settings) if asha else None), space.metric

    def propose(self, trial_id: str) -> dict:
        if self.scheduler:
            self.scheduler.on_trial_add(None, _Named(trial_id))
        config = self.searcher.suggest(trial_id)
        return {name: value for name, value in config.items() if name != TRIAL_KEY}

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.searcher.on_trial_result(trial_id, result := {"epoch": epoch, self.metric: value})
        return bool(self.scheduler) and asha_stops(self.scheduler, trial_id, result)

    def end(self, trial_id: str, completed: bool) -> None:
        if self.scheduler:
            self.scheduler.on_trial_remove(None, _Named(trial_id))
        self.searcher.on_trial_complete(trial_id)
        end_in_study(self.searcher.record, trial_id, completed)


class OptunaArm:
    """Optuna's ask and tell with one of its pruners, trials side by side: the loop a user of Optuna writes."""

    def __init__(self, space: Space, sampler, pruner, ordered: bool, seed: int):
        self.coding = SpaceCoding(space.hyperparameters, order_numbers=ordered)
        self.study = optuna.create_study(  # Hyperband's brackets: a hash of the study's name and the trial's number
            study_name=f"replay-{seed}", direction=direction(space), sampler=sampler, pruner=pruner
        )
        self.trials, self.last = {}, {}

    def propose(self, trial_id: str) -> dict:
        self.trials[trial_id] = self.study.ask(self.coding.distributions)
        return self.coding.to_config(self.trials[trial_id].params)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.trials[trial_id].report(value, epoch)
        self.last[trial_id] = value
        return self.trials[trial_id].should_prune()

    def end(self, trial_id: str, completed: bool) -> None:
        trial, value = self.trials.pop(trial_id), self.last.pop(trial_id)
        if completed:
            self.study.tell(trial, value)
        else:
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)


class RungTpeAsha:
    """A model per rung over asynchronous rungs (BOHB's idea, with TPE and ASHA): one study per rung holds every
    trial's value there; a proposal comes from the highest rung with at least `startup` values (random before)."""

    def __init__(self, space: Space, seed: int, trials: int, epochs: int):
        self.coding = SpaceCoding(space.hyperparameters, order_numbers=coding_orders({}, DEFAULTS.sampler, space))
        self.startup, self.rungs = startup_trials(trials), rungs_of(space, epochs)
        samplers = [search_sampler(DEFAULTS.sampler, space, seed + i, 0, every=0) for i in range(len(self.rungs))]
        studies = [optuna.create_study(direction=direction(space), sampler=s) for s in samplers]
        self.studies = dict(zip(self.rungs, studies))
        self.random = optuna.create_study(sampler=make_sampler("random", seed, 0))
        self.scheduler, self.metric = search_asha(space, epochs), space.metric
        self.asked, self.params = {}, {}  # trial -> (its proposing rung, the asked trial); trial -> its params

    def propose(self, trial_id: str) -> dict:
        self.scheduler.on_trial_add(None, _Named(trial_id))
        rung = max((r for r in self.rungs if len(self._values_at(r)) >= self.startup), default=0)
        trial = (self.studies[rung] if rung else self.random).ask(self.coding.distributions)
        self.asked[trial_id], self.params[trial_id] = (rung, trial), dict(trial.params)
        return self.coding.to_config(trial.params)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        if epoch in self.studies:
            self._record(trial_id, epoch, value)
        return asha_stops(self.scheduler, trial_id, {"epoch": epoch, self.metric: value})

    def end(self, trial_id: str, completed: bool) -> None:
        self.scheduler.on_trial_remove(None, _Named(trial_id))
        rung, trial = self.asked.pop(trial_id, (0, None))
        if trial is not None:  # ended short of its proposing rung: left out, as BOHB leaves a budget's unobserved
            (self.studies[rung] if rung else self.random).tell(trial, state=optuna.trial.TrialState.FAIL)

    def _record(self, trial_id: str, rung: int, value: float) -> None:
        asked_rung, trial = self.asked.get(trial_id, (0, None))
        if asked_rung == rung and trial is not None:
            self.studies[rung].tell(trial, value)
            del self.asked[trial_id]
            return
        distributions = self.coding.distributions
        made = optuna.trial.create_trial(params=self.params[trial_id], distributions=distributions, value=value)
        self.studies[rung].add_trial(made)

    def _values_at(self, rung: int) -> list:
        return self.studies[rung].get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def rungs_of(space: Space, epochs: int) -> list[int]:
    """The epochs at which the search's ASHA compares trials (grace x reduction^k below the last), and the last."""
    rungs, rung = [], grace_of(space, epochs)
    while rung < epochs:
        rungs.append(rung)
        rung = int(rung * DEFAULTS.reduction)
    return [*rungs, epochs]


def search_sampler(sampler: str, space: Space, seed: int, startup: int, **tpe):
    """The search's sampler as `run` sets it up, its late random share too (`tpe`: TPESampler's settings, `every`)."""
    tpe, coding = {"every": late_random_every(sampler, 1), **tpe}, coding_for(RunConfig(sampler=sampler), space)
    return sampler_for(sampler, coding, seed, startup, **tpe)


def coding_orders(settings: dict, sampler: str, space: Space) -> bool:
    """Whether the study holds a numeric choice's position, not its value: the variant's coding, else the search's."""
    if "coding" in settings:
        return settings["coding"] == "ordered"
    return coding_for(RunConfig(sampler=sampler), space).distributions != space.hyperparameters


def parse_variant(arm: str) -> tuple[str, dict]:
    """`search|reduction=2|grace=2` -> ("search", {"reduction": "2", "grace": "2"}); keys: grace, reduction,
    startup (the random start in trials), the stop rule (trials, budget: so many full trials' epochs, epoch_budget),
    tpe=optuna (Optuna's TPESampler defaults) or endpoints (consider_endpoints=True), coding (values or ordered: how
    the study holds numeric choices), liar=0 (no constant liar), grow=1 (a random start one trial longer per extra
    trial side by side), space=choices (a grid), once=0 (not once each), late=K (K-th past 36 random; 0 none)."""
    name, *pairs = arm.split("|")
    settings = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    unknown = settings.keys() - VARIANT_KEYS or len(settings) < len(pairs)
    bad_value = any(value not in ALLOWED.get(key, (value,)) for key, value in settings.items())
    bad_value = bad_value or "late" in settings and (name != "search" or settings.get("tpe") == "optuna")
    if unknown or bad_value or (pairs and name not in ("search", "random_asha")) or name not in ARMS + tuple(PEERS):
        raise ValueError(
            f"{arm}: an arm of {', '.join(ARMS + tuple(PEERS))}, or search|KEY=VALUE|... with keys "
            f"{', '.join(VARIANT_KEYS)}"
        )
    return name, settings


def make_arm(arm: str, space: Space, seed: int, trials: int, epochs: int, concurrency: int = 1):
    """`arm` for a search of `trials` trials of at most `epochs` epochs, `concurrency` of them side by side."""
    arm, settings = parse_variant(arm)
    if arm in PEERS:  # the field's optimizers, their own code (benchmarks.replay_peers)
        return make_peer(arm, space, seed, epochs)
    if arm in ("search", "random_asha", "search_no_asha", "random"):  # a variant's settings: search, random_asha only
        sampler, asha = "random" if arm.startswith("random") else DEFAULTS.sampler, arm in ("search", "random_asha")
        return SideBySideArm(space, sampler, seed, trials, epochs, asha, settings, concurrency)
    if arm == "rung_tpe_asha":
        return RungTpeAsha(space, seed, trials, epochs)
    startup, grace = startup_trials(trials), grace_of(space, epochs)
    rules = dict(min_resource=grace, reduction_factor=int(DEFAULTS.reduction))
    if arm.endswith("hyperband"):
        pruner = optuna.pruners.HyperbandPruner(max_resource=epochs, **rules)
    else:
        pruner = optuna.pruners.SuccessiveHalvingPruner(**rules)
    if arm == "search_hyperband":
        sampler = search_sampler(DEFAULTS.sampler, space, seed, startup)  # the search's, on the search's coding
        return OptunaArm(space, sampler, pruner, coding_orders({}, DEFAULTS.sampler, space), seed)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)  # Optuna's defaults, the same start
    return OptunaArm(space, sampler, pruner, arm == "optuna_tpe_ordered_sh", seed)


def direction(space: Space) -> str:
    return "maximize" if space.mode == "max" else "minimize"
