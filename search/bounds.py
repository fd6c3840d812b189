"""Bounds on a search's objectives as `export` takes them: `max.params=200000` and `min.val_acc=0.98` type in
any shell as they are; the quoted `'params<=200000'` and `'val_acc>=0.98'` still work. No Ray, no torch."""

from __future__ import annotations

import contextlib
import re

from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import DIRECTIONS, Bound, parse_bound

FORMS = (
    "a bound is max.OBJECTIVE=N or min.OBJECTIVE=N (max.params=200000, min.val_acc=0.98; quoted, 'params<=200000' "
    f"and 'val_acc>=0.98' work too), the objectives being {', '.join(DIRECTIONS)}"
)
KEYED = re.compile(r"^(max|min)\.([^=]*)=(.*)$")
OPS = {"max": "<=", "min": ">="}


def split_bounds(words: list[str]) -> tuple[list[Bound], list[str]]:
    """(the bounds among `words`, the other words). A word that looks like a bound but is none is refused naming
    the accepted forms; so is an objective's bare name, what bash leaves of an unquoted `val_acc>=0.98`."""
    found = [(word, bound_of(word)) for word in words]
    return [bound for _, bound in found if bound], [word for word, bound in found if not bound]


def bound_of(word: str) -> Bound | None:
    keyed = KEYED.match(word)
    if keyed:
        side, name, number = keyed.groups()
        if name not in DIRECTIONS:
            raise UsageError(f"{word}: unknown objective {name!r}; {FORMS}")
        try:
            return Bound(name, OPS[side], float(number))
        except ValueError:
            raise UsageError(f"{word}: {number!r} is not a number; {FORMS}") from None
    if word in DIRECTIONS:
        raise UsageError(
            f"{word}: a bound needs its limit, e.g. max.{word}=N or min.{word}=N (bash took an unquoted > or < for a "
            f"redirection: {word}>=N writes a file named =N); {FORMS}"
        )
    if "<" not in word and ">" not in word:
        return None
    with contextlib.suppress(UsageError):
        bound = parse_bound(word)  # the quoted form
        if bound:
            return bound
    raise UsageError(f"{word}: not a bound; {FORMS}")
