"""Running a search: the checks before Ray, joining Ray, the Tune run (Optuna proposes, ASHA stops) and what the
driver does while trials run. Imports `search.results` and the foundation, never the trial code's internals."""
