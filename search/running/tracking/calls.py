"""How the experiment tracker's calls run: never failing the search (the first failure is named, then tracking is off
for the session), and never holding up Tune (its callbacks' calls run in the tracker's own thread, in order). No Ray,
no torch, no MLflow.
"""

from __future__ import annotations

import functools
import queue
import threading

DRAIN_S = 60.0  # how long the driver waits for the tracker's queued calls before it goes on without tracking
GIVE_UP = "the search goes on without tracking (`python -m search resume` brings MLflow up to date)"


def safely(method):
    """A tracking call that never fails the search: its first failure is named, then tracking is off. It waits for
    the calls queued before it (the tracker's thread opens the store first)."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        self.wait()
        if self.broken:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            self.broken = True
            reason = " ".join(str(exc).split())[:300]
            print(f"tracking: MLflow failed ({type(exc).__name__}: {reason}); {GIVE_UP}", flush=True)
            return None

    return guarded


def queued(method):
    """A call from Tune's callbacks: handed to the tracker's thread, so it returns at once."""

    @functools.wraps(method)
    def enqueue(self, *args):
        if self.worker is None:
            return method(self, *args)
        self.calls.put((method, args))
        return None

    return enqueue


class BackgroundCalls:
    """A tracker's thread: it runs `first()` (opening the store), then every call queued, in order."""

    broken = False
    worker: threading.Thread | None = None
    calls: queue.Queue | None = None

    def start_worker(self, first, name: str) -> None:
        self.calls = queue.Queue()
        self.worker = threading.Thread(target=self._work, args=(first,), name=name, daemon=True)
        self.worker.start()

    def _work(self, first) -> None:
        first()
        while True:
            call = self.calls.get()
            if isinstance(call, threading.Event):
                call.set()
            else:
                method, args = call
                method(self, *args)

    def wait(self) -> None:
        """Until every call queued so far is done (at most DRAIN_S; then tracking is off)."""
        if self.worker is None or self.worker is threading.current_thread() or self.broken:
            return
        done = threading.Event()
        self.calls.put(done)
        if not done.wait(DRAIN_S):
            self.broken = True
            print(f"tracking: MLflow has not answered for {DRAIN_S:.0f} s; {GIVE_UP}", flush=True)

    def ready(self) -> bool:
        self.wait()
        return not self.broken
