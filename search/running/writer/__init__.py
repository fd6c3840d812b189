"""The one writer of an experiment: its lock (`lock`), and the lease that stands for it on a URI (`lease_store`).
No Ray, no Optuna."""
