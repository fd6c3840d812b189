"""Running a search: the checks before Ray, joining Ray, the Tune run (Optuna proposes, ASHA stops) and what the
driver does while trials run. Its rooms, each importing only rooms below it in this list (and, of the session's
modules, only the terminal's `clock` and `settings`, search.json): `tracking` (MLflow), `proposals` (the study
opened, Optuna's sampler, Tune's searcher), `ends` (how a trial ends: one decider), `asha` (the rungs and our
schedulers), `joining` (Ray), `study` (the Optuna study and its one writer's record), `writer` (one writer of an
experiment); tests/test_layers.py checks it. Imports `search.results`, `search.samples`, the foundation, and of
the trial side what the checks before Ray need (`trainables.data`, `models`, `own_step`), what the driver hands
to Ray or asks of it (`trainables.driver.train_trial`, Tune's trainable; `trainables.room`, the cluster's
resources; `trainables.trainer`, Ray Train's coordinator started ahead) and `trainables.ray_private` (Ray's
internals, checked before Ray starts)."""
