"""The experiment's filesystem as the driver's Ray Tune sees it: every write first passes the driver's fence.

On a URI, Ray Tune copies its driver folder (its snapshot, a failed trial's `error.txt` and `error.pkl`) to the
experiment from a thread of its own, outside this project's uploads. Handed to Tune as `storage_filesystem`, this
filesystem checks the experiment's lease (trainables.foundation.storage.check_fence) before each write call, reading
it back at most once a second (CONFIRMED_S: a snapshot of thousands of trial folders reads it about once a second of
copying, not once a folder; a driver stalled or suspended past the lease's staleness always reads it again: the
second counts time asleep too). Once the lease is another's or removed,
or this driver released it, every later write does nothing: a driver taken over writes nothing more to the
experiment but what a copy under way had begun. Reads pass through. A copy pickled into another process (Ray's trial
processes, which hold no lease) fences nothing. pyarrow only."""

from __future__ import annotations

import threading
import time

import pyarrow
import pyarrow.fs

from trainables.foundation.storage import check_fence, fence_lost, filesystem, holds_fence, uri_parent

CONFIRMED_S = 1.0  # how long a lease read back as this driver's stands for the writes that follow


def _clock() -> float:
    """Seconds that go on while the machine sleeps (a suspended laptop's lease may be taken meanwhile)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


class FencedHandler(pyarrow.fs.FileSystemHandler):
    """`inner` (a pyarrow filesystem) with each write checked against the fence of the experiment at `location`."""

    def __init__(self, inner: pyarrow.fs.FileSystem, location: str):
        self.inner, self.location = inner, location
        self.guarded = holds_fence(location)  # made by the driver, under its lease: its writes end with the lease
        self.fenced, self.confirmed_at = False, float("-inf")
        self._reading = threading.Lock()  # pyarrow copies from several threads: one reads the lease back, all use it

    def __reduce__(self):  # Ray pickles Tune's storage into each trial, where no lease is held
        return FencedHandler, (self.inner, self.location)

    def _may_write(self) -> bool:
        """False once this driver's lease of the experiment is lost (the fence has said so on the terminal) or
        released; from then on, always."""
        if self.fenced or not self.guarded:
            return not self.fenced
        # released (the search ended: another driver may hold it now) or known lost: no read needed
        if not holds_fence(self.location) or fence_lost(self.location) is not None:
            self.fenced = True  # never set back: from here on every write does nothing
            return False
        with self._reading:
            if _clock() - self.confirmed_at < CONFIRMED_S:
                return True
            try:
                check_fence(self.location)
            except Exception:
                if fence_lost(self.location) is None:
                    raise
                self.fenced = True
                return False
            self.confirmed_at = _clock()
            return True

    # writes: each passes the fence first; a lost lease makes them do nothing
    def create_dir(self, path, recursive):
        if self._may_write():
            self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        if self._may_write():
            self.inner.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        if self._may_write():
            self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        if self._may_write():
            self.inner.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path):
        if self._may_write():
            self.inner.delete_file(path)

    def move(self, src, dest):
        if self._may_write():
            self.inner.move(src, dest)

    def copy_file(self, src, dest):
        if self._may_write():
            self.inner.copy_file(src, dest)

    def open_output_stream(self, path, metadata):
        if self._may_write():
            return self.inner.open_output_stream(path, compression=None, metadata=metadata)
        return pyarrow.BufferOutputStream()  # written nowhere

    def open_append_stream(self, path, metadata):
        if self._may_write():
            return self.inner.open_append_stream(path, compression=None, metadata=metadata)
        return pyarrow.BufferOutputStream()

    # reads
    def get_type_name(self):
        return f"fenced+{self.inner.type_name}"

    def normalize_path(self, path):
        return self.inner.normalize_path(path)

    def equals(self, other):
        return self == other

    def __eq__(self, other):  # pyarrow compares two handlers with ==
        return isinstance(other, FencedHandler) and other.inner.equals(self.inner) and other.location == self.location

    __hash__ = None

    def get_file_info(self, paths):
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.inner.get_file_info(selector)

    def open_input_stream(self, path):
        return self.inner.open_input_stream(path, compression=None)

    def open_input_file(self, path):
        return self.inner.open_input_file(path)


def fenced_filesystem(location: str) -> tuple[pyarrow.fs.FileSystem, str]:
    """(filesystem, path on it) of the URI `location`'s parent folder, for Tune's `storage_filesystem` and
    `storage_path`: the experiment's writes fenced by its lease."""
    inner, path = filesystem(uri_parent(location))
    return pyarrow.fs.PyFileSystem(FencedHandler(inner, location)), path
