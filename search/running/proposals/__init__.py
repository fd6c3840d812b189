"""Proposals: the study opened for a search (`study_setup`), how Optuna proposes (`sampler`; `late_random`: the
random share of a long search), and the study behind Tune's `Searcher` (`searcher`)."""
