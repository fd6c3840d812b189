"""One writer per experiment: the driver of `run` or `resume` holds the experiment's lock while it writes.

Local folder (or a network mount): `driver.lock` in the experiment folder, taken with `flock`, which is atomic and
which the kernel releases when its holder dies, however it dies (SIGKILL too): a lock is stale exactly when its
holder is gone. The file names the holder (pid, host, command, since when); a second driver is refused with that
name, and one that finds the name of a holder that is gone says that it takes the lock over.

URI (object store): the driver's working folder on this machine is locked as above, and a lease object,
`driver.lease`, is written to the URI, read back after a pause (the last writer wins; a driver that reads back
another's lease gives way), and renewed every `RENEW_S`. A lease not renewed for `STALE_S` is stale and is taken
over; its age is judged by the store's clock (the lease's modification time against a probe's the store stamps
now), never by comparing two machines' clocks. The holder is fenced: before each renewal, and before each write this
process makes to the experiment (uploads, `end.json`, deletions: search.foundation.storage's fence), it reads the
lease back; finding it is no longer its own (it stalled past `STALE_S`, a suspended machine, a partition), it
stops at once without another write, saying who holds it now (`LeaseLost`, exit 1). pyarrow offers no conditional
write, so two drivers that take a stale lease within the read-back pause of each other could both pass, and a
holder could renew in the instant between its read-back and its write: docs/one-writer.md says so.

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
from pathlib import Path, PurePosixPath

from trainables.foundation.errors import SearchFailed, UsageError
from trainables.foundation.storage import (
    CLOCK_FILE,
    LEASE_FILE,
    LOCK_FILE,
    Experiment,
    exists,
    filesystem,
    read_text,
    set_fence,
    write_text_unfenced,
)

# Seconds: a lease not renewed for STALE_S is stale (SEARCH_LEASE_STALE_S shortens it for the tests of a takeover)
STALE_S = float(os.environ.get("SEARCH_LEASE_STALE_S", "60"))
RENEW_S, READ_BACK_S = STALE_S / 4, 0.5


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
        self.renewing: threading.Thread | None = None
        self.released = threading.Event()
        self.lost: LeaseLost | None = None

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
        if held:
            age = _age_by_store(lease)
            if age < STALE_S:
                raise UsageError(self._refusal(held))
            _say(f"the experiment's lease of {holder_words(held)} is stale (not renewed in {age:.0f} s); taking it")
        self._write_lease()
        time.sleep(READ_BACK_S)
        winner = _read_lease(lease)
        if not winner or winner.get("token") != self.me["token"]:
            raise UsageError(self._refusal(winner or {}))
        set_fence(self.experiment.location, self)
        self.renewing = threading.Thread(target=self._renew, name="lease-renewal", daemon=True)
        self.renewing.start()

    def _write_lease(self) -> None:
        write_text_unfenced(self.experiment.join(LEASE_FILE), json.dumps({**self.me, "renewed": time.time()}))

    def check(self) -> None:
        """The fence: reads the lease back; raises `LeaseLost` (and writes nothing more) when it is not ours."""
        if self.lost is not None:
            raise self.lost
        holder = _read_lease(self.experiment.join(LEASE_FILE), unreadable=None)
        if holder is None or holder.get("token") == self.me["token"]:
            return  # ours, or unreadable for a moment (the next check reads it again)
        self.lost = LeaseLost(
            f"{self.experiment.location}: another driver took this search over: "
            f"{holder_words(holder) if holder else 'its lease was removed'}; this driver "
            f"had not renewed its lease in {STALE_S:.0f} s (a stall, a suspended machine, a network partition) and "
            "stopped without another write to the experiment"
        )
        self.released.set()
        _say(str(self.lost))
        raise self.lost

    def _renew(self) -> None:
        while not self.released.wait(RENEW_S) and self._renew_once():
            pass

    def _renew_once(self) -> bool:
        """Reads the lease back, then renews it; False once it is lost (nothing more is written)."""
        try:
            self.check()
            self._write_lease()
        except LeaseLost:
            return False
        except Exception as exc:  # noqa: BLE001 - a lease that cannot be renewed is named; the search goes on
            _say(f"the experiment's lease could not be renewed ({type(exc).__name__}: {exc})")
        return True

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
                if (
                    self.lost is None
                    and (_read_lease(self.experiment.join(LEASE_FILE)) or {}).get("token") == self.me["token"]
                ):
                    _delete_unfenced(self.experiment.join(LEASE_FILE))
            except OSError:
                pass  # left to go stale
        set_fence(self.experiment.location, None)
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


def _read_lease(location: str, unreadable: dict | None = {}) -> dict | None:  # noqa: B006 - never mutated
    """The lease's holder ({} when there is none); `unreadable` when it cannot be read now."""
    try:
        return _parse(read_text(location).encode()) if exists(location) else {}
    except OSError:
        return unreadable


def _age_by_store(location: str) -> float:
    """Seconds since the lease at `location` was last written, by the store's own clock: its modification time
    against that of a probe object written now beside it."""
    fs, path = filesystem(location)
    probe = str(PurePosixPath(path).with_name(CLOCK_FILE))
    with fs.open_output_stream(probe) as stream:
        stream.write(b"now")
    written, now = fs.get_file_info([path, probe])
    if written.mtime is None or now.mtime is None:
        return STALE_S  # a store that keeps no times: the lease is judged stale, as before
    return (now.mtime - written.mtime).total_seconds()


def _delete_unfenced(location: str) -> None:
    fs, path = filesystem(location)
    fs.delete_file(path)


def _say(line: str) -> None:
    print(f"search: {line}", file=sys.stderr, flush=True)
