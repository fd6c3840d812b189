"""The commands that show a search: TensorBoard, optuna-dashboard and the report. optuna-dashboard serves a search's
study (`study.log`) on 127.0.0.1 read-only: the search driver is the study's one writer, so the dashboard's own writes
(Mark Fail, deletions, notes) are refused with 403."""

from __future__ import annotations

import signal
from pathlib import Path

from search.commands import split_options, test_text
from search.results.summary import SUMMARY_FILE
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import SEARCH_FILE, STUDY_FILE, Experiment, exists, open_for_reading


def viewer_args(args: list[str], name: str, default_port: int) -> tuple[str, int]:
    """EXPERIMENT_DIR and `port=N` (0, any free port, to 65535) of a viewer."""
    from trainables.foundation.config import parse_scalar

    positional, options, _ = split_options(args, {"port"})
    if len(positional) != 1:
        raise UsageError(f"usage: python -m search {name} EXPERIMENT_DIR [port=N]")
    port = parse_scalar("port", options.get("port", str(default_port)), int)
    if not 0 <= port <= 65535:
        raise UsageError(f"port={port}: must be between 0 (any free port) and 65535")
    return positional[0], port


def cmd_dashboard(args: list[str]) -> int:
    folder, port = viewer_args(args, "dashboard", 8080)
    experiment = open_for_reading(folder, SEARCH_FILE, missing="not an experiment folder")
    study, port = dashboard_address(experiment.local, port)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    said = f"optuna-dashboard for {folder} at http://127.0.0.1:{port}/ (read-only; Ctrl-C stops it)"
    try:
        serve(study, port, ready=lambda: print(said, flush=True))
    except (KeyboardInterrupt, SystemExit):
        pass
    return 0


def dashboard_address(experiment: Path, port: int, host: str = "127.0.0.1") -> tuple[Path, int]:
    """The study file to serve and the port to serve it on; refused in one line when either will not do."""
    study = experiment / STUDY_FILE
    if not study.is_file():
        raise UsageError(f"{experiment}: holds no {STUDY_FILE} (is it an experiment folder of `run`?)")
    from search.results.tensorboard import viewer_port

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
    """Serve until interrupted (blocks); `ready()` is called once the port is bound. Each request is answered in a
    thread of its own, so that Ctrl-C (and SIGTERM) always lands in the loop that accepts them: in a request answered
    by the main thread, wsgiref's handler catches the KeyboardInterrupt (a bare `except:`) and serves on. A request
    still being sent holds neither the stop nor the exit."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    import optuna_dashboard
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):  # no line per request on the terminal
            pass

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        block_on_close = False

    app = read_only(optuna_dashboard.wsgi(JournalStorage(JournalFileBackend(str(study)))))
    with make_server(host, port, app, server_class=Server, handler_class=QuietHandler) as server:
        ready()
        server.serve_forever()


def cmd_tensorboard(args: list[str]) -> int:
    folder, port = viewer_args(args, "tensorboard", 6006)
    from search.results.tensorboard import start_server, stop_server

    experiment = Experiment.at(folder)
    if experiment.remote:  # TensorBoard reads a snapshot downloaded now
        experiment = open_for_reading(folder, SEARCH_FILE, missing="not an experiment folder")
    server, url = start_server(experiment.local, port)
    print(f"TensorBoard for {folder} at {url} (Ctrl-C stops it)", flush=True)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        return server.wait()
    except (KeyboardInterrupt, SystemExit):
        return 0
    finally:
        stop_server(server)


def _stop_on_sigterm(signum, frame):
    raise SystemExit(0)  # unwinds through cmd_tensorboard's finally, which stops the server


def cmd_report(args: list[str]) -> int:
    if len(args) != 1:
        raise UsageError("usage: python -m search report EXPERIMENT_DIR")
    from search.results.report import build_report, savings_line, unended_words

    if exists(Experiment.at(args[0]).join(SUMMARY_FILE)):
        report, unended = build_report(open_for_reading(args[0], SUMMARY_FILE).local), None
    else:  # a search still running (or interrupted): what has ended so far
        from search.running.trial_results import summary_so_far

        experiment = open_for_reading(args[0], SEARCH_FILE, missing="not an experiment folder")
        summary, unended = summary_so_far(experiment)
        report = build_report(experiment.local, experiment.location, summary, unended)
    if unended is not None:
        print(unended_words(unended, report["trials"]) + "\n")
    print(report["table"])
    print()
    best = report["best"]
    if best:
        value = best["metrics"][report["metric"]]
        print(f"best: trial {best['trial_id']} epoch {best['epoch']} {report['metric']}={value:.4f}{test_text(best)}")
    if report["front"]:
        print(report["front"])
    print(savings_line(report["savings"]))
    if report["importances"]:
        print(report["importance_line"])
    print(f"plots: {', '.join(report['plots'])} and index.html in {report['folder']}")
    return 0
