"""`python -m search <command> ...`: a small dispatch table of subcommands."""

from __future__ import annotations

import sys

from search.commands import cmd_run, cmd_spaces
from search.errors import SearchFailed, UsageError

COMMANDS = {
    "run": (cmd_run, "run a hyperparameter search: run space=NAME [key=value ...]"),
    "spaces": (cmd_spaces, "list the search spaces and what each searches"),
}


def usage() -> str:
    lines = ["usage: python -m search <command> [args]", "", "commands:"]
    lines += [f"  {name:<10} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, args = argv[0], argv[1:]
    try:
        if name not in COMMANDS:
            raise UsageError(f"{name}: unknown command; commands: {', '.join(COMMANDS)}")
        return COMMANDS[name][0](args)
    except (UsageError, SearchFailed) as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
