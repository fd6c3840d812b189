"""`python -m search <command> ...`: a small dispatch table of subcommands."""

from __future__ import annotations

import sys

from search.commands import cmd_run, cmd_spaces
from search.model_commands import cmd_export, cmd_predict
from search.resuming import cmd_resume
from search.running.clock import start_clock, this_process_age_s
from search.viewers import cmd_dashboard, cmd_report, cmd_tensorboard
from trainables.foundation.errors import SearchFailed, SearchInterrupted, UsageError

COMMANDS = {
    "run": (cmd_run, "run a hyperparameter search: run space=NAME [key=value ...] [--dry-run]"),
    "resume": (cmd_resume, "continue an interrupted search, or grow one: resume EXPERIMENT_DIR [trials=N]"),
    "export": (
        cmd_export,
        "export a trial's best checkpoint: export EXPERIMENT_DIR [out=PATH] [trial=ID] [max.params=N ...] [--replace]",
    ),
    "predict": (
        cmd_predict,
        "classify images, folders or IDX files (labelled: the accuracy): predict EXPORT_DIR INPUT... [--all] [--json]",
    ),
    "tensorboard": (
        cmd_tensorboard,
        "serve an experiment's TensorBoard on 127.0.0.1: tensorboard EXPERIMENT_DIR [port=N]",
    ),
    "dashboard": (cmd_dashboard, "serve optuna-dashboard on an experiment's study: dashboard EXPERIMENT_DIR [port=N]"),
    "report": (cmd_report, "trial table, early-stopping savings and plots: report EXPERIMENT_DIR"),
    "spaces": (cmd_spaces, "list the search spaces and what each searches"),
}


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the command line: its clock counts from when this process started
        start_clock(this_process_age_s())
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m search <command> [args]\n\ncommands:")
        for name, (_, help_text) in COMMANDS.items():
            print(f"  {name:<10} {help_text}")
        return 0
    name, args = argv[0], argv[1:]
    try:
        if name not in COMMANDS:
            raise UsageError(f"{name}: unknown command; commands: {', '.join(COMMANDS)}")
        return COMMANDS[name][0](args)
    except (UsageError, SearchFailed, SearchInterrupted) as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
