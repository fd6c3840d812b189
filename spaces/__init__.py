"""Named search spaces: one module each, defining `SPACE = spaces.Space(...)`.

A new module here is a new space; nothing else needs to change. A space of your own, anywhere, does the same:
`from spaces import Space`.
"""

from trainables.foundation.space import Space

__all__ = ["Space"]
