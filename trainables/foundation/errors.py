"""Errors the CLI turns into one clear line and an exit code, and the one line that names a diverged trial."""


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""

    exit_code = 2


class SearchFailed(Exception):
    """The search ran but could not produce its result: printed as one line, exit code 1."""

    exit_code = 1


class RayDidNotStart(SearchFailed):
    """Ray could not be started or joined (a busy machine, a cluster that stopped answering): nothing ran and
    trying again may well work. Exit code 75, sysexits' EX_TEMPFAIL (a temporary failure: retry)."""

    exit_code = 75


class SearchInterrupted(Exception):
    """The search stopped before it finished (Ctrl-C): it can be resumed. Exit code 130, as for SIGINT."""

    exit_code = 130

    def __init__(self, experiment):
        super().__init__(f"search interrupted; resume it with: python -m search resume {experiment}")


def divergence_message(row: dict, hp: dict) -> str:
    """Why a trial whose loss became NaN or infinite cannot go on: the epoch, its losses and its hyperparameters."""
    chosen = ", ".join(
        f"{key}={value:.3g}" if isinstance(value, float) else f"{key}={value}" for key, value in hp.items()
    )
    return (
        f"training diverged: the loss became non-finite at epoch {row.get('epoch')} (train_loss="
        f"{row.get('train_loss')}, val_loss={row.get('val_loss')}) with {chosen}; a lower lr usually helps"
    )


def divergence_cause(row: dict, hp: dict) -> str:
    """A diverged trial's one-line cause, the same whether its driver raises NonFiniteLoss or Tune stops it first."""
    return f"NonFiniteLoss: {divergence_message(row, hp)}"
