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
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from benchmarks.replay import DEFAULTS, _Named, asha_stops, end_in_study, grace_of, search_asha, study_searcher
from benchmarks.replay_peers import PEERS, make_peer
from search.results.score import standing_row
from search.running.asha.study_asha import SIGN
from search.running.proposals.late_random import LateRandomShare, late_random_every
from search.running.proposals.sampler import make_sampler, startup_trials
from search.running.proposals.study_setup import coding_for, sampler_for
from search.running.proposals.window import RecentAndBest
from search.running.study.coding import SpaceCoding
from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space
from trainables.foundation.trial_files import TRIAL_KEY

ARMS = ("search", "random_asha", "random", "search_no_asha", "search_hyperband")
ARMS += ("optuna_tpe_sh", "optuna_tpe_hyperband", "optuna_tpe_ordered_sh")
VARIANT_KEYS = ("grace", "reduction", "startup", "trials", "budget", "epoch_budget", "tpe", "coding", "grow")
VARIANT_KEYS += ("space", "once", "late", "asha", "gamma")  # space=choices: a grid; once=0: no OnceEach
ALLOWED = {"tpe": ("optuna", "endpoints"), "coding": ("values", "ordered"), "grow": ("1",)}
ALLOWED |= {"space": ("choices",), "once": ("0",), "late": tuple("0123456789"), "asha": ("promote",)}
ALLOWED |= {"gamma": ("0.05", "0.2"), "grace": tuple("0123456789"), "reduction": tuple("23456789")}
PROMOTING = ("gamma",)  # read by PromotingArm alone: with asha=promote (and startup, grace, reduction) only


class SideBySideArm:
    """The search's proposal path over an in-memory study, under its ASHA (or none); `settings`: parse_variant's."""

    def __init__(
        self, space: Space, sampler: str, seed: int, trials: int, epochs: int, asha=True, settings=None, concurrency=1
    ):
        settings = settings or {}
        startup = int(settings.get("startup", startup_trials(trials))) + (concurrency - 1) * ("grow" in settings)
        every = 0 if settings.get("tpe") == "optuna" else int(settings.get("late", late_random_every(sampler, 1)))
        if settings.get("tpe") == "optuna":  # Optuna's TPE as it comes, on the search's encoding, under its ASHA
            proposer = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        elif "coding" in settings:  # the search's TPE over the coding as given, numbers unordered in `values`
            proposer = make_sampler(sampler, seed, startup)
        else:  # over a finite space, each configuration once (search.running.proposals.unrun) unless once=0
            tpe = {"consider_endpoints": True} if settings.get("tpe") == "endpoints" else {}  # tpe=endpoints
            proposer = search_sampler(sampler, space, seed, startup, every=every, **tpe)
            proposer = getattr(proposer, "base", proposer) if settings.get("once") == "0" else proposer
        proposer = LateRandomShare(proposer, seed, every) if every and "coding" in settings else proposer
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


class PromotingArm:
    """ASHA's promotion variant: a trial pauses at each rung; a free slot resumes the best paused one in the top
    1/reduction of its rung not yet promoted (top rung first), else starts a new one, proposed by the search's TPE over
    a study built anew for each ask (finished: complete, at the score `run` writes; paused: pruned; running: running);
    `settings`: parse_variant's (none: `run`'s before families.RUNGS, as families named it; RUNGS: `run`'s since)."""

    def __init__(self, space: Space, seed: int, trials: int, epochs: int, settings: dict | None = None):
        settings, self.space, self.coding = settings or {}, space, coding_for(RunConfig(), space)
        startup = int(settings.get("startup", startup_trials(trials)))  # unset: a quarter, 2 to 10 (before RUNGS)
        share = float(settings.get("gamma", 0))  # TPE's good group: the best `share`, at most 25 (0: Optuna's)
        self.sampler, self.sign = search_sampler("tpe", space, seed, startup, good_share=share), SIGN[space.mode]
        self.reduction, grace = int(settings.get("reduction", DEFAULTS.reduction)), int(settings.get("grace", 0))
        rungs = rungs_of(space, epochs, self.reduction, min(grace, epochs))[:-1]
        self.rungs = {rung: {} for rung in rungs}  # rung -> trial id -> signed value there
        self.trials, self.promotions = {}, set()  # trial id -> {"config", "values", "state"}; (rung, trial id)

    def propose(self, trial_id: str) -> dict:
        self.trials[trial_id] = {"config": (config := self.ask()), "values": {}, "state": TrialState.RUNNING}
        return config

    def ask(self) -> dict:
        getattr(self.sampler, "base", self.sampler).model.window = RecentAndBest()  # read anew: states change here
        study = optuna.create_study(direction=direction(self.space), sampler=self.sampler)
        for trial in self.trials.values():
            state, values, config = trial["state"], trial["values"], {**self.space.constants, **trial["config"]}
            rows = [{"epoch": epoch, "m": value} for epoch, value in values.items()]
            value = standing_row(rows, config, "m", self.space.mode)["m"] if state == TrialState.COMPLETE else None
            made = dict(params=self.coding.to_params(trial["config"]), value=value, intermediate_values=values)
            study.add_trial(optuna.trial.create_trial(state=state, distributions=self.coding.distributions, **made))
        return self.coding.to_config(study.ask(self.coding.distributions).params)

    def promoted(self) -> str | None:
        for rung, points in sorted(self.rungs.items(), reverse=True):
            ranked = sorted(points, key=lambda trial_id: (-points[trial_id], int(trial_id)))
            waiting = [t for t in ranked[: len(points) // self.reduction] if (rung, t) not in self.promotions]
            if waiting:
                self.promotions.add((rung, waiting[0]))
                self.trials[waiting[0]]["state"] = TrialState.RUNNING
                return waiting[0]
        return None

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.trials[trial_id]["values"][epoch] = value
        self.rungs.get(epoch, {})[trial_id] = self.sign * value  # at a rung its point there; elsewhere nothing kept
        return epoch in self.rungs

    def end(self, trial_id: str, completed: bool) -> None:
        self.trials[trial_id]["state"] = TrialState.COMPLETE if completed else TrialState.PRUNED


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


def rungs_of(space: Space, epochs: int, reduction=DEFAULTS.reduction, grace=0) -> list[int]:
    """The epochs at which the search's ASHA compares trials (grace x reduction^k below the last), and the last."""
    rungs, rung = [], grace or grace_of(space, epochs)
    while rung < epochs:
        rungs.append(rung)
        rung = int(rung * reduction)
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
    the study holds numeric choices), grow=1 (a random start one trial longer per extra trial side by side),
    space=choices (a grid), once=0 (not once each), late=K (K-th past 36 random; 0 none), asha=promote (PromotingArm;
    alone or with startup, gamma: TPE's good share, at most 25, grace, reduction: its rungs, the share that goes on)."""
    name, *pairs = arm.split("|")
    settings = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    unknown = settings.keys() - VARIANT_KEYS or len(settings) < len(pairs)
    bad_value = any(value not in ALLOWED.get(key, (value,)) for key, value in settings.items())
    bad_value = bad_value or "late" in settings and (name != "search" or settings.get("tpe") == "optuna")
    shared = {"asha", "startup", "grace", "reduction", *PROMOTING}  # what the variant's arm reads
    promoting = name == "search" and "asha" in settings and not settings.keys() - shared
    bad_value = bad_value or bool({"asha", *PROMOTING} & settings.keys()) and not promoting
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
    if settings.get("asha") == "promote":
        return PromotingArm(space, seed, trials, epochs, settings)
    if arm in ("search", "random_asha", "search_no_asha", "random"):  # a variant's settings: search, random_asha only
        sampler, asha = "random" if arm.startswith("random") else DEFAULTS.sampler, arm in ("search", "random_asha")
        return SideBySideArm(space, sampler, seed, trials, epochs, asha, settings, concurrency)
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
