"""One writer per experiment: the driver of `run` or `resume` holds the experiment's lock while it writes.

A local folder is locked with `flock` on `driver.lock` (the kernel frees it when its holder dies, however it dies);
on a URI a lease object, `driver.lease`, is written, renewed and taken over once stale, by the lease's one clock
(trainables.foundation.lease_clock, which its trials go by too), its age judged by the store's clock
(search.running.writer.lease_store). The holder is fenced: before each write to the
experiment it reads the lease back and stops without another write (`LeaseLost`, exit 1) once it is another's, failing
closed. What each store promises: docs/one-writer.md. No Ray, no torch: pyarrow, and boto3 where it is installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

from search.running.writer.lease_store import Lease, LeaseChanged, age_by_store, lease_store, parse_holder
from trainables.foundation import lease_clock
from trainables.foundation.errors import SearchFailed, UsageError
from trainables.foundation.storage import LEASE_FILE, LOCK_FILE, Experiment, set_fence

READ_BACK_S = 0.5  # seconds between writing a lease on a store without conditional writes and reading it back


class LeaseLost(SearchFailed):
    """Another driver took this experiment's lease: this one stops without another write (exit 1)."""


def holder_words(holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"pid {holder.get('pid')} on {holder.get('host')} (`{holder.get('command', '?')}`, since {since})"


class WriterLock:
    """The experiment's lock, held from `acquire` to `release` (or the process's end)."""

    def __init__(self, experiment: Experiment, command: str):
        self.experiment, self.command = experiment, command
        self.me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command,
            "since": time.time(),
            "token": uuid.uuid4().hex,
        }
        self.fd: int | None = None
        self.store = lease_store(experiment.join(LEASE_FILE)) if experiment.remote else None
        self.tag: str | None = None  # the store's version of this driver's last write of the lease
        self.renewing: threading.Thread | None = None
        self.released = threading.Event()
        self.lost: LeaseLost | None = None
        self.written_at = time.monotonic()  # when this driver began its last write of the lease the store took

    def acquire(self) -> WriterLock:
        self._lock_folder(self.experiment.local)
        if self.store is not None:
            try:
                self._take_lease()
            except BaseException:
                self.release()
                raise
        return self

    def _lock_folder(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = parse_holder(os.pread(fd, 4096, 0))
            os.close(fd)
            raise UsageError(self._refusal(holder)) from None
        left = parse_holder(os.pread(fd, 4096, 0))
        if left:
            _say(f"the experiment's lock of {holder_words(left)} is stale (that driver is gone); taking it over")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.me).encode(), 0)
        os.fsync(fd)
        self.fd = fd

    def _take_lease(self) -> None:
        seen = self.store.read()
        if seen.holder:
            age = age_by_store(seen, self.store.now())
            stale_s = max(lease_clock.STALE_S, float(seen.holder.get("stale_s") or 0))  # the holder's clock, if longer
            if age is not None and age < stale_s:
                raise UsageError(self._refusal(seen.holder))
            if age is None:
                seen = self._unrenewed_after_staleness(seen)
            not_renewed = f"not renewed in {age if age is not None else lease_clock.STALE_S:.0f} s"
            _say(f"the experiment's lease of {holder_words(seen.holder)} is stale ({not_renewed}); taking it")
        writing = time.monotonic()
        try:
            self.tag = self.store.write(self._lease_text(), replacing=seen)
        except LeaseChanged:  # another driver created or took it first: the store refused this write
            if not self._still_mine():
                raise UsageError(self._refusal(self.store.read().holder)) from None
        if not self.store.conditional:
            time.sleep(READ_BACK_S)
            winner = self.store.read().holder
            if winner.get("token") != self.me["token"]:
                raise UsageError(self._refusal(winner))
        self.written_at = writing
        set_fence(self.experiment.location, self)
        self.renewing = threading.Thread(target=self._renew, name="lease-renewal", daemon=True)
        self.renewing.start()

    def _unrenewed_after_staleness(self, seen: Lease) -> Lease:
        """A lease whose age the store cannot tell (it keeps no times): read again after the staleness; the lease as it
        is then when its holder did not renew it meanwhile (every renewal rewrites it) or removed it, else a refusal."""
        _say(
            f"the experiment's lease of {holder_words(seen.holder)} has no age the store can tell; reading it again "
            f"in {lease_clock.STALE_S:.0f} s"
        )
        wait_unrenewed(lease_clock.STALE_S)
        again = self.store.read()
        if not again.holder:  # its holder ended meanwhile and removed it: free to take
            return again
        if again.holder != seen.holder or again.tag != seen.tag:
            raise UsageError(self._refusal(again.holder))
        return again

    def _lease_text(self) -> str:
        return json.dumps({**self.me, **lease_clock.timing(), "renewed": time.time()})

    def _still_mine(self) -> bool:
        """After a refused conditional write: whether the lease is ours all the same (our own earlier try of the
        same write landed and its answer was lost), taking its version as our last write when it is."""
        now = self.store.read()
        if now.holder.get("token") != self.me["token"]:
            return False
        self.tag = now.tag
        return True

    def check(self) -> None:
        """The fence: reads the lease back; raises `LeaseLost` (and writes nothing more) when it is not ours."""
        if self.lost is not None:
            raise self.lost
        holder = self._read_holder()
        if holder.get("token") != self.me["token"]:
            self._lose(holder)

    def _read_holder(self) -> dict:
        """The lease's holder, failing closed: a lease that cannot be read is read again until this driver's last
        write of it is a staleness old (until then no other driver can have taken it), and is then lost."""
        while True:
            try:
                return self.store.read().holder
            except OSError as exc:
                unconfirmed = time.monotonic() - self.written_at
                if unconfirmed >= lease_clock.STALE_S:
                    self._lose(None, f"{type(exc).__name__}: {exc}")
                time.sleep(min(READ_BACK_S, lease_clock.STALE_S - unconfirmed))

    def _lose(self, holder: dict | None, unreadable: str = "") -> None:
        """Stops this driver's writes, saying what it saw: the lease held by another, removed, or unreadable."""
        if holder is None:
            seen = f"its lease could not be read ({unreadable}), so another driver may have taken this search over"
        elif holder:
            seen = f"another driver took this search over: {holder_words(holder)}"
        else:
            seen = "its lease was removed"
        self.lost = LeaseLost(
            f"{self.experiment.location}: {seen}; this driver last wrote its lease "
            f"{time.monotonic() - self.written_at:.0f} s ago (a stall, a suspended machine, a network partition) and "
            "stopped without another write to the experiment"
        )
        self.released.set()
        _say(str(self.lost))
        raise self.lost

    def _renew(self) -> None:
        while not self.released.wait(lease_clock.renew_s()) and self._renew_once():
            pass

    def _renew_once(self) -> bool:
        """Renews the lease if it is still ours (conditionally where the store can, else after reading it back);
        False once it is lost (nothing more is written)."""
        try:
            if not self.store.conditional:
                self.check()
            self._write_renewal()
        except LeaseLost:
            return False
        except Exception as exc:  # noqa: BLE001 - a lease that cannot be renewed is named; the search goes on
            _say(f"the experiment's lease could not be renewed ({type(exc).__name__}: {exc})")
        return True

    def _write_renewal(self) -> None:
        writing = time.monotonic()
        try:
            self.tag = self.store.write(self._lease_text(), replacing=Lease(self.me, self.tag))
            self.written_at = writing
        except LeaseChanged:  # the store holds a version this driver did not write
            if not self._still_mine():
                self._lose(self.store.read().holder)

    def _refusal(self, holder: dict) -> str:
        who = holder_words(holder) if holder else "its lease changed while this driver took it"
        return (
            f"{self.experiment.location}: another driver is writing this search: {who}; "
            "wait for it to end or stop it (Ctrl-C), then run the command again"
        )

    def release(self) -> None:
        self.released.set()
        if self.renewing is not None:
            self.renewing.join(timeout=5)
            self.renewing = None
            self._delete_lease()
        set_fence(self.experiment.location, None)
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def _delete_lease(self) -> None:
        """Deletes the lease if it is still ours (on S3: exactly the version read, so never a newcomer's)."""
        if self.lost is not None:
            return
        try:
            held = self.store.read()
            if held.holder.get("token") == self.me["token"]:
                self.store.delete(held)
        except (OSError, LeaseChanged):
            pass  # left to go stale

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def wait_unrenewed(seconds: float) -> None:
    """The wait for a lease whose age the store cannot tell to be renewed by its holder, if it is alive."""
    time.sleep(seconds)


def _say(line: str) -> None:
    print(f"search: {line}", file=sys.stderr, flush=True)
