"""The live view of a search. Piped (a log file) or with verbose=1: one line per reported epoch and per trial end,
each followed by the status line. On a terminal: one line per trial end, and the status line rewritten in place under
them (search.running.status_line). How trials ended, and the best score of an ended trial, are read from the study, so
the view says what the summary will say."""

from __future__ import annotations

import sys
import time

from search.results.score import anneals, is_finite_number, score
from search.running.clock import clock_words as _clock
from search.running.ends.callbacks import FollowsEnds
from search.running.status_line import StatusLine, fit, terminal_columns
from search.running.study.endings import FAILED, STOPPED_BY_BUDGET, STOPPED_EARLY, Ending
from search.running.study.queries import CONTINUES_ATTR, INHERITED_ATTR, SCORE_ATTR, epoch_values
from trainables.foundation.storage import as_location
from trainables.foundation.trial_files import ERROR_FILE, trial_key

RUNNING = "RUNNING"
WIDTH = 100  # the view fits a 100-column terminal


def _number(value) -> float | None:
    return value if is_finite_number(value) else None


class ProgressView(FollowsEnds):
    """A compact log (under 100 columns) that grows by what is new, each line printed once, so a log file reads like
    the terminal. Its clock counts from the command's start (search.running.clock); the time budget and the estimate
    count from the view's start, when Tune starts the trials."""

    what = "the live view"

    def __init__(
        self,
        record,
        epochs: int,
        total_trials: int,
        budget_s: float = 0.0,
        epoch_budget: int = 0,
        began: float | None = None,
        verbose: int = 0,
        storage: str = "",
        pauses: bool = False,
    ):
        """`record`: the search's study (a StudyRecord); `budget_s`: the session's time budget; `epoch_budget`: the
        search's, in trial-epochs; `began`: the command's start (time.monotonic(); None: the view's start);
        `verbose`: 1 keeps the plain lines on a terminal too (Ray's own lines come between them there); `storage`: the
        experiment's parent (a folder or a URI), to name a failed trial's error file; `pauses`: ASHA's promotion
        variant, whose trial stopped at a rung is paused there until the search ends (a promotion goes on with it)."""
        self.record, self.epochs, self.total, self.budget_s = record, epochs, total_trials, budget_s
        self.epoch_budget = epoch_budget
        self.metric, self.mode = record.metric, record.mode
        self.began = began
        self.start, self.lead = self._started()
        self.ended_before = sum(record.counts().values())
        self._eta_done, self._eta_at, self._eta_left = 0, 0.0, 0.0  # as of the last trial end (see `_eta`)
        self.work_began: float | None = None  # when the first epoch of this run or resume began, in the view's seconds
        self.verbose, self.storage, self.pauses = verbose, storage, pauses
        self.paces: dict[str, tuple[int, float, float]] = {}  # running trial -> (its epoch, epoch_s, seen at)
        self.started: dict[str, object] = {}  # the search's id -> Tune's trial, from its start to its end
        self.shown: set[tuple[str, object]] = set()  # (trial, epoch) trained and shown in this command
        self.carried: dict[str, float] = {}  # a resumed trial's score so far, until Tune has its first result
        self.line = StatusLine()

    @classmethod
    def of(cls, config, record, began: float | None, storage: str = "") -> ProgressView:
        """The view of a search run with `config` (a RunConfig) on `record`, its clock from `began`; `storage`: where
        the experiment lives now (its parent: a moved or downloaded experiment's, not the one `run` was given)."""
        epochs, trials, budgets = config.epochs, config.trials, (config.time_budget, config.epoch_budget)
        keys = dict(verbose=config.verbose, storage=storage, pauses=config.asha == "promote")
        return cls(record, epochs, trials, *budgets, began=began, **keys)

    def __getstate__(self):
        return {**self.__dict__, "record": None, "start": None, "started": {}}

    def setup(self, **info):
        self.start, self.lead = self._started()

    def _started(self) -> tuple[float, float]:
        """(now, the seconds from the command's start to now): the view's start and its clock's lead."""
        now = time.monotonic()
        return now, 0.0 if self.began is None else max(0.0, now - self.began)

    def on_trial_start(self, iteration, trials, trial, **info):
        self.started[trial_key(trial)] = trial
        frozen = self.record.frozen(trial_key(trial))
        if frozen is not None and CONTINUES_ATTR in frozen.user_attrs:  # promoted at its rung, or grown past a budget
            rows = [{"epoch": step, self.metric: value} for step, value in sorted(frozen.intermediate_values.items())]
            carried = score(rows, trial.config, self.metric, self.mode)  # the best so far keeps it while it resumes
            if carried is not None:
                self.carried[trial_key(trial)] = carried
            self._show(
                self._live(), f"trial {trial_key(trial)} resumed after epoch {frozen.user_attrs[INHERITED_ATTR]}"
            )

    def _live(self) -> list:
        """The trials seen to start and not yet ended: the view never walks Tune's list of every trial, which grows
        with the search (docs/design.md, "Many trials")."""
        for trial_id in [key for key, trial in self.started.items() if trial.status in ("TERMINATED", "ERROR")]:
            del self.started[trial_id]
        return list(self.started.values())

    def on_trial_result(self, iteration, trials, trial, result, **info):
        """An epoch's line; not again for an epoch a promoted trial reports anew from its files as it resumes (its
        `resumed after` line says so), but for those an interrupted search's `resume` recovers."""
        seen = (trial_key(trial), result.get("epoch"))
        if result.get("recovered") and seen in self.shown:
            return
        self.shown.add(seen)
        self._show(self._live(), latest={trial_key(trial): result})  # Tune stores `result` in the trial after this

    def trial_ended(self, trials, trial_id: str, ending: Ending, tune_trial=None) -> None:
        self.paces.pop(trial_id, None)
        self.started.pop(trial_id, None)
        self.carried.pop(trial_id, None)
        standing = "" if ending.failed else self._standing(trial_id)
        paused = self.pauses and ending.status == STOPPED_EARLY  # a promotion may resume it: where it waits
        paused_at = max(epoch_values(self.record.frozen(trial_id)), default=0) if paused else None
        self._show(self._live(), event_words(trial_id, ending, tune_trial, self.storage, paused_at), standing=standing)

    def on_experiment_end(self, trials, **info):
        """On a terminal, the status line once more, as the search ends (no estimate: nothing is left to run), and
        ended, so that the table starts on a line of its own."""
        if self.line.shown and not self.line.closed:
            *_, status = self._parts(self._live(), time.monotonic() - self.start, None, {}, final=True)
            self._write(self.line.close([], self._one_line(status)))

    def _in_place(self) -> bool:
        """Whether the status line is rewritten in place: on a terminal, unless verbose or the search has ended."""
        isatty = getattr(sys.stdout, "isatty", None)
        return not self.verbose and not self.line.closed and bool(isatty and isatty())

    def _show(self, trials, event: str | None = None, latest: dict | None = None, standing: str = "") -> None:
        """Plain lines, or on a terminal the event (with `standing`: a trial end's figures) over the status."""
        elapsed = time.monotonic() - self.start
        if not self._in_place():
            print("\n".join(self.render(trials, elapsed, event, latest or {})), flush=True)
            return
        event = event + standing if event else event
        events, _, status = self._parts(trials, elapsed, event, latest or {})  # no epoch lines on a terminal
        self._write(self.line.rewrite(events, self._one_line(status)))

    @staticmethod
    def _write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def _one_line(self, status: tuple[str, str, str]) -> str:
        """The status as one line under the terminal's width: the best dropped before anything is cut."""
        words, best_text, tail = status
        return fit([f"{words} | {best_text}{tail}", f"{words}{tail}"], terminal_columns(WIDTH))

    def _standing(self, trial_id: str) -> str:
        """A trial end's words on a terminal, where no epoch line showed its figures: its epochs and its score."""
        frozen = self.record.frozen(trial_id)
        if frozen is None:
            return ""
        epochs = max(epoch_values(frozen), default=0)
        score = _fmt(_number(frozen.user_attrs.get(SCORE_ATTR)))
        return f" | {epochs} epoch{'s' if epochs != 1 else ''}, {self.metric} {score}"

    def render(self, trials, elapsed: float, event=None, latest: dict | None = None) -> list[str]:
        """The plain lines: the event, the epochs reported now, the status (wrapped under WIDTH columns)."""
        events, epochs, (words, best_text, tail) = self._parts(trials, elapsed, event, latest or {})
        status = f"{words} | {best_text}{tail}"
        return events + epochs + ([status] if len(status) <= WIDTH else [f"{words}{tail}", f"  {best_text}"])

    def _parts(self, trials, elapsed: float, event, latest: dict, final: bool = False):
        """(the event's lines, the epoch lines, the status's words, best and tail); `trials`: those not yet ended
        (more do no harm); `final`: the search has ended."""
        counts = self.record.counts()
        ended = self.record.ended_ids()
        active = [t for t in trials if t.status == RUNNING and trial_key(t) not in ended]
        running = [t for t in active if "epoch" in (latest.get(trial_key(t)) or t.last_result or {})]
        starting = len(active) - len(running)  # trials whose process or workers are still starting
        clock = _clock(elapsed + self.lead)  # since the command's start
        events = [f"[{clock}] {event}"] if event else []
        self._note_work_began(elapsed, latest, sum(counts.values()))
        self._note_paces(running, latest, elapsed)
        lines = []
        for trial_id, last in latest.items():  # the epoch being reported now
            lines.append(
                f"  {trial_id:<12} epoch {int(last.get('epoch') or 0)}/{self.epochs}  "
                f"{self.metric} {_fmt(_number(last.get(self.metric)))}  "
                f"{_number(last.get('images_per_s')) or 0:.0f} img/s"
                + ("  (recovered from its files)" if last.get("recovered") else "")
            )
        best = self._best(active, latest)
        best_text = f"best {self.metric} {_fmt(best[0])} {best[1]}" if best else f"best {self.metric} -"
        done = sum(counts.values()) - counts[FAILED]
        stopped = counts[STOPPED_EARLY]
        words = (
            f"[{clock}] {len(running)} running, {f'{starting} starting, ' if starting else ''}"
            f"{done}{'' if self.epoch_budget else f'/{self.total}'} done, {stopped} "
            f"{'paused' if self.pauses and not final else 'early-stopped'}, "
            f"{f'{counts[STOPPED_BY_BUDGET]} budget-stopped, ' if counts[STOPPED_BY_BUDGET] else ''}"
            f"{counts[FAILED]} failed"
        )
        eta = "" if final else self._eta(sum(counts.values()), elapsed, self._still_needed(running, elapsed))
        return events, lines, (words, best_text, self._budget_left(elapsed) + eta)

    def _best(self, active, latest: dict):
        best_ended = self.record.best()
        scored = [best_ended] if best_ended else []
        for trial in active:  # a running trial's score so far, by the study's rule (search.results.score)
            analysis = trial.metric_analysis.get(self.metric, {})
            value = _number(analysis.get("last" if anneals(trial.config) else self.mode))
            value = self.carried.get(trial_key(trial)) if value is None else value
            if value is not None:
                scored.append((value, trial_key(trial)))
        scored += [(_number(r.get(self.metric)), tid) for tid, r in latest.items() if _number(r.get(self.metric))]
        if not scored:
            return None
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda pair: pair[0])

    def _budget_left(self, elapsed: float) -> str:
        epochs = f" | epochs {self.record.epochs_spent()}/{self.epoch_budget}" if self.epoch_budget else ""
        if not self.budget_s:
            return epochs
        if elapsed >= self.budget_s:
            return epochs + " | time budget spent: the trials stop"
        return epochs + f" | budget {_clock(self.budget_s - elapsed).strip()} left"

    def _note_work_began(self, elapsed: float, latest: dict, ended: int) -> None:
        """The estimate's clock starts when this run's (or resume's) first epoch began (its report's `epoch_s` before
        it), not when Ray started; with no epoch seen, at the view's start. Earlier runs' epochs do not count."""
        if self.work_began is not None or ended > self.ended_before:
            return
        fresh = [last for last in latest.values() if "epoch" in last and not last.get("recovered")]
        if fresh:
            self.work_began = max(0.0, elapsed - max(_number(last.get("epoch_s")) or 0.0 for last in fresh))

    def _note_paces(self, running: list, latest: dict, elapsed: float) -> None:
        """Each running trial's latest epoch and seconds per epoch (its report's `epoch_s`), and when it was seen."""
        for trial in running:
            trial_id = trial_key(trial)
            last = latest.get(trial_id) or trial.last_result or {}
            epoch, epoch_s = int(last.get("epoch") or 0), _number(last.get("epoch_s"))
            known = self.paces.get(trial_id)
            if epoch_s is not None and (known is None or known[0] != epoch):
                self.paces[trial_id] = (epoch, epoch_s, elapsed)

    def _still_needed(self, running: list, elapsed: float) -> float:
        """The seconds the running trials still need at their own pace (side by side: the longest), counted down
        from each one's last report through the epoch under way: each epoch left at its observed seconds."""
        needs = [0.0]
        for trial in running:
            epoch, epoch_s, seen = self.paces.get(trial_key(trial), (self.epochs, 0.0, elapsed))
            left = max(0, self.epochs - epoch)
            needs.append(left * epoch_s - min(elapsed - seen, epoch_s if left else 0.0))
        return max(needs)

    def _eta(self, ended: int, elapsed: float, still_needed: float = 0.0) -> str:
        """Wall time per ended trial since the first epoch began (concurrency included) times the trials to go, as
        of the last trial end, counting down from there: it never grows while a long trial runs; never below what
        the running trials still need (`still_needed`). None once the time budget is spent, and never past it."""
        if ended <= self.ended_before or ended >= self.total or self.epoch_budget:  # a budget's counter instead
            return ""
        if self.budget_s and elapsed >= self.budget_s:
            return ""
        if ended != self._eta_done:
            # this driver's pace: an earlier run's or resume's time is not known here
            per_trial = (elapsed - (self.work_began or 0.0)) / (ended - self.ended_before)
            self._eta_done, self._eta_at, self._eta_left = ended, elapsed, per_trial * (self.total - ended)
        left = max(0.0, self._eta_left - (elapsed - self._eta_at), still_needed)
        if self.budget_s:
            left = min(left, self.budget_s - elapsed)
        return f" | ~{_clock(left).strip()} left"


def event_words(trial_id: str, ending: Ending, tune_trial=None, storage: str = "", paused_at: int | None = None) -> str:
    """How a trial ended, as the live view says it: `trial X failed: <cause>` (and where its error file is: Tune's
    trial path, a URI again when `storage` is one), `trial X paused after epoch N` (`paused_at`: its last epoch,
    where ASHA pauses a trial it stops at a rung), or `trial X finished: <status>` (with the budget's words when the
    budget stopped it)."""
    if ending.failed:
        raised = tune_trial is not None and getattr(tune_trial, "error_file", None)
        where = f"\n  see {as_location(storage, f'{tune_trial.path}/{ERROR_FILE}')}" if raised else ""
        return f"trial {trial_id} failed: {ending.reason}{where}"
    if paused_at is not None and ending.status == STOPPED_EARLY:
        return f"trial {trial_id} paused after epoch {paused_at} (ASHA's rung: it goes on if promoted)"
    why = f" ({ending.reason})" if ending.status == STOPPED_BY_BUDGET and ending.reason else ""
    return f"trial {trial_id} finished: {ending.status}{why}"


def _fmt(value) -> str:
    return f"{value:.4f}" if value is not None else "-"
