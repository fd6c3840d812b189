"""How `resume ... trials=N` grows a search: what its study holds so far, and which stop rule binds (a search started
under the former default epoch budget has it lifted by trials=N; a budget the user gave stands, and a spent one is
refused in one line naming how to lift it: docs/budgets.md). Optuna only: no Ray, no torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from search.running.study.journal import read_study
from search.running.study.queries import COUNT_DEFAULT_ATTR, StudyQueries
from trainables.foundation.config import RunConfig, trials_given
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import STUDY_FILE

# The former default stop rule spent the epochs of this many full trials; searches started under it still resume so
FORMER_DEFAULT_FULL_TRIALS = 8


class SoFar(NamedTuple):
    """What a search's study holds so far."""

    trials: int  # proposed (a continuation stands for the trial it continues)
    epochs_spent: int  # trial-epochs trained
    stopped_by_budget: int  # trials a budget stopped, which a resume continues
    under_count_default: bool = False  # created since the default became a trial count (COUNT_DEFAULT_ATTR)
    proposed: tuple = ()  # the proposed trials themselves: the configurations a finite space has left


def study_so_far(folder: Path) -> SoFar:
    """What the study in experiment folder `folder` holds, read as a reader."""
    path = folder / STUDY_FILE
    if not path.is_file():
        return SoFar(0, 0, 0)
    study, _ = read_study(path)
    queries = StudyQueries(study)
    trials, stopped = queries.proposed(), queries.stopped_by_budget()
    return SoFar(
        len(trials), queries.epochs_spent(), len(stopped), COUNT_DEFAULT_ATTR in study.user_attrs, tuple(trials)
    )


def refuse_idle(config: RunConfig, options: dict, so_far: SoFar, finite: tuple[int, int] | None = None) -> None:
    """A finished search that `resume` would not train a single epoch of: one line naming why and what grows it,
    exit 2, before anything is written (no command exits 0 having done nothing). `finite`: (the configurations a
    finite space holds, those no trial holds yet): each is proposed once."""
    given = " ".join(f"{key}={value}" for key, value in options.items()) or "no keys"
    if nothing_left(so_far, finite):
        raise UsageError(
            f"{given}: this search already ran every one of the {finite[0]} configurations its space holds; "
            + NOTHING_LEFT
        )
    if config.epoch_budget and so_far.epochs_spent >= config.epoch_budget:
        raise UsageError(
            f"{given}: this finished search has spent {so_far.epochs_spent} trial-epochs, all of an epoch budget of "
            f"{config.epoch_budget}; give epoch_budget=N with a larger N, or trials=N to grow it"
        )
    if so_far.trials >= config.trials and not so_far.stopped_by_budget:
        raise UsageError(
            f"{given}: this search already finished, with all of its {so_far.trials} trials ended and none stopped "
            "by a budget to continue; give trials=N or epoch_budget=N to grow it"
        )


NOTHING_LEFT = "nothing is left to search (a new run with a key unpinned or a wider range searches more)"


def nothing_left(so_far: SoFar, finite: tuple[int, int] | None) -> int:
    """The configurations a finite space holds when the search ran every one and no budget stopped a trial (nothing
    is left to search: `resume` grows it by nothing); else 0. `finite`: (configurations, those no trial holds)."""
    return finite[0] if finite is not None and finite[1] <= 0 and not so_far.stopped_by_budget else 0


def under_former_default_budget(before: dict, so_far: SoFar) -> bool:
    """Whether the search began under the former default stop rule (a budget of 8 full trials' epochs, trials lifted
    to it): its settings say so and its study predates the count default (a budget of 8 x epochs given since stands)."""
    budget = before.get("epoch_budget", 0)
    former = bool(budget) and budget == FORMER_DEFAULT_FULL_TRIALS * before["epochs"] and not trials_given(before)
    return former and not so_far.under_count_default


def grow(before: dict, config: RunConfig, options: dict, so_far: SoFar) -> RunConfig:
    """`config` (the search's settings with `resume`'s keys applied) with the stop rule `resume` grows it by."""
    if "trials" in options and "epoch_budget" not in options and under_former_default_budget(before, so_far):
        config.epoch_budget = 0  # the former default budget lifted: trials=N decides, as if the search had been run so
    if int(options.get("trials", 0) or 0) and int(options["trials"]) < so_far.trials:
        raise UsageError(
            f"trials={options['trials']}: the search already has {so_far.trials} trials; give more to grow it"
        )
    if "trials" in options and config.epoch_budget and so_far.epochs_spent >= config.epoch_budget:
        raise UsageError(
            f"trials={options['trials']}: the search's epoch budget of {config.epoch_budget} trial-epochs is spent "
            f"({so_far.epochs_spent} trained); give epoch_budget=N with a larger N to grow it, "
            "or epoch_budget=0 to lift it"
        )
    return config
