"""Running a search: the checks before Ray, joining Ray, the Tune run (Optuna proposes, ASHA stops) and what the
driver does while trials run, in rooms that import only rooms below them (docs/design.md, "The layers";
tests/test_layers.py checks it)."""
