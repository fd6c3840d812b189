"""The field's multi-fidelity optimizers as replay arms, each through its own ask and tell (benchmarks only: `pip
install -e ".[peers]"`): `peer_dehb` DEHB; `peer_smac` SMAC3's MultiFidelityFacade (random forest, Hyperband);
`peer_synetune_bohb` Syne Tune's BOHB (kernel densities over asynchronous successive halving: 0.16 ships no
HyperTune or MOBSTER); `peer_priorband` NePS's PriorBand, its prior each range's centre (a log-scaled float's log
centre, the middle choice: the spaces name no defaults). Fidelity: epochs 1 to the table's last, reduction 3.

A bracket method (DEHB, SMAC, PriorBand) asks a configuration and a budget; the replay trains it from the first epoch
to that budget (a promotion starts again, as these tools do without checkpoints) and tells it the error there.
"""

from __future__ import annotations

import importlib.metadata
import random
import tempfile
from pathlib import Path

import numpy
from optuna.distributions import CategoricalDistribution, IntDistribution

from trainables.foundation.space import Space

PEERS = {"peer_dehb": "dehb", "peer_smac": "smac", "peer_synetune_bohb": "syne-tune"}
PEERS["peer_priorband"] = "neural-pipeline-search"
ETA = 3


def versions() -> dict[str, str]:
    """Each peer's installed version, or that it is missing: every results JSON with a peer names them."""
    return {name: installed(name) for name in PEERS.values()}


def installed(distribution: str) -> str:
    return next((d.version for d in importlib.metadata.distributions(name=distribution)), "not installed")


def config_space(space: Space, seed: int):
    """The space as ConfigSpace's; categoricals as text, mapped back by `back`."""
    from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer

    made = ConfigurationSpace(seed=seed)
    for name, d in space.hyperparameters.items():
        if isinstance(d, CategoricalDistribution):
            made.add(Categorical(name, [str(choice) for choice in d.choices]))
        else:
            made.add((Integer if isinstance(d, IntDistribution) else Float)(name, (d.low, d.high), log=d.log))
    return made


def back(space: Space, config) -> dict:
    """A peer's configuration in the space's own types (a categorical's choice, not its text)."""
    out = {}
    for name, d in space.hyperparameters.items():
        if isinstance(d, CategoricalDistribution):
            out[name] = next(choice for choice in d.choices if str(choice) == str(config[name]))
        else:
            out[name] = (int if isinstance(d, IntDistribution) else float)(config[name])
    return out


class BracketArm:
    """A peer that asks (configuration, budget in epochs, its token) and is told (token, error, budget)."""

    def __init__(self, space: Space, ask, tell, keep=None):
        self.space, self.ask, self.told, self.keep, self.running = space, ask, tell, keep, {}

    def propose(self, trial_id: str) -> dict:
        config, budget, token = self.ask()
        self.running[trial_id] = [round(float(budget)), token, None]
        return back(self.space, config)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.running[trial_id][2] = value
        return epoch >= self.running[trial_id][0]

    def end(self, trial_id: str, completed: bool) -> None:
        budget, token, value = self.running.pop(trial_id)
        self.told(token, 1.0 - value if self.space.mode == "max" else value, budget)


class SyneTuneArm:
    """Syne Tune's BOHB, told every epoch; its stop decisions end trials."""

    def __init__(self, space: Space, seed: int, epochs: int):
        from syne_tune.config_space import choice, loguniform, randint, uniform
        from syne_tune.optimizer.baselines import BOHB

        def domain(d):
            if isinstance(d, CategoricalDistribution):
                return choice([str(c) for c in d.choices])
            return (randint if isinstance(d, IntDistribution) else loguniform if d.log else uniform)(d.low, d.high)

        domains = {name: domain(d) for name, d in space.hyperparameters.items()}
        random.seed(seed), numpy.random.seed(seed)  # its density model samples from the global generators too
        self.space, self.trials, self.sign = space, {}, -1.0 if space.mode == "max" else 1.0
        self.scheduler = BOHB(domains, "error", "epoch", epochs, random_seed=seed, reduction_factor=ETA)

    def propose(self, trial_id: str) -> dict:
        from syne_tune.backend.trial_status import Trial

        self.trials[trial_id] = Trial(int(trial_id), self.scheduler.suggest().config, None)  # no clock in a replay
        self.scheduler.on_trial_add(self.trials[trial_id])
        return back(self.space, self.trials[trial_id].config)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.last = {"epoch": epoch, "error": self.sign * value}
        return self.scheduler.on_trial_result(self.trials[trial_id], self.last) == "STOP"

    def end(self, trial_id: str, completed: bool) -> None:
        trial = self.trials.pop(trial_id)
        self.scheduler.on_trial_complete(trial, self.last) if completed else self.scheduler.on_trial_remove(trial)


def dehb_arm(space: Space, seed: int, epochs: int) -> BracketArm:
    from dehb import DEHB

    folder, cs = tempfile.TemporaryDirectory(prefix="dehb-"), config_space(space, seed)
    fidelities = {"min_fidelity": 1, "max_fidelity": epochs, "eta": ETA, "n_workers": 1}  # 1: no Dask cluster
    dehb = DEHB(cs=cs, dimensions=len(cs), seed=seed, output_path=folder.name, save_freq="end", **fidelities)
    ask = lambda: (lambda job: (job["config"], job["fidelity"], job))(dehb.ask())  # noqa: E731
    return BracketArm(space, ask, lambda job, error, budget: dehb.tell(job, {"fitness": error, "cost": budget}), folder)


def smac_arm(space: Space, seed: int, epochs: int) -> BracketArm:
    from smac import MultiFidelityFacade as Facade
    from smac import Scenario
    from smac.runhistory.dataclasses import TrialValue

    folder, cs = tempfile.TemporaryDirectory(prefix="smac-"), config_space(space, seed)
    budgets = {"min_budget": 1, "max_budget": epochs, "output_directory": Path(folder.name)}
    scenario = Scenario(cs, deterministic=True, n_trials=10**6, seed=seed, **budgets)
    intensifier = Facade.get_intensifier(scenario, eta=ETA)  # Hyperband
    smac = Facade(scenario, lambda config, seed, budget: 0.0, intensifier=intensifier, logging_level=40)
    ask = lambda: (lambda info: (info.config, info.budget, info))(smac.ask())  # noqa: E731
    return BracketArm(space, ask, lambda info, error, _: smac.tell(info, TrialValue(cost=error), save=False), folder)


def priorband_arm(space: Space, seed: int, epochs: int) -> BracketArm:
    import neps
    import torch
    from neps.optimizers.algorithms import priorband
    from neps.optimizers.ask_and_tell import AskAndTell
    from neps.space.parsing import convert_mapping

    def centred(d):
        if isinstance(d, CategoricalDistribution):
            return neps.Categorical(list(d.choices), prior=d.choices[len(d.choices) // 2], prior_confidence="medium")
        centre = (d.low * d.high) ** 0.5 if d.log else (d.low + d.high) / 2
        if isinstance(d, IntDistribution):
            return neps.Integer(d.low, d.high, log=d.log, prior=round(centre), prior_confidence="medium")
        return neps.Float(d.low, d.high, log=d.log, prior=centre, prior_confidence="medium")

    random.seed(seed), numpy.random.seed(seed), torch.manual_seed(seed)  # PriorBand samples with all three
    parameters = {name: centred(d) for name, d in space.hyperparameters.items()}
    asker = AskAndTell(priorband(convert_mapping({**parameters, "epoch": neps.Integer(1, epochs, is_fidelity=True)})))
    ask = lambda: (lambda trial: (trial.config, trial.config["epoch"], trial.id))(asker.ask())  # noqa: E731
    return BracketArm(space, ask, lambda trial_id, error, _: asker.tell(trial_id, error))


def make_peer(arm: str, space: Space, seed: int, epochs: int):
    """Peer `arm` for a replay of `space` at `epochs` epochs."""
    makers = {"peer_dehb": dehb_arm, "peer_smac": smac_arm, "peer_synetune_bohb": SyneTuneArm}
    return makers.get(arm, priorband_arm)(space, seed, epochs)
