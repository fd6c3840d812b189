"""How `resume ... trials=N` grows a search: what its study holds so far, and which stop rule binds.

A search run under the default stop rule (neither trials= nor epoch_budget= given: the epochs of 8 full trials,
the trial count lifted) grows to N trials in all when `resume` is given trials=N alone: the default budget is lifted,
as if the search had been run with trials=N. A budget the user gave stands; when it is already spent, `resume`
says so in one line before any trial starts and names how to lift it (exit 2): no command exits 0 having done
nothing. An explicit epoch_budget equal to the default (8 x epochs, trials not given) cannot be told from the
default and is grown the same way. Optuna only: no Ray, no torch.
"""

from __future__ import annotations

from pathlib import Path

import optuna

from search.running.journal import STUDY_NAME, journal_storage
from search.running.study_trials import CONTINUES_ATTR, epoch_values, trial_id_of
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import STUDY_FILE

DEFAULT_FULL_TRIALS = RunConfig.trials  # the default stop rule: the epochs of this many full trials


def study_so_far(folder: Path) -> tuple[int, int]:
    """(trials proposed, trial-epochs spent) as the study in experiment folder `folder` holds them, read as a reader."""
    path = folder / STUDY_FILE
    if not path.is_file():
        return 0, 0
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY_NAME, storage=journal_storage(path))
    trials = [t for t in study.get_trials(deepcopy=False) if trial_id_of(t)]
    continued = {t.user_attrs[CONTINUES_ATTR] for t in trials if CONTINUES_ATTR in t.user_attrs}
    standing = [t for t in trials if t.number not in continued]
    return len(standing), sum(max(epoch_values(t), default=0) for t in standing)


def under_default_budget(before: dict) -> bool:
    """Whether the search ran under the default stop rule (its budget the epochs of 8 full trials, trials lifted)."""
    budget = before.get("epoch_budget", 0)
    return bool(budget) and budget == DEFAULT_FULL_TRIALS * before["epochs"] and before["trials"] == budget


def grow(before: dict, config: RunConfig, options: dict, trials_so_far: int, epochs_spent: int) -> RunConfig:
    """`config` (the search's settings with `resume`'s keys applied) with the stop rule `resume` grows it by."""
    if "trials" in options and "epoch_budget" not in options and under_default_budget(before):
        config.epoch_budget = 0  # the default budget lifted: trials=N decides, as if the search had been run so
    if int(options.get("trials", 0) or 0) and int(options["trials"]) < trials_so_far:
        raise UsageError(
            f"trials={options['trials']}: the search already has {trials_so_far} trials; give more to grow it"
        )
    if "trials" in options and config.epoch_budget and epochs_spent >= config.epoch_budget:
        raise UsageError(
            f"trials={options['trials']}: the search's epoch budget of {config.epoch_budget} trial-epochs is spent "
            f"({epochs_spent} trained); give epoch_budget=N with a larger N to grow it, or epoch_budget=0 to lift it"
        )
    return config
