"""optuna-dashboard on a search's study (`study.log`), served on 127.0.0.1 and read-only: the search driver is the
study's one writer, so the dashboard's own writes (Mark Fail, deletions, notes) are refused with 403."""

from __future__ import annotations

from pathlib import Path

from search.results.tensorboard import viewer_port
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import STUDY_FILE


def dashboard_address(experiment: Path, port: int, host: str = "127.0.0.1") -> tuple[Path, int]:
    """The study file to serve and the port to serve it on; refused in one line when either will not do."""
    study = experiment / STUDY_FILE
    if not study.is_file():
        raise UsageError(f"{experiment}: holds no {STUDY_FILE} (is it an experiment folder of `run`?)")
    return study, viewer_port(port, host)


READS = {"GET", "HEAD", "OPTIONS"}
REFUSAL = b'{"reason": "this dashboard is read-only: the search driver is the study\'s one writer"}'


def read_only(app):
    """A WSGI app that passes reads to `app` and refuses every write with 403."""

    def guarded(environ, start_response):
        if environ.get("REQUEST_METHOD", "GET").upper() in READS:
            return app(environ, start_response)
        start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(REFUSAL)))])
        return [REFUSAL]

    return guarded


def serve(study: Path, port: int, host: str = "127.0.0.1", ready=lambda: None) -> None:
    """Serve until interrupted (blocks); `ready()` is called once the port is bound."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    import optuna_dashboard
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):  # no line per request on the terminal
            pass

    app = read_only(optuna_dashboard.wsgi(JournalStorage(JournalFileBackend(str(study)))))
    with make_server(host, port, app, handler_class=QuietHandler) as server:
        ready()
        server.serve_forever()
