"""A trial process's own fence: a trial writes its checkpoints and rows to a URI experiment only while the driver that
started it holds the experiment's lease (docs/one-writer.md); it stops (`TrialFenced`) once the lease is another's or
removed, or unreadable for as long as that driver keeps it (trainables.foundation.lease_clock). A fenced trial has not
ended: the driver leaves it unended, and `resume` runs it on. pyarrow only: no Ray, no torch."""

from __future__ import annotations

import contextlib
import json
import time

from trainables.foundation.errors import SearchFailed
from trainables.foundation.lease_clock import unread_limit_s
from trainables.foundation.storage import LEASE_FILE, exists, filesystem, is_uri, uri_join

READ_AGAIN_S = 0.5  # seconds between two reads of a lease that could not be read


class TrialFenced(SearchFailed):
    """The trial's driver no longer holds the experiment's lease: the trial stops without another write."""


class TrialLease:
    """The lease of the driver that started this trial, read again before each of the trial's writes."""

    def __init__(self, experiment_dir: str, token: str | None = None):
        """`token`: the lease its driver held when it started the trial (the driver passes it: a trial that starts
        late never adopts a newer driver's lease); without one, the lease read now."""
        self.experiment_dir, self.location = experiment_dir, uri_join(experiment_dir, LEASE_FILE)
        self.holder: dict = {}
        self.holder = self._read()
        self.token = token or self.holder.get("token")  # None: no lease to go by

    def check(self) -> None:
        """Raises `TrialFenced` when the lease is no longer the one this trial started under."""
        if self.token is None:
            return
        now = self._read()
        if now.get("token") != self.token:
            seen = f"pid {now.get('pid')} on {now.get('host')} holds it now" if now else "it was removed"
            self._fenced(seen)

    def _read(self) -> dict:
        """The lease's holder ({} when there is none), read again while it cannot be read, until the limit of the
        clock of the driver that started this trial: then the trial stops."""
        since = time.monotonic()
        while True:
            try:
                return self._read_once()
            except OSError as exc:
                limit = unread_limit_s(self.holder)
                if time.monotonic() - since >= limit:
                    self._fenced(f"it could not be read for {limit:.0f} s ({type(exc).__name__}: {exc})")
                time.sleep(READ_AGAIN_S)

    def _read_once(self) -> dict:
        """One read of the lease; OSError when it cannot be read now."""
        fs, path = filesystem(self.location)
        try:  # one request: a missing lease is pyarrow's FileNotFoundError
            with fs.open_input_stream(path) as stream:
                return parse_holder(stream.read())
        except FileNotFoundError:
            return {}
        except OSError:
            with contextlib.suppress(OSError):
                if not exists(self.location):  # a store that words a missing file otherwise
                    return {}
            raise

    def _fenced(self, seen: str) -> None:
        started = self.holder
        raise TrialFenced(
            f"{self.experiment_dir}: the lease of the driver that started this trial (pid {started.get('pid')} on "
            f"{started.get('host')}) is no longer its own: {seen}; the trial stopped without another write"
        )


def trial_lease(experiment_dir: str, token: str | None = None) -> TrialLease | None:
    """The fence of a trial writing to `experiment_dir`: a URI's lease; None for a local folder (no lease)."""
    return TrialLease(experiment_dir, token) if is_uri(experiment_dir) else None


def parse_holder(data: bytes) -> dict:
    """A lease file's holder (empty for an empty, unreadable or foreign file), as the driver's lock reads it too."""
    try:
        value = json.loads(data.decode() or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}
