"""`python -m search resume`, as `run` is: every check first, writing nothing (a URI's settings and study are read into
a temporary folder that goes with the checks); then the experiment's lock, the download of a URI's files into the
working folder, and the writes. One path for a local folder and a URI."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from search.commands import RESUME_KEYS, RESUME_USAGE, TRACKING_KEYS, print_result, resumed_config, split_options
from search.results.summary import SUMMARY_FILE
from search.running.settings import read_settings
from search.start import command_words
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import SearchInterrupted, UsageError
from trainables.foundation.space import Space, load_run_space
from trainables.foundation.storage import (
    LEASE_FILE,
    LOCK_FILE,
    SEARCH_FILE,
    STUDY_FILE,
    Experiment,
    delete,
    exists,
    filesystem,
)
from trainables.foundation.trial_lease import parse_holder

READ = (SEARCH_FILE, STUDY_FILE)  # what the checks read of the experiment itself


@dataclass
class Resumption:
    """What the checks settled: the settings as the experiment holds them (`before`), those to resume with, whether the
    search had finished, whether it is asked nothing to train (`idle`), and a digest of what the checks read."""

    before: dict
    config: RunConfig
    space: Space
    finished: bool
    idle: bool
    read: str
    exhausted: int = 0  # a finite space's configurations, when every one has run and no budget stopped a trial


def cmd_resume(args: list[str]) -> int:
    positional, options, _ = split_options(args, RESUME_KEYS | {"epochs"})
    if len(positional) != 1:
        raise UsageError(RESUME_USAGE)
    experiment = Experiment.at(positional[0])
    if not exists(experiment.join(SEARCH_FILE)):
        raise UsageError(f"{positional[0]}: not an experiment folder (no {SEARCH_FILE}); give the folder `run` created")
    resumption, damage_checked = checked(experiment, options)  # nothing written yet, anywhere
    if resumption.idle:
        print(
            f"{experiment.location}: this search already finished; its result is {experiment.join(SUMMARY_FILE)}; "
            + idle_words(resumption.exhausted)
        )
        if resumption.config.tracking.to != "mlflow":
            return 0
    from search.running.writer.lock import WriterLock

    # the working folder the lock makes for a URI, and the folders on the way to it that are missing now
    fresh = [p for p in [experiment.local, *experiment.local.parents] if not p.exists()] if experiment.remote else []
    try:
        with WriterLock(experiment, command_words("resume", args)):  # before the download: a live driver's files
            summary = resume_held(experiment, options, resumption, damage_checked)
    except KeyboardInterrupt:
        raise SearchInterrupted(experiment.location) from None
    except UsageError:  # refused by the lock or a check under it: a working folder it made, holding only the lock's
        if fresh and {path.name for path in experiment.local.iterdir()} <= {LOCK_FILE}:
            shutil.rmtree(experiment.local, ignore_errors=True)
            for folder in fresh[1:]:
                with contextlib.suppress(OSError):  # another's file in it: kept
                    folder.rmdir()
        raise
    if summary is not None:
        print_result(summary, experiment)
    return 0


def checked(experiment: Experiment, options: dict[str, str]) -> tuple[Resumption, bool]:
    """Every check of `resume`, before its lock and before anything is written: the keys against the settings and the
    study, MLflow, the trials' checkpoints, then the data (fetched again when allowed, taken back on a refusal) and the
    space's code on it. The checkpoints wait for the lock (the second of the pair returned: False) while a driver may
    be writing them."""
    from search.running.preflight import refuse_resuming_what_cannot_train
    from search.running.tracking.mlflow_store import refuse_unusable

    with read_copy(experiment) as folder:
        resumption = settled(experiment, folder, options)
    refuse_unusable(resumption.config)
    if resumption.idle:
        return resumption, True
    damage_checked = not maybe_held(experiment)
    if damage_checked:  # a live driver prunes its trials' checkpoints: read them once it is gone
        from trainables.checkpoints import refuse_damaged_in

        refuse_damaged_in(experiment.location)  # before Ray: no trial trains on from a damaged checkpoint
    refuse_resuming_what_cannot_train(resumption.config, resumption.space)  # last: it may fetch the data
    return resumption, damage_checked


def settled(experiment: Experiment, folder: Path, options: dict[str, str]) -> Resumption:
    """The keys of `resume` checked against the settings and the study in `folder`, and the settings they make: one
    line, exit 2, for a key that cannot be, a search that cannot grow so, or a finished one given nothing to train."""
    from search.running.growth import grow, nothing_left, refuse_idle, study_so_far

    before = read_settings(folder)["run"]
    resumed = resumed_config(before, options)  # the keys first: they need no study
    so_far = study_so_far(folder)
    config = grow(before, resumed, options, so_far)
    finished = exists(experiment.join(SUMMARY_FILE))
    space = load_run_space(config)
    grown = config.trials > before["trials"] or config.epoch_budget != before.get("epoch_budget", 0)
    idle = finished and not grown and options.keys() <= TRACKING_KEYS  # asked nothing to train: where the result is
    finite = finite_space(so_far, config, space) if finished else None
    if finished and not idle:
        refuse_idle(config, options, so_far, finite)  # asked to train, with nothing
    return Resumption(before, config, space, finished, idle, digest(folder), nothing_left(so_far, finite))


def idle_words(exhausted: int) -> str:
    """What grows a finished search `resume` was given nothing to train: nothing, when it ran every one of the
    `exhausted` configurations of a finite space (a key to grow it by would be refused)."""
    from search.running.growth import NOTHING_LEFT

    if exhausted:
        return f"it ran every one of the {exhausted} configurations its space holds: {NOTHING_LEFT}"
    return "give trials=N or epoch_budget=N to grow it, or time_budget=S to continue the trials a budget stopped"


def finite_space(so_far, config, space) -> tuple[int, int] | None:
    """(configurations the space holds, those none of the study's proposed trials holds), for a finite space (the
    study read once, by growth.study_so_far); else None."""
    from search.running.proposals.study_setup import configurations_left, finite_count

    count = finite_count(config, space)
    return None if count is None else (count, configurations_left(config, space, list(so_far.proposed)))


def resume_held(experiment: Experiment, options: dict, resumption: Resumption, damage_checked: bool) -> dict | None:
    """`resume`, holding the experiment's lock, its checks passed: the summary of the search it drove (None when it
    drove none)."""
    from search.running.preflight import refuse_resuming_what_cannot_train
    from search.running.settings import write_settings
    from search.running.tracking.mlflow_store import refuse_unusable

    if not damage_checked:  # the driver that held the search is gone: its checkpoints are still
        from trainables.checkpoints import refuse_damaged_in

        refuse_damaged_in(experiment.location)
    with read_copy(experiment) as folder:  # another driver grew the search between the checks and the lock: again
        if digest(folder) != resumption.read:
            resumption = settled(experiment, folder, options)
            refuse_unusable(resumption.config)
            if not resumption.idle:
                refuse_resuming_what_cannot_train(resumption.config, resumption.space)
    experiment.download()  # a URI's settings, study, log and events, into the working folder
    config, space = resumption.config, resumption.space
    if resumption.idle:  # MLflow brought up to it (tracked from now on when given tracking=mlflow)
        from search.running.tracking.mlflow_store import mlflow_ui_words
        from search.running.tracking.tracker import bring_up_to_date

        if config.to_dict() != resumption.before:
            write_settings(experiment, {"run": config.to_dict()})
        if bring_up_to_date(config, space, experiment):
            print(f"MLflow holds all of it: {mlflow_ui_words(config.tracking.uri, experiment)}")
        return None
    if resumption.finished:  # a continued search is unfinished until its trials end: no summary may look complete
        if experiment.remote:
            delete(experiment.join(SUMMARY_FILE))
        (experiment.local / SUMMARY_FILE).unlink(missing_ok=True)
    if config.to_dict() != resumption.before:
        write_settings(experiment, {"run": config.to_dict()})
    from search.running.tuner import resume_search

    return resume_search(experiment, config, space)


@contextlib.contextmanager
def read_copy(experiment: Experiment):
    """A folder holding the experiment's settings and study as the checks read them: its own folder, or for a URI a
    temporary one they are read into, removed with the checks (the working folder is written only under the lock)."""
    if not experiment.remote:
        yield experiment.local
        return
    import pyarrow.fs

    fs, root = filesystem(experiment.location)
    with tempfile.TemporaryDirectory(prefix="search-resume-") as folder:
        for name in READ:
            source = str(PurePosixPath(root, name))
            if fs.get_file_info(source).type == pyarrow.fs.FileType.File:
                pyarrow.fs.copy_files(source, str(Path(folder, name)), fs, pyarrow.fs.LocalFileSystem())
        yield Path(folder)


def digest(folder: Path) -> str:
    """What the checks read of an experiment (its settings and study), in a few characters."""
    seen = hashlib.sha256()
    for name in READ:
        path = folder / name
        seen.update(path.read_bytes() if path.is_file() else b"-")
    return seen.hexdigest()


def maybe_held(experiment: Experiment) -> bool:
    """Whether a driver may be writing the experiment now, read without a write: a lease on the URI, or on a folder
    the lock's holder named by a process still alive on this machine (one on another machine is taken as alive)."""
    if experiment.remote:
        return exists(experiment.join(LEASE_FILE))
    try:
        holder = parse_holder((experiment.local / LOCK_FILE).read_bytes())
    except OSError:
        return False
    if not holder:  # a driver that ended emptied it
        return False
    if holder.get("host") != socket.gethostname():
        return True
    try:
        pid = int(holder.get("pid", 0))
        os.kill(pid, 0) if pid > 0 else None
    except PermissionError:  # alive, another user's
        return True
    except (OSError, ValueError, TypeError):
        return False  # gone (ended without emptying it: killed)
    return pid > 0
