"""The live view's last line on a terminal, rewritten in place: a carriage return and an erase to the line's end, then
the new status, left without a newline so that the next rewrite replaces it. Lines meant to stay (a trial's end) are
written over the status line, each with its newline, and the status follows them: it is always the last line. Piped
output never comes here (search.running.live_view prints plain lines there)."""

from __future__ import annotations

import shutil

CLEAR = "\r\x1b[K"  # back to the line's start, then erase to its end


def terminal_columns(fallback: int) -> int:
    """The terminal's width (COLUMNS first, as shutil reads it), `fallback` where none is known."""
    return shutil.get_terminal_size((fallback, 24)).columns


def fit(choices: list[str], columns: int) -> str:
    """The first of `choices` (fullest first) shorter than the terminal, else the last cut to fit: a status line
    wider than the terminal would wrap, and a carriage return goes back to the start of its last row only."""
    room = max(1, columns - 1)
    return next((choice for choice in choices if len(choice) <= room), choices[-1][:room])


class StatusLine:
    """What to write to a terminal to keep lines and rewrite the status under them."""

    def __init__(self):
        self.shown = False  # a status line stands open (no newline after it)
        self.closed = False  # the search's end: the last status was left as a line; later writes are plain

    def rewrite(self, kept: list[str], status: str) -> str:
        """The status line's replacement: `kept` lines first (each ending its line), then the status, left open."""
        self.shown = True
        return CLEAR + "".join(f"{line}\n" for line in kept) + status

    def close(self, kept: list[str], status: str) -> str:
        """The last rewrite, its line ended so that what is printed next starts on a line of its own."""
        text = self.rewrite(kept, status) + "\n"
        self.shown, self.closed = False, True
        return text
