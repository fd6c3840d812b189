"""Joining Ray: the address a search joins (`cluster`), `ray.init` and its environment (`connect`)."""
