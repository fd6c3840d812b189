"""`search.space.Space`, the name space files written before `spaces.Space` import: it still works."""

from trainables.foundation.space import Space

__all__ = ["Space"]
