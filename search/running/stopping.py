"""Why a session of the search stopped before its trials were done: its time budget or the search's epoch budget
ran out, or Ctrl-C. Both reach Tune through one public `Stopper`, and the driver knows which it was from what
happened (the signal, the budget's clock), not from the clock when Tune returned (docs/budgets.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import ray.tune

OUT_OF_TIME, OUT_OF_EPOCHS, INTERRUPTED, FAILED = "out_of_time", "out_of_epochs", "interrupted", "failed"


class SessionStop(ray.tune.Stopper):
    """Stops every trial when the session's time budget or the search's epoch budget runs out, or at the first
    Ctrl-C; `why` says which."""

    def __init__(
        self, budget_s: float = 0.0, on_start=None, epoch_budget: int = 0, epochs_spent: int = 0, failure=lambda: None
    ):
        """`on_start(deadline)`: told the budget's end (a time.time()) as its clock starts; `epochs_spent`: trial-epochs
        trained earlier; `failure()`: None, or what stops the search at once (a failed study write, a lost lease)."""
        self.budget_s, self.on_start, self.failure = budget_s, on_start, failure
        self.epoch_budget, self.epochs_spent = epoch_budget, epochs_spent
        self.counted: set[tuple] = set()  # (Tune's trial id, epoch) counted in this run or resume
        self.started: float | None = None
        self.why: str | None = None

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl
        return {**self.__dict__, "on_start": None, "failure": None}

    def __call__(self, trial_id, result) -> bool:
        """Counts each epoch a trial reports once: Tune hands a finished trial's last result over again (`done`),
        and an epoch replayed from a trial's files after a kill was counted before."""
        epoch = (trial_id, result.get("epoch"))
        if result.get("epoch") is not None and not result.get("recovered") and epoch not in self.counted:
            self.counted.add(epoch)
            self.epochs_spent += 1
        return False

    def stop_all(self) -> bool:
        now = time.monotonic()
        if self.started is None:
            self.started = now
            if self.budget_s and self.on_start:
                self.on_start(time.time() + self.budget_s)
        if self.why is None and self.failure is not None and self.failure() is not None:
            self.why = FAILED
        if self.why is None and self.budget_s and now - self.started >= self.budget_s:
            self.why = OUT_OF_TIME
        if self.why is None and self.epoch_budget and self.epochs_spent >= self.epoch_budget:
            self.why = OUT_OF_EPOCHS
        return self.why is not None

    def interrupt(self) -> None:
        self.why = INTERRUPTED  # also after the budget ran out: Tune has not returned, nothing is ended yet

    @property
    def interrupted(self) -> bool:
        return self.why == INTERRUPTED

    @property
    def out_of_time(self) -> bool:
        return self.why == OUT_OF_TIME

    @property
    def out_of_budget(self) -> bool:
        """The time or the epoch budget stopped the session."""
        return self.why in (OUT_OF_TIME, OUT_OF_EPOCHS)

    @property
    def budget(self) -> str:
        """Which budget stopped it, as the trials' reasons name it."""
        return "epoch" if self.why == OUT_OF_EPOCHS else "time"


@contextlib.contextmanager
def ctrl_c_stops(stop: SessionStop):
    """While Tune runs: the first Ctrl-C stops the session through `stop` (Tune ends its trials and returns); a
    second one raises KeyboardInterrupt at once. Tune's own SIGINT handler is kept out, so the signal is known here."""
    previous = signal.getsignal(signal.SIGINT)
    disabled = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")

    def on_sigint(signum, frame):
        if stop.interrupted:
            raise KeyboardInterrupt
        stop.interrupt()

    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if disabled is None:
            os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)
        else:
            os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = disabled
