"""The study's storage: Optuna's `JournalStorage` file in the experiment folder, opened by its one writer (the driver
holding the experiment's lock, search.running.writer.lock) or by readers. Optuna only: no Ray, no torch."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from optuna.storages import BaseStorage, JournalStorage
from optuna.storages.journal import JournalFileBackend

from search.running.study.optuna_private import ListedJournalStorage
from trainables.foundation.objectives import Objective
from trainables.foundation.storage import STUDY_FILE

STUDY_NAME = "search"
LOCK_SUFFIX = ".lock"  # Optuna's lock beside the journal, held only during an append


def journal_storage(path: Path, writer: bool = False) -> JournalStorage:
    """The study's storage. Only the `writer` (the driver holding the experiment's lock) clears what a driver killed
    during an append can leave: the last line cut short and Optuna's lock held (docs/design.md)."""
    if writer:
        data = path.read_bytes() if path.is_file() else b""
        if data and not data.endswith(b"\n"):
            with open(path, "r+b") as file:
                file.truncate(data.rfind(b"\n") + 1)
        Path(f"{path}{LOCK_SUFFIX}").unlink(missing_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return ListedJournalStorage(JournalFileBackend(str(path)))


def read_study(path: Path) -> tuple[optuna.Study, BaseStorage]:
    """The study in `path` and its storage as a reader opens them: never trimmed, unlocked or written."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = journal_storage(path)
    return optuna.load_study(study_name=STUDY_NAME, storage=storage), storage


def open_study(folder: Path, objectives: list[Objective], sampler=None) -> tuple[optuna.Study, BaseStorage]:
    """The search's study and storage as its driver (the lock's holder) opens them: one direction per objective."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = journal_storage(folder / STUDY_FILE, writer=True)
    directions = [o.direction for o in objectives]
    study = optuna.create_study(
        storage=storage, study_name=STUDY_NAME, directions=directions, sampler=sampler, load_if_exists=True
    )
    names = [o.name for o in objectives]
    if study.metric_names != names:  # optuna-dashboard's axes name the objectives, not "Objective 0"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(names)
    return study, storage
