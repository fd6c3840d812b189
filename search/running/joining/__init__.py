"""Joining Ray: the address a search joins (`cluster`), `ray.init` and its environment (`connect`), and a Ray Client
connection's own rules (`client`)."""
