"""Proposals: the study opened for a search (`study_setup`), how Optuna proposes (`sampler`), and the study behind
Tune's `Searcher` (`searcher`)."""
