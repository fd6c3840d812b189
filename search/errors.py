"""Errors the CLI turns into one clear line and an exit code."""


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""

    exit_code = 2


class SearchFailed(Exception):
    """The search ran but could not produce its result: printed as one line, exit code 1."""

    exit_code = 1
