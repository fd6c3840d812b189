"""How a trial ended: one rule, applied once, from what happened to it.

A trial ends in one of four ways, each with its study state (search.running.study.record writes it, first; `end.json`,
the summary, the live view, TensorBoard's HParams and MLflow read it from there):

    completed          trained all its epochs                       COMPLETE
    stopped_early      stopped by ASHA at a rung                    PRUNED
    stopped_by_budget  stopped by the time or epoch budget (any epoch) PRUNED  (a grown search may continue it)
    failed             raised, diverged, or left nothing to rank    FAIL     (with the reason)

A trial Ctrl-C interrupts has not ended: it stays RUNNING in the study, and `resume` continues it. Pure logic: no Ray,
no torch, no Optuna.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainables.foundation.trial_files import STOPPED_BY_BUDGET

COMPLETED, STOPPED_EARLY, FAILED = "completed", "stopped_early", "failed"
STATUSES = (COMPLETED, STOPPED_EARLY, STOPPED_BY_BUDGET, FAILED)
NOTHING_TO_RANK = "no finite metric was reported"


@dataclass(frozen=True)
class Ending:
    status: str
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    def as_dict(self) -> dict:
        return {"status": self.status, "error": self.reason}


def ending_of(
    epochs_run: int, epochs: int, *, error: str | None = None, divergence: str | None = None, budget: str | None = None
) -> Ending:
    """How a trial ended. `error`: what it raised; `divergence`: why its loss diverged (Tune may stop a trial at that
    epoch before its driver raises); `budget`: the budget that stopped it ("time" or "epoch"), if one did."""
    if error or divergence:
        return Ending(FAILED, error or divergence)
    if epochs_run >= epochs:
        return Ending(COMPLETED)
    if budget:
        where = f"after epoch {epochs_run}" if epochs_run else "before its first epoch"
        return Ending(STOPPED_BY_BUDGET, f"stopped by the {budget} budget {where}")
    if epochs_run == 0:
        return Ending(FAILED, "it ended before its first epoch")
    return Ending(STOPPED_EARLY, f"stopped by ASHA at epoch {epochs_run}")


@dataclass(frozen=True)
class EndFacts:
    """What happened to a trial, as the one who saw its end knows it: the epochs it ran, whether the scheduler stopped
    it, a budget (`"time"` or `"epoch"`) that stopped it, what it raised, why its loss diverged, or the ending an
    earlier session wrote into its `end.json`."""

    epochs_run: int
    stopped_by_scheduler: bool | None = None  # None: not known (an ending found after a kill)
    budget: str | None = None
    error: str | None = None
    divergence: str | None = None
    written: Ending | None = None


def decide(facts: EndFacts, epochs: int, score: float | None, missing: list[str] = ()) -> Ending:
    """The one rule: how a trial with these `facts` ended, given its `score` (None: nothing finite to rank it by) and
    the other objectives it never reported (`missing`: a point of the front needs every one)."""
    unstopped = facts.stopped_by_scheduler is False and not (facts.error or facts.divergence or facts.budget)
    if facts.written is not None:
        ending = facts.written
    elif unstopped and 0 < facts.epochs_run < epochs:
        why = f"it returned after epoch {facts.epochs_run} of {epochs}, unstopped and without an error"
        ending = Ending(FAILED, why)
    else:
        ending = ending_of(
            facts.epochs_run, epochs, error=facts.error, divergence=facts.divergence, budget=facts.budget
        )
    ending = with_score(ending, score)
    if missing and ending.status == COMPLETED:
        return Ending(FAILED, f"reported no {', '.join(missing)}")
    return ending


def with_score(ending: Ending, score: float | None) -> Ending:
    """A trial that trained but has nothing to rank it by (no finite metric) failed, whatever stopped it; one the
    budget stopped before its first epoch keeps that ending (a grown search may run it)."""
    if score is None and ending.status in (COMPLETED, STOPPED_EARLY):
        return Ending(FAILED, NOTHING_TO_RANK)
    return ending
