"""Tune's own state files in an experiment folder, made whole and consistent before Tune restores a search.

Tune keeps three files per session, named by the session's start: experiment_state-S.json (the trials and their
status), search_gen_state-S.json (how many trials the search created, and which it counts as running) and
searcher-state-S.pkl (this project's Optuna study); and tuner.pkl, written when the search starts. It restores from
the newest of each kind by name, each on its own. In a local folder it copies all of them from its staging folder
every few seconds, in place, not through a temporary name: a kill during a copy leaves any of them cut short, and
the newest of each kind can come from different moments. Seen in CI: the newest search_gen_state cut to 0 bytes
made Tune's restore fail, and Tune then started an empty experiment, which every later resume restored from.

While the search runs, `KeepExperimentState` keeps a whole copy of Tune's newest experiment state in .search/
(written through a temporary name; Tune never copies that folder), and a trial records nothing before that copy
names it (trainables.foundation.trial_files.tune_knows). `keep_tuner_copy` keeps tuner.pkl there too.

`prepare_restore` runs before Tune restores:
- an experiment state that was cut short is replaced by its whole copy; every other state file that does not load
  is moved to .search/ (never deleted); a cut tuner.pkl is put back from its copy,
- the search's count is made to agree with the experiment state Tune will restore: trials created = those it
  names plus any trial that only its own files know (trainables.foundation.trial_files); running = those it names
  that have not terminated,
- without a whole searcher state, a fresh one is written (the study starts over; every trial keeps its files).
It returns how many trials Tune must restore, so a restore that fails anyway is an error, not an empty search.

An object store writes each object whole, so experiments on a URI are left as they are.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from pathlib import Path

import ray.cloudpickle
import ray.tune

from search.results.files import write_bytes_atomically
from trainables.foundation.storage import Experiment, read_bytes
from trainables.foundation.trial_files import EXPERIMENT_STATE_PREFIX, OWN_FOLDER, recorded_trial_ids

GENERATOR_PREFIX = "search_gen_state-"
SEARCHER_PREFIX = "searcher-state-"
STATE_KINDS = {EXPERIMENT_STATE_PREFIX: json.loads, GENERATOR_PREFIX: pickle.loads, SEARCHER_PREFIX: pickle.loads}
TUNER_FILE = "tuner.pkl"  # Tune's, written when a search starts, not through a temporary name
TUNER_COPY = f"{OWN_FOLDER}/{TUNER_FILE}"
TERMINATED = "TERMINATED"  # a trial Tune does not run again; every other status is resumed

log = logging.getLogger("ray")


def keep_tuner_copy(folder: Path) -> None:
    """A whole copy of tuner.pkl in .search/, which Tune never copies over: `resume` puts it back if Tune's is cut."""
    if tuner_is_whole(str(folder / TUNER_FILE)) and not (folder / TUNER_COPY).is_file():
        _write_atomically(folder / TUNER_COPY, (folder / TUNER_FILE).read_bytes())


def tuner_is_whole(location: str) -> bool:
    """A pickle ends with its STOP opcode; one cut short by a kill does not (loading it would need Ray running)."""
    try:
        return read_bytes(location).endswith(b".")
    except OSError:
        return False


def tune_state_is_whole(experiment: Experiment) -> bool:
    """Whether Tune can restore the search: its tuner.pkl is there and whole. Trials record nothing before Tune's
    snapshot names them (trainables.foundation.trial_files), so without it there is nothing to restore."""
    return ray.tune.Tuner.can_restore(experiment.location) and tuner_is_whole(experiment.join(TUNER_FILE))


def prepare_restore(folder: Path, make_searcher) -> tuple[int, str]:
    """Make Tune's state files in `folder` whole and consistent (see the module's docstring). `make_searcher()`
    gives a fresh searcher whose state is written when no whole one is left. Returns how many trials Tune must
    restore, and the session whose experiment state it restores them from."""
    if not tuner_is_whole(str(folder / TUNER_FILE)) and tuner_is_whole(str(folder / TUNER_COPY)):
        _write_atomically(folder / TUNER_FILE, (folder / TUNER_COPY).read_bytes())
        log.warning("%s was cut short; put back the copy kept when the search started", folder / TUNER_FILE)
    set_aside_damaged_state(folder)
    states = _newest(folder, EXPERIMENT_STATE_PREFIX)
    if states is None:
        return 0, ""
    statuses = trial_statuses(json.loads(states.read_text()))
    only_in_files = [trial for trial in recorded_trial_ids(str(folder)) if trial not in statuses]
    agree_search_count(folder, statuses, len(only_in_files))
    if _newest(folder, GENERATOR_PREFIX) is not None and _newest(folder, SEARCHER_PREFIX) is None:
        searcher = make_searcher()
        if searcher is not None:
            searcher.save(str(folder / f"{SEARCHER_PREFIX}{session_of(states)}.pkl"))
            log.warning("no whole searcher state: the study starts over; every trial keeps its files")
    return len(statuses), session_of(states)


class KeepExperimentState(ray.tune.Callback):
    """After each of Tune's copies of its experiment state into the folder: a whole copy of it in .search/."""

    def __init__(self, folder: Path):
        self.folder, self.seen = folder, None

    def on_step_end(self, iteration, trials, **info):
        newest = _newest(self.folder, EXPERIMENT_STATE_PREFIX)
        if newest is None:
            return
        try:
            stat = newest.stat()
            seen = (newest.name, stat.st_mtime_ns, stat.st_size)
            if seen == self.seen:
                return
            data = newest.read_bytes()
            json.loads(data)
        except (OSError, ValueError):  # Tune is copying it right now: a later step finds it whole
            return
        _write_atomically(self.folder / OWN_FOLDER / newest.name, data)
        self.seen = seen


def _loads(path: Path, load) -> bool:
    try:
        load(path.read_bytes())
        return True
    except Exception:  # any way a cut file fails to load: JSON, pickle, EOF
        return False


def set_aside_damaged_state(folder: Path) -> None:
    """Each of Tune's state files that does not load goes to .search/damaged-NAME, so Tune restores from a whole
    one; an experiment state whose whole copy .search/ keeps is replaced by that copy."""
    for prefix, load in STATE_KINDS.items():
        for path in sorted(folder.glob(f"{prefix}*")):
            if _loads(path, load):
                continue
            set_aside(folder, path, "damaged")
            kept = folder / OWN_FOLDER / path.name
            if prefix == EXPERIMENT_STATE_PREFIX and kept.is_file():
                _write_atomically(path, kept.read_bytes())
                log.warning("%s was cut short; put back its whole copy from %s", path, kept.parent)
            else:
                log.warning("%s was cut short; Tune restores from the newest whole one", path)


def set_aside(folder: Path, path: Path, why: str) -> None:
    (folder / OWN_FOLDER).mkdir(exist_ok=True)
    os.replace(path, folder / OWN_FOLDER / f"{why}-{path.name}")


def set_aside_sessions_after(folder: Path, session: str, why: str) -> None:
    """Move every state file of a session newer than `session`, and its kept copy, aside in .search/: Tune restores
    from `session` again, and no copy is put back over it."""
    for prefix in STATE_KINDS:
        for path in folder.glob(f"{prefix}*"):
            if session_of(path) > session:
                set_aside(folder, path, why)
    for kept in (folder / OWN_FOLDER).glob(f"{EXPERIMENT_STATE_PREFIX}*"):
        if session_of(kept) > session:
            os.replace(kept, kept.with_name(f"{why}-kept-{kept.name}"))


def trial_statuses(experiment_state: dict) -> dict[str, str]:
    """{trial id: Tune's status} of every trial an experiment state names."""
    statuses = {}
    for trial_json, _metadata in experiment_state.get("trial_data", []):
        trial = json.loads(trial_json)
        statuses[trial["trial_id"]] = trial["status"]
    return statuses


def agree_search_count(folder: Path, statuses: dict[str, str], only_in_files: int) -> None:
    """The newest search_gen_state, which Tune restores, counts the trials `statuses` names (plus those only files
    know) as created, and the unterminated ones as running: no trial is dropped, none is made twice."""
    path = _newest(folder, GENERATOR_PREFIX)
    if path is None:
        log.warning("no whole search state: Tune proposes the search's trials again beside the %d it restores",
                    len(statuses))  # fmt: skip
        return
    state = pickle.loads(path.read_bytes())
    running = {trial for trial, status in statuses.items() if status != TERMINATED}
    agreed = {**state, "counter": len(statuses) + only_in_files, "finished": False}
    limiter = state.get("name:ConcurrencyLimiter")
    if isinstance(limiter, dict):
        agreed["name:ConcurrencyLimiter"] = {**limiter, "live_trials": running,
                                             "num_unfinished_live_trials": len(running)}  # fmt: skip
    if agreed != state:
        log.warning("%s counted %s trials created; the experiment state names %d", path.name, state.get("counter"),
                    agreed["counter"])  # fmt: skip
        _write_atomically(path, ray.cloudpickle.dumps(agreed))


def session_of(path: Path) -> str:
    """The session a state file belongs to: the name between its prefix and its extension (a sortable time)."""
    for prefix in STATE_KINDS:
        if path.name.startswith(prefix):
            return path.name.removeprefix(prefix).rsplit(".", 1)[0]
    raise ValueError(path)


def _newest(folder: Path, prefix: str) -> Path | None:
    paths = sorted(folder.glob(f"{prefix}*"), key=lambda p: p.name)
    return paths[-1] if paths else None


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(exist_ok=True)
    write_bytes_atomically(path, data)
