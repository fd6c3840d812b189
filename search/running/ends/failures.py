"""Why a trial failed, in one line: the root exception (type and message) out of the tracebacks Ray wraps around it
(Ray's actor header, Ray Train's `WorkerGroupError` with a snippet per rank, chained tracebacks), or that a worker
process died; and a trial's error file made plain text. No Ray.
"""

from __future__ import annotations

import re
from pathlib import Path

# Terminal control sequences Ray writes into a trial's error (its colours, `\x1b[36m...\x1b[39m`): CSI sequences of
# any final byte, and the two-byte escapes.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
# `Type: message`, the type optionally with its module path; only names that read as exceptions.
EXCEPTION_LINE = re.compile(
    r"^((?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Loss|Room|Memory|Died))): (\S.*)$"
)
WRAPPERS = set(
    "RayTaskError RayActorError WorkerGroupError TrainingFailedError ControllerError TuneError StartTraceback "
    "ActorDiedError".split()
)
WORKER_DIED = ("worker process has died", "actor died unexpectedly")
LIMIT = 400


def root_cause(text: str) -> str:
    """One line: `Type: message` of the root exception, or what happened to a worker that died."""
    text = ANSI.sub("", text or "")
    if any(sign in text for sign in WORKER_DIED):  # of any rank: the others' errors (a broken gloo pair) follow it
        pid = re.search(r"\bpid: (\d+)", text)
        which = f" (pid {pid.group(1)})" if pid else ""
        return (
            f"WorkerDied: a training worker process{which} died: killed by a signal or by the out-of-memory "
            "killer (see the system log)"
        )
    if "[Rank 0 Error Snippet]:" in text:  # Ray Train: the first rank's own failure, not the others' echo of it
        text = text.split("[Rank 0 Error Snippet]:", 1)[1].split("[Rank 1 Error Snippet]", 1)[0]
    causes = []
    for line in text.splitlines():
        match = EXCEPTION_LINE.match(line.strip())
        if match and match.group(2) not in WRAPPERS:
            causes.append(f"{match.group(2)}: {match.group(3)}")
    if causes:
        return shorten(causes[-1])
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return shorten(lines[-1]) if lines else "unknown error"


def plain_text(path: str | Path) -> str:
    """A trial's error file (Tune's `error.txt`) rewritten without terminal colour codes, so that it reads as plain
    text in an editor or a browser; returns its text ("" when it cannot be read). Tune appends a failure to it per
    try and syncs it to the experiment afterwards, so the plain copy is the one the experiment keeps."""
    try:
        text = Path(path).read_text(errors="replace")
    except (OSError, TypeError):
        return ""
    plain = ANSI.sub("", text)
    if plain != text:
        try:
            Path(path).write_text(plain)
        except OSError:
            pass  # the cause is still read from the plain text
    return plain


def shorten(line: str) -> str:
    return line if len(line) <= LIMIT else line[: LIMIT - 3] + "..."
