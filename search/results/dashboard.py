"""optuna-dashboard on a search's study (`study.log`, search.running.study), served on 127.0.0.1.

The dashboard reads the study as Optuna stores it: every trial with its hyperparameters, every epoch as an
intermediate value, its state and score; its own plots (history, importance, parallel coordinates, intermediate
values) come with it. Offline: the dashboard's pages ship in its wheel.
"""

from __future__ import annotations

from pathlib import Path

from search.results.tensorboard import free_port, port_is_free
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import STUDY_FILE


def dashboard_address(experiment: Path, port: int, host: str = "127.0.0.1") -> tuple[Path, int]:
    """The study file to serve and the port to serve it on; refused in one line when either will not do."""
    study = experiment / STUDY_FILE
    if not study.is_file():
        raise UsageError(f"{experiment}: holds no {STUDY_FILE} (is it an experiment folder of `run`?)")
    if port == 0:
        return study, free_port(host)
    if not port_is_free(port, host):
        raise UsageError(f"port={port}: already in use on {host}; choose another port= (or port=0 for any free one)")
    return study, port


def serve(study: Path, port: int, host: str = "127.0.0.1") -> None:
    """Serve until interrupted (blocks)."""
    import optuna_dashboard
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna_dashboard.run_server(JournalStorage(JournalFileBackend(str(study))), host=host, port=port)
