"""Every use of Optuna's private internals, behind one door, for the Optuna version the suite ran on; each says why no
public API serves and what breaks without it. Importing this module (the sampler and the study's writer do, so `run`
and `resume` do before the experiment is claimed) checks them all, and an Optuna whose internals moved stops the
command at once with one line naming its version. Optuna only: no Ray.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math

import optuna
from optuna.samplers import TPESampler
from optuna.storages import BaseStorage, JournalStorage
from optuna.trial import FrozenTrial, Trial, TrialState, create_trial

from trainables.foundation.errors import UsageError

TESTED_OPTUNA = "5.0.0"

__all__ = [
    "TESTED_OPTUNA",
    "GoodShareHook",
    "ListedJournalStorage",
    "OptunaInternalsMoved",
    "PastParamsHook",
    "TrialsReadHook",
    "running_trial",
    "prune_with_value",
    "storage_id",
]


class OptunaInternalsMoved(UsageError):
    """This Optuna's internals are not where the tested Optuna keeps them."""


class PastParamsHook:
    """A `TPESampler` that models the past trials' parameters otherwise than the study holds them: TPE reads them
    through its private `_get_params(trial, study)`. No public hook serves: a sampler sees the past trials only
    through the study it is handed (a stand-in study would have to copy every trial at every proposal and answer
    TPE's own private calls on it). Without it `OrderedTPESampler` (search.running.proposals.sampler) would model a
    choice among numbers by its value (128) where it proposes positions (2): TPE would model nothing it proposed."""

    def _get_params(self, trial: FrozenTrial, study: optuna.Study) -> dict:
        return self.past_params(super()._get_params(trial, study))

    def past_params(self, params: dict) -> dict:
        return params


class GoodShareHook:
    """A `TPESampler` whose good group is its best `good_share` of the trials, at most `GOOD_CAP` (Optuna's cap),
    set as its private `_gamma`: `TPESampler(gamma=...)` is deprecated in Optuna 4.9 and goes in 6.0 (it warns with a
    FutureWarning on every sampler made), and no public setting replaces it. Without it the search's TPE under
    asha=promote would model Optuna's default good group, a tenth, not the 5% chosen for it (benchmarks/HISTORY.md,
    `heldout20k-rungs-tpe-peers-324`). `good_share` 0: Optuna's own."""

    GOOD_CAP = 25

    def __init__(self, good_share: float = 0.0, **tpe):
        super().__init__(**tpe)
        if good_share:
            self._gamma = functools.partial(_good_group, good_share, self.GOOD_CAP)


def _good_group(share: float, cap: int, trials: int) -> int:
    return min(math.ceil(share * trials), cap)


class TrialsReadHook:
    """A `TPESampler` whose model reads the trials `trials_read(trials, directions)` gives of the finished ones its
    private `_sample` asks the study for (`study._get_trials`). No public hook serves: TPE reads the past through the
    study alone, and a stand-in study copied at every proposal would cost what the hook saves. Without it each
    proposal models every trial of the study, and its cost grows with the search (search.running.proposals.window)."""

    def _sample(self, study: optuna.Study, trial: FrozenTrial, search_space: dict):
        return super()._sample(_StudyRead(study, self.trials_read), trial, search_space)

    def trials_read(self, trials: list[FrozenTrial], directions: list, states=None) -> list[FrozenTrial]:
        return [t for t in trials if states is None or t.state in states]


class _StudyRead:
    """The study as TPE's `_sample` sees it: itself, but for the trials it lists, which `read` chooses among `states`
    from every trial in number order (the storage's listing: Optuna's filter walks every trial, in Python)."""

    def __init__(self, study: optuna.Study, read):
        self._study, self._read = study, read

    def __getattr__(self, name: str):
        return getattr(self._study, name)

    def _get_trials(self, deepcopy: bool = True, states=None, use_cache: bool = False) -> list[FrozenTrial]:
        every = self._study._storage.get_all_trials(self._study._study_id, deepcopy=False)
        read = self._read(every, self._study.directions, states)
        return copy.deepcopy(read) if deepcopy else read


class ListedJournalStorage(JournalStorage):
    """Optuna's journal storage, whose listing of a study's trials costs what it returns: it keeps the trials in
    number order and by state as the journal's lines change them, where Optuna's rebuilds the list from every trial, in
    Python, at each listing (`Study.ask` looks for a waiting trial so, TPE and its search space read every trial so):
    its cost a trial grew with the study (docs/design.md, "Many trials"). It reads its private replay of the journal:
    the trials by id, the ids of each study, and each line's trial id."""

    def __init__(self, backend):
        self._touched: set[int] = set()  # trial ids the journal's lines changed since the lists were brought up
        self._listed: dict[int, _Listed] = {}
        super().__init__(backend)

    def __getstate__(self):
        return {k: v for k, v in super().__getstate__().items() if k not in ("_touched", "_listed")}

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self._touched, self._listed = set(), {}

    def _sync_with_backend(self) -> None:
        self._replay_result.apply_logs(self._noted(self._backend.read_logs(self._replay_result.log_number_read)))

    def _noted(self, logs):
        """The journal's lines as they stream into the replay, each trial it names noted first: a line the replay
        refuses (this writer's, on a trial another finished) leaves the lines before it applied and noted."""
        for log in logs:
            if "trial_id" in log:
                self._touched.add(log["trial_id"])
            yield log

    def restore_replay_result(self, snapshot: bytes) -> None:
        super().restore_replay_result(snapshot)
        self._touched, self._listed = set(), {}  # another replay: listed anew

    def get_all_trials(self, study_id: int, deepcopy: bool = True, states=None) -> list[FrozenTrial]:
        with self._thread_lock:
            self._sync_with_backend()
            replay = self._replay_result
            if study_id not in replay._studies:
                raise KeyError(f"no study of id {study_id} in the journal")  # as Optuna's own storage refuses it
            listed = self._listed.setdefault(study_id, _Listed())
            listed.bring_up(replay._study_id_to_trial_ids[study_id], replay._trials, self._touched)
            trials = listed.in_states(states)
        return copy.deepcopy(trials) if deepcopy else trials


class _Listed:
    """One study's trials in number order, and the ids of the trials in each state."""

    def __init__(self):
        self.trials: list[FrozenTrial] = []
        self.at: dict[int, int] = {}  # trial id -> its place in `trials`
        self.by_state: dict[TrialState, dict[int, None]] = {state: {} for state in TrialState}

    def bring_up(self, ids: list[int], trials: dict[int, FrozenTrial], touched: set[int]) -> None:
        for trial_id in ids[len(self.trials) :]:
            self.at[trial_id] = len(self.trials)
            self.trials.append(trials[trial_id])
            self.by_state[trials[trial_id].state][trial_id] = None
        for trial_id in [t for t in touched if t in self.at]:
            touched.discard(trial_id)
            before, now = self.trials[self.at[trial_id]], trials[trial_id]
            if before.state != now.state:
                del self.by_state[before.state][trial_id]
                self.by_state[now.state][trial_id] = None
            self.trials[self.at[trial_id]] = now

    def in_states(self, states) -> list[FrozenTrial]:
        if states is None:
            return list(self.trials)
        counted = sum(len(self.by_state[state]) for state in set(states))
        if counted * 8 > len(self.trials):  # most of the study: one pass over it
            return [t for t in self.trials if t.state in states]
        ids = sorted(self.at[i] for state in set(states) for i in self.by_state[state])
        return [self.trials[at] for at in ids]


def running_trial(study: optuna.Study, frozen: FrozenTrial) -> Trial:
    """The running trial `frozen`, to report to and set attributes on: its storage id (`FrozenTrial._trial_id`) and
    `Trial(study, trial_id)`, which Optuna's docs leave to `optimize`. Public Optuna hands a `Trial` out only from
    `ask`, in the process that asked: a trial `resume` runs again was asked by an earlier session. Without it a
    resumed search could write none of its running trials' epochs, rung decisions or ends."""
    return Trial(study, frozen._trial_id)


def storage_id(trial: Trial | FrozenTrial) -> int:
    """The trial's id in its storage (`_trial_id`), by which `BaseStorage.get_trial` returns it alone. Public Optuna
    reaches one trial only through `Study.get_trials()[number]`, which lists every trial: the driver asks for one
    trial at each reported epoch and each end, so a search's driver would spend time growing with its trials on
    each (docs/design.md, "Many trials")."""
    return trial._trial_id


def add_trial(study: optuna.Study, storage: BaseStorage, trial: FrozenTrial) -> FrozenTrial:
    """Adds `trial` to the study as `Study.add_trial` does (validated, then the storage's `create_new_trial` with the
    study's `_study_id`) and returns it as stored, alone. `add_trial` returns nothing, and the trial it added is
    reached only by listing every trial: a promotion would cost a search time growing with its trials."""
    trial._validate()
    return storage.get_trial(storage.create_new_trial(study._study_id, template_trial=trial))


def prune_with_value(study: optuna.Study, storage: BaseStorage, frozen: FrozenTrial, values: list[float] | None):
    """Sets the running trial `frozen` PRUNED with `values` (the epoch that stands for it; None: no value), as
    `Study.tell` does (the sampler's `after_trial`, then the storage's `set_trial_state_values`) but for the value:
    `tell` refuses values for a pruned trial and gives it its last epoch's instead. Without it a stopped trial's
    value in the study (optuna-dashboard, `optuna.load_study`) would not be the one the summary and `export` rank it
    by; `BaseStorage` is "not supposed to be directly accessed by library users"."""
    try:
        study.sampler.after_trial(study, frozen, TrialState.PRUNED, values)
    finally:
        storage.set_trial_state_values(frozen._trial_id, TrialState.PRUNED, values)


def internals_moved() -> str | None:
    """What of the internals above this Optuna lacks (None: all are where the tested Optuna keeps them)."""
    expected = {
        "TPESampler._get_params(self, trial, study)": (getattr(TPESampler, "_get_params", None), "self trial study"),
        "TPESampler._sample(self, study, trial, search_space)": (
            getattr(TPESampler, "_sample", None),
            "self study trial search_space",
        ),
        "Study._get_trials(self, deepcopy, states, use_cache)": (
            getattr(optuna.Study, "_get_trials", None),
            "self deepcopy states use_cache",
        ),
        "Trial(study, trial_id)": (Trial.__init__, "self study trial_id"),
        "JournalStorage._sync_with_backend(self)": (getattr(JournalStorage, "_sync_with_backend", None), "self"),
        "BaseStorage.set_trial_state_values(self, trial_id, state, values)": (
            getattr(BaseStorage, "set_trial_state_values", None),
            "self trial_id state values",
        ),
    }
    for name, (function, parameters) in expected.items():
        if function is None or list(inspect.signature(function).parameters) != parameters.split():
            return name
    if not isinstance(getattr(create_trial(state=TrialState.RUNNING), "_trial_id", None), int):
        return "FrozenTrial._trial_id"
    if "_gamma" not in TPESampler._sample.__code__.co_names:
        return "TPESampler._gamma"
    if not callable(getattr(FrozenTrial, "_validate", None)):
        return "FrozenTrial._validate()"
    try:
        from optuna.storages.journal._storage import JournalStorageReplayResult

        replay = JournalStorageReplayResult("")
    except (ImportError, TypeError):
        return "optuna.storages.journal._storage.JournalStorageReplayResult(worker_id_prefix)"
    for name in ("_trials", "_studies", "_study_id_to_trial_ids", "log_number_read", "apply_logs"):
        if not hasattr(replay, name):
            return f"JournalStorageReplayResult.{name}"
    for owner, names in (
        (JournalStorage, "_backend _thread_lock _replay_result"),
        (optuna.Study, "_storage _study_id"),
    ):
        if not set(names.split()) <= set(owner.__init__.__code__.co_names):
            return f"{owner.__name__}.{names.replace(' ', ', ')}"
    return None


if moved := internals_moved():
    raise OptunaInternalsMoved(
        f"Optuna {optuna.__version__} keeps its internals elsewhere than Optuna {TESTED_OPTUNA}, which search was "
        f"tested with ({moved}); install optuna=={TESTED_OPTUNA}"
    )
