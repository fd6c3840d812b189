"""What a search's driver says: its first line, the time budget's end, why it has no result; and where the log
lines of Ray, Tune, Optuna and MLflow go. No Ray."""

from __future__ import annotations

import logging
import os
import shlex
import time
from pathlib import Path

from search.running.proposals.unrun import configurations_words
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import ERROR_FILE, TRIAL_DIR_PREFIX


def first_line_words(
    config: RunConfig, to_run: int, record: StudyRecord, asked: int | None = None, count: int | None = None
) -> str:
    """`config.trials`: the trials the search runs at most; `asked`: those asked for, more where the space holds
    `count` configurations, each proposed once."""
    done, asked = record.finished(), asked or config.trials
    notes = [f"{done} done before"] if done else []
    notes += [f"the space holds {configurations_words(count or 0)}, each run once"] if config.trials < asked else []
    said = f" ({'; '.join(notes)})" if notes else ""
    if config.epoch_budget and asked >= config.epoch_budget:  # the budget decides the trials
        at_most = f", at most {config.trials}" if config.trials < asked else ""
        return f"trials until {config.epoch_budget} trial-epochs are spent{at_most}{said}"
    if not done and to_run == config.trials:
        return ("1 trial" if to_run == 1 else f"{config.trials} trials") + said  # one configuration: one trial
    return f"{to_run} of {config.trials} trials{said}"


def no_result_message(summary: dict, experiment: Experiment, log_file: Path) -> str:
    """Why a search has no result, naming the first failed trial's root cause."""
    failed = [trial for trial in summary["trials"] if trial.get("error")]
    if not failed:
        return f"no trial produced a checkpoint; see {log_file}"
    first = failed[0]
    every = "every trial failed" if len(failed) == len(summary["trials"]) else f"{len(failed)} trials failed"
    error_file = experiment.join(f"{TRIAL_DIR_PREFIX}{first['trial_id']}", ERROR_FILE)
    first_words = f"the first, trial {first['trial_id']}: {first['error']}"
    return f"no trial produced a checkpoint: {every}; {first_words} (see {error_file})"


def budget_words(deadline: float) -> None:
    """The time budget's end, when its clock starts (the first trial's start): on the terminal, and in the log as
    a Unix time."""
    print(f"time budget: {time.strftime('%H:%M:%S', time.localtime(deadline))} (the trials still training then stop)")
    logging.getLogger("ray.search").info("time budget ends at %.3f", deadline)


def route_logs(log_file: Path, verbose: int) -> None:
    """Ray's, Tune's and Optuna's log lines go to the experiment's log file (and the terminal if verbose)."""
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # the legacy reporter is really silent at verbose=0
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"  # our own TensorBoard events replace Tune's
    handlers = [logging.FileHandler(log_file)] + ([logging.StreamHandler()] if verbose else [])
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("ray", "py.warnings", "optuna", "mlflow"):
        logger = logging.getLogger(name)
        logger.handlers = list(handlers)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    logging.captureWarnings(True)


def asha_words(config: RunConfig) -> str:
    if config.grace >= config.epochs:
        return ""
    ends = config.lr_cycle_ends()
    restarts = f" (lr cycles end at epoch {', '.join(map(str, ends))})" if ends else ""
    variant = "ASHA (promotion variant)" if config.asha == "promote" else "ASHA"
    return f"{variant} from epoch {config.grace} of {config.epochs}{restarts}, "


NEXT_COMMANDS = ("report", "export", "tensorboard", "dashboard")  # what a user does with a finished search


def next_commands_words(location: str) -> str:
    """The last lines of a finished search: the commands that read it next, with its path (quoted for the shell)."""
    commands = [f"python -m search {name} {shlex.quote(location)}" for name in NEXT_COMMANDS]
    return "next: " + "\n      ".join(commands)
