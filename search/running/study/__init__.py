"""The study: the search's Optuna study, its one writer (`record`), what it holds (`queries`), its storage (`journal`),
how it holds the searched values (`coding`), the rule of how a trial ended (`endings`), and Optuna's private
internals behind one door (`optuna_private`). Optuna only: no Ray, no torch."""
