"""One writer per experiment: the driver of `run` or `resume` holds the experiment's lock while it writes.

Local folder (or a network mount): `driver.lock` in the experiment folder, taken with `flock`, which is atomic and
which the kernel releases when its holder dies, however it dies (SIGKILL too): a lock is stale exactly when its
holder is gone. The file names the holder (pid, host, command, since when); a second driver is refused with that
name, and one that finds the name of a holder that is gone says that it takes the lock over.

URI (object store): the driver's working folder on this machine is locked as above, and a lease object,
`driver.lease`, is written to the URI, read back after a pause (the last writer wins; a driver that reads back
another's lease gives way), and renewed every `RENEW_S`. A lease not renewed for `STALE_S` is stale and is taken
over. pyarrow offers no conditional write, so two drivers on two machines that start within the pause of each other
could both pass: the README says so.

No Ray, no torch: pyarrow only.
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

from trainables.foundation.errors import UsageError
from trainables.foundation.storage import LEASE_FILE, LOCK_FILE, Experiment, delete_file, exists, read_text, write_text

RENEW_S, STALE_S, READ_BACK_S = 15.0, 60.0, 0.5


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
        self.renewing: threading.Thread | None = None
        self.released = threading.Event()

    def acquire(self) -> WriterLock:
        self._lock_folder(self.experiment.local)
        if self.experiment.remote:
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
            holder = _parse(os.pread(fd, 4096, 0))
            os.close(fd)
            raise UsageError(self._refusal(holder)) from None
        left = _parse(os.pread(fd, 4096, 0))
        if left:
            _say(f"the experiment's lock of {holder_words(left)} is stale (that driver is gone); taking it over")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.me).encode(), 0)
        os.fsync(fd)
        self.fd = fd

    def _take_lease(self) -> None:
        lease = self.experiment.join(LEASE_FILE)
        held = _read_lease(lease)
        if held and time.time() - float(held.get("renewed", 0)) < STALE_S:
            raise UsageError(self._refusal(held))
        if held:
            _say(f"the experiment's lease of {holder_words(held)} is stale (not renewed in {STALE_S:.0f} s); taking it")
        self._write_lease()
        time.sleep(READ_BACK_S)
        winner = _read_lease(lease)
        if not winner or winner.get("token") != self.me["token"]:
            raise UsageError(self._refusal(winner or {}))
        self.renewing = threading.Thread(target=self._renew, name="lease-renewal", daemon=True)
        self.renewing.start()

    def _write_lease(self) -> None:
        write_text(self.experiment.join(LEASE_FILE), json.dumps({**self.me, "renewed": time.time()}))

    def _renew(self) -> None:
        while not self.released.wait(RENEW_S):
            try:
                self._write_lease()
            except Exception as exc:  # noqa: BLE001 - a lease that cannot be renewed is named; the search goes on
                _say(f"the experiment's lease could not be renewed ({type(exc).__name__}: {exc})")

    def _refusal(self, holder: dict) -> str:
        return (
            f"{self.experiment.location}: another driver is writing this search: {holder_words(holder)}; "
            "wait for it to end or stop it (Ctrl-C), then run the command again"
        )

    def release(self) -> None:
        self.released.set()
        if self.renewing is not None:
            self.renewing.join(timeout=5)
            self.renewing = None
            try:
                if (_read_lease(self.experiment.join(LEASE_FILE)) or {}).get("token") == self.me["token"]:
                    delete_file(self.experiment.join(LEASE_FILE))
            except OSError:
                pass  # left to go stale
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _parse(data: bytes) -> dict:
    try:
        value = json.loads(data.decode() or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _read_lease(location: str) -> dict:
    try:
        return _parse(read_text(location).encode()) if exists(location) else {}
    except OSError:
        return {}


def _say(line: str) -> None:
    print(f"search: {line}", file=sys.stderr, flush=True)
