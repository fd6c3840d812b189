"""Named search spaces: one module each, defining `SPACE = search.space.Space(...)`.

A new module here is a new space; nothing else needs to change.
"""
