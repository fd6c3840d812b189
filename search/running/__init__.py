"""Running a search: the checks before Ray, joining Ray, the Tune run (Optuna proposes, ASHA stops) and what the
driver does while trials run. Its rooms, each pointing only down this list: `tracking` (MLflow), `proposals` (the
study opened, Optuna's sampler, Tune's searcher), `ends` (how a trial ends: one decider), `asha` (the rungs and our
schedulers), `joining` (Ray), `study` (the Optuna study and its one writer's record), `writer` (one writer of an
experiment). Imports `search.results`, the foundation, and of the trial side only what the driver hands to Ray or
asks of it: `trainables.driver.train_trial` (Tune's trainable), `trainables.room` (the cluster's resources) and
`trainables.trainer` (Ray Train's coordinator started ahead)."""
