"""The commands that show a search: TensorBoard, optuna-dashboard and the report. Each takes the words after its
name and returns an exit code."""

from __future__ import annotations

import signal

from search.commands import split_options, test_text
from search.results.summary import SUMMARY_FILE
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import SEARCH_FILE, Experiment, exists, open_for_reading


def port_option(options: dict[str, str], default: int) -> int:
    """`port=N` of a viewer: 0 (any free port) to 65535."""
    from trainables.foundation.config import parse_scalar

    port = parse_scalar("port", options.get("port", str(default)), int)
    if not 0 <= port <= 65535:
        raise UsageError(f"port={port}: must be between 0 (any free port) and 65535")
    return port


def cmd_dashboard(args: list[str]) -> int:
    positional, options, _ = split_options(args, {"port"})
    if len(positional) != 1:
        raise UsageError("usage: python -m search dashboard EXPERIMENT_DIR [port=N]")
    from search.results.dashboard import dashboard_address, serve

    port = port_option(options, 8080)
    experiment = open_for_reading(positional[0], SEARCH_FILE, missing="not an experiment folder")
    study, port = dashboard_address(experiment.local, port)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        serve(
            study,
            port,
            ready=lambda: print(
                f"optuna-dashboard for {positional[0]} at http://127.0.0.1:{port}/ (read-only; Ctrl-C stops it)",
                flush=True,
            ),
        )
    except (KeyboardInterrupt, SystemExit):
        pass
    return 0


def cmd_tensorboard(args: list[str]) -> int:
    positional, options, _ = split_options(args, {"port"})
    if len(positional) != 1:
        raise UsageError("usage: python -m search tensorboard EXPERIMENT_DIR [port=N]")
    from search.results.tensorboard import start_server, stop_server

    port = port_option(options, 6006)
    experiment = Experiment.at(positional[0])
    if experiment.remote:  # TensorBoard reads a snapshot downloaded now
        experiment = open_for_reading(positional[0], SEARCH_FILE, missing="not an experiment folder")
    server, url = start_server(experiment.local, port)
    print(f"TensorBoard for {positional[0]} at {url} (Ctrl-C stops it)", flush=True)
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
        ranked = ", ".join(f"{k} {v:.2f}" for k, v in report["importances"].items())
        print(f"hyperparameter importance for {report['metric']}: {ranked}")
    print(f"plots: {', '.join(report['plots'])} and index.html in {report['folder']}")
    return 0
