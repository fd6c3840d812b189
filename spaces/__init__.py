"""Named search spaces: one module each, defining `SPACE = spaces.Space(...)`.

A new module here is a new space; nothing else needs to change. A space of your own, anywhere, does the same:
`from spaces import Space` (and `OwnData`, what a space's own dataset function returns: docs/spaces.md).
"""

from trainables.foundation.space import Space
from trainables.own_data import OwnData

__all__ = ["OwnData", "Space"]
