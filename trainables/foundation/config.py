"""Typed configuration of a search, parsed from `key=value` overrides; each field's docstring is its `--help` line.
No Ray, no torch."""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from dataclasses import dataclass, field
from typing import Any

from trainables.foundation.config_sections import (  # default_data_root: imported from here too
    DataConfig,
    ModelConfig,
    TrackingConfig,
    default_data_root,  # noqa: F401
    require,
)
from trainables.foundation.errors import UsageError
from trainables.foundation.schedules import cycle_ends

# Keys an experiment's search.json may hold from an earlier version, no longer used (`resume` reads such files).
RETIRED_KEYS = {"prefetch"}
PRECISIONS = ("fp32", "bf16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
SAMPLERS = ("tpe", "random")
ASHA_RULES = ("auto", "promote", "stop")  # auto: promote with one objective (search.commands: a rung, 2+ trials)


@dataclass
class RunConfig:
    space: str = ""
    """Search space: a name from `python -m search spaces`, a .py file or a module path."""
    name: str = ""
    """Experiment name, the folder under storage (default: <space>-<date>-<time>)."""
    storage: str = "./runs"
    """Where experiments go: a folder (on a cluster, one every node mounts) or a pyarrow.fs URI like s3://bucket/runs."""
    trials: int = 12
    """Number of trials (hyperparameter configurations) to run; with epoch_budget= and no trials=, the budget rules."""
    epochs: int = 3
    """Maximum epochs per trial."""
    grace: int = 0
    """ASHA grace period: epochs every trial runs before it may be stopped; 0: one epoch past the lr warm-up, and
    at least 2 in trials of 6 epochs or more, but where the search may promote and reduction= is not given."""
    reduction: float = 3.0
    """ASHA reduction factor: at each rung only the best 1/reduction go on (3; 2 where the search may promote,
    asha=promote or one trial `resume` may grow into it, and neither grace= nor reduction= is given)."""
    asha: str = "auto"
    """ASHA at a rung: promote (auto with one objective, a rung and 2+ trials, or a one-trial search `resume` grows;
    its promotion variant: a trial pauses at each rung, and a free place first resumes the best paused trial in the
    top 1/reduction of its rung, from its checkpoint, else starts a new one; once none is left to start and none
    runs, the best paused one goes on until a trial has ended completed), or stop (auto otherwise: several
    objectives, no rung or one trial; Tune's ASHAScheduler: a trial below the rung's cutoff so far stops there)."""
    rung_cycles: bool = False
    """Restart an annealing lr schedule (onecycle, cosine) at each ASHA rung, so that rungs compare annealed scores."""
    workers: int | None = None
    """Distributed (DDP) training workers per trial (auto: 2 with 2+ GPUs or 8+ cores a node, else 1)."""
    cpus: float | None = None
    """CPUs per training worker (auto: a node's cores split among the workers sharing it)."""
    gpus: float | None = None
    """GPU share per training worker (auto: 1 for DDP trials, 0.25 for one-worker trials, 0 without GPUs)."""
    concurrency: int = 0
    """Trials running side by side (0: as many as the cluster fits)."""
    in_process: bool = True
    """A one-worker trial trains inside its Tune trial process, reused for the next trial (false: a Train worker)."""
    precision: str = "fp32"
    """fp32, or bf16: training steps under bfloat16 autocast (evaluation stays fp32, like the exported model)."""
    channels_last: bool = False
    """Images and convolution weights in channels_last memory layout (faster convolutions on recent GPUs)."""
    compile: bool = False
    """Compile each trial's model for training with torch.compile (its first epoch pays for compiling)."""
    compile_mode: str = "default"
    """torch.compile's mode: default, reduce-overhead (CUDA graphs: small models on a GPU) or max-autotune."""
    sampler: str = "tpe"
    """How Optuna proposes trials: tpe (a quarter of the trials, 2 to 10, at random, then Optuna's TPE; under
    asha=promote 2 to 4, and TPE's good group the best 5%; with one objective, TPE up to the 37th trial and every trial
    from the 38th on at random), random."""
    objectives: str = ""
    """What to optimize, primary first: the space's metric alone (default), or several of val_acc, val_loss, params,
    macs, latency_ms, e.g. val_acc,params: a multi-objective search with a Pareto front."""
    seed: int = 0
    """Seed of the searcher (Optuna TPE) and of every trial's training."""
    epoch_budget: int = 0
    """Trial-epochs the whole search may spend (default 0: none, trials= decides): trials are proposed until it is
    spent, so the epochs ASHA saves buy more trials (trials= still caps, and is lifted when not given); the trials
    it cuts end stopped_by_budget, and `resume epoch_budget=N` with more continues them."""
    time_budget: float = 0.0
    """Seconds for each `run` or `resume`, from its first trial's start; trials then training end stopped_by_budget
    and a later `resume` continues them (0: no limit)."""
    enqueue: str = ""
    """Configurations to run first: a JSON list of {hyperparameter: value}, or a finished experiment folder."""
    enqueue_top: int = 3
    """With enqueue=EXPERIMENT: how many of its best trials to run first."""
    address: str = ""
    """Ray cluster to join: auto or host:port (default: $RAY_ADDRESS, else a local instance)."""
    checkpoints: int = 2
    """Checkpoints kept per trial, the best ones by the metric."""
    max_failures: int = 0
    """Times a trial restarts its worker group after a worker dies, per run: a trial resumed after an ASHA pause
    (asha=promote) has them anew."""
    room_wait: float = 60.0
    """Seconds a multi-worker trial waits for its workers' resources before it fails naming what holds them."""
    verbose: int = 0
    """1: also show Ray's and Tune's own log lines (always in <experiment>/search.log)."""
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    fixed: dict = field(default_factory=dict, metadata={"cli": False})
    """Hyperparameters of the space fixed with key=value (removed from the search)."""
    trials_given: bool | None = field(default=None, metadata={"cli": False})
    """Whether the user gave trials= (it then caps an epoch budget); None: settings written before it was recorded."""
    asha_for_one: bool = field(default=False, metadata={"cli": False})
    """asha=auto stopped because the search had one trial: a `resume` that grows it promotes (search.commands)."""

    def __post_init__(self):
        if self.asha == "auto":  # the promotion variant ranks by one value; a Pareto search stops
            self.asha = "stop" if "," in self.objectives else "promote"
        for key in ("trials", "epochs", "enqueue_top", "checkpoints"):
            require(getattr(self, key) >= 1, f"{key}={getattr(self, key)}: must be >= 1")
        require(
            0 <= self.grace <= self.epochs,
            f"grace={self.grace}: must be between 1 and epochs={self.epochs}, or 0 (past the lr warm-up)",
        )
        require(self.reduction > 1, f"reduction={self.reduction:g}: must be > 1")
        require(self.workers is None or self.workers >= 1, f"workers={self.workers}: must be >= 1")
        require(self.cpus is None or self.cpus > 0, f"cpus={self.cpus}: must be > 0")
        require(self.gpus is None or self.gpus >= 0, f"gpus={self.gpus}: must be >= 0")
        require(self.concurrency >= 0, f"concurrency={self.concurrency}: must be >= 0 (0: as many as fit)")
        require(self.epoch_budget >= 0, f"epoch_budget={self.epoch_budget}: must be >= 0 trial-epochs (0: no limit)")
        require(self.time_budget >= 0, f"time_budget={self.time_budget:g}: must be >= 0 seconds (0: no limit)")
        require(self.max_failures >= 0, f"max_failures={self.max_failures}: must be >= 0")
        require(self.room_wait > 0, f"room_wait={self.room_wait:g}: must be > 0 seconds")
        choices = (("asha", ASHA_RULES), ("sampler", SAMPLERS), ("precision", PRECISIONS))
        for key, allowed in (*choices, ("compile_mode", COMPILE_MODES)):
            value = getattr(self, key)
            require(value in allowed, f"{key}={value}: allowed values are {', '.join(allowed)}")
        require(
            self.asha == "stop" or "," not in self.objectives,
            f"asha={self.asha} with objectives={self.objectives}: one objective only (asha=stop for several)",
        )
        require(self.verbose in (0, 1), f"verbose={self.verbose}: must be 0 or 1")
        require(
            self.name == "" or re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.name) is not None,
            f"name={self.name}: use letters, digits, '.', '_' and '-' only",
        )

    def may_promote(self) -> bool:
        """Whether the search promotes, or is one trial that a `resume` which grows it makes promote."""
        return self.asha == "promote" or self.asha_for_one

    def lr_cycle_ends(self) -> tuple[int, ...]:
        """Epochs where a trial's lr schedule ends a cycle: ASHA's rungs before the last epoch with `rung_cycles`."""
        return cycle_ends(self.epochs, self.grace, self.reduction) if self.rung_cycles else ()

    def constants(self, space) -> dict:
        """What every trial of the search shares: the space's constants and the hyperparameters fixed here."""
        return {**space.constants, **self.fixed}

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> RunConfig:
        values = {key: value for key, value in values.items() if key not in RETIRED_KEYS}
        values.setdefault("asha", "stop")  # settings written before the key: every search then stopped at a rung
        values["data"] = DataConfig(**values.get("data", {}))
        values["model"] = ModelConfig(**values.get("model", {}))
        values["tracking"] = TrackingConfig(**values.get("tracking", {}))
        return cls(**values)


def trials_given(run: dict) -> bool:
    """Whether a search's settings (`search.json`'s "run") had trials= given: as recorded, else guessed from them."""
    if run.get("trials_given") is not None:
        return bool(run["trials_given"])
    return bool(run.get("epoch_budget")) and run["trials"] != run["epoch_budget"]


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse_scalar(key: str, text: str, kind: type) -> Any:
    """Convert `text` to `kind` or raise a UsageError naming `key` and what is allowed."""
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered in _TRUE | _FALSE:
                return lowered in _TRUE
            raise ValueError
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        return text
    except ValueError:
        allowed = {bool: "true or false", int: "an integer", float: "a number"}[kind]
        raise UsageError(f"{key}={text}: expected {allowed}") from None


def _field_kinds(cls) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.metadata.get("cli", True)}


def _scalar_kind(hint) -> tuple[type, bool]:
    """(base type, accepts 'auto' for None) of a field's annotation."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return (args[0], True) if args else (hint, False)


SECTIONS = {"data": DataConfig, "model": ModelConfig, "tracking": TrackingConfig}


def section_key(section: str, sub: dataclasses.Field) -> str:
    """A section's key on the command line: `data.root`, or the bare section name for its head field."""
    return section if sub.metadata.get("bare") else f"{section}.{sub.name}"


def config_keys() -> dict[str, tuple[type, bool, str, str]]:
    """Every CLI key: (scalar kind, whether it takes `auto`, section or "" for a top-level key, field name)."""
    keys = {}
    for name, hint in _field_kinds(RunConfig).items():
        if dataclasses.is_dataclass(hint):
            for sub in dataclasses.fields(hint):
                if sub.metadata.get("cli", True):
                    keys[section_key(name, sub)] = (*_scalar_kind(_field_kinds(hint)[sub.name]), name, sub.name)
        else:
            keys[name] = (*_scalar_kind(hint), "", name)
    return keys


def split_override(arg: str) -> tuple[str, str]:
    if "=" not in arg or arg.startswith("="):
        raise UsageError(f"{arg}: expected key=value (see --help)")
    key, value = arg.split("=", 1)
    return key.strip(), value


def parse_overrides(args: list[str], hyperparameters: typing.Mapping[str, typing.Callable[[str], Any]] = {}):
    """Parse `key=value` words into a RunConfig; `hyperparameters`: parsers of the space's fixable names."""
    keys = config_keys()
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    fixed: dict[str, Any] = {}
    for arg in args:
        key, text = split_override(arg)
        if key in keys:
            kind, nullable, section, name = keys[key]
            value = None if nullable and text == "auto" else parse_scalar(key, text, kind)
            (sections[section] if section else top)[name] = value
        elif key in hyperparameters:
            fixed[key] = hyperparameters[key](text)
        else:
            close = difflib.get_close_matches(key, list(keys) + list(hyperparameters), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else "; see `python -m search run --help`"
            raise UsageError(f"{key}: unknown key{hint}")
    return RunConfig(**top, **{name: SECTIONS[name](**values) for name, values in sections.items()}, fixed=fixed)
