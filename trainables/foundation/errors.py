"""Errors the CLI turns into one clear line and an exit code."""


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""

    exit_code = 2


class SearchFailed(Exception):
    """The search ran but could not produce its result: printed as one line, exit code 1."""

    exit_code = 1


class SearchInterrupted(Exception):
    """The search stopped before it finished (Ctrl-C): it can be resumed. Exit code 130, as for SIGINT."""

    exit_code = 130

    def __init__(self, experiment):
        super().__init__(f"search interrupted; resume it with: python -m search resume {experiment}")


class RemoteCommandFailed(Exception):
    """A command that ran on the cluster (through Ray Client) ended with an error: its line and exit code."""

    def __init__(self, exit_code: int, message: str):
        super().__init__(message)
        self.exit_code = exit_code
