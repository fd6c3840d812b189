"""Where a search's MLflow store is and how to reach it: its URI, MLflow's client with short timeouts, the checks
before Ray, the search's parent run, and MLflow's entities from plain values. No Ray, no torch."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import time
from pathlib import Path

from search.results.score import is_finite_number
from trainables.foundation.config import RunConfig, TrackingConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment

TRACKING_FOLDER = "mlflow"  # the default store in the experiment folder: mlflow.db and artifacts/
ROLE, EXPERIMENT_TAG, TRIAL_TAG = "search.role", "search.experiment", "search.trial_id"
SEARCH_TAG = "search.id"  # the study's identity, which stays when the experiment's folder moves
PARENT_TAG = "mlflow.parentRunId"
NOT_INSTALLED = "tracking=mlflow: MLflow is not installed; pip install -e '.[mlflow]' (or pip install mlflow)"


def default_uri(experiment: Experiment) -> str:
    return f"sqlite:///{experiment.local / TRACKING_FOLDER / 'mlflow.db'}"


def tracking_uri(tracking: TrackingConfig, experiment: Experiment) -> str:
    return tracking.uri or default_uri(experiment)


def sqlite_file(uri: str) -> Path | None:
    """The file of a `sqlite:///path` URI, or None for any other store."""
    return Path(uri.removeprefix("sqlite:///")).expanduser() if uri.startswith("sqlite:///") else None


def store_files(folder: Path) -> list[str]:
    """The default store's files in an experiment's working folder, relative to it (to upload to a URI)."""
    return sorted(str(path.relative_to(folder)) for path in (folder / TRACKING_FOLDER).rglob("*") if path.is_file())


UI_PORT = 5000  # `mlflow ui`'s own default, written out so that the link beside the command matches it


def mlflow_ui_words(uri: str | None, experiment: Experiment) -> str:
    """How to see the search in MLflow's UI: the server to start (a store in a file or a database), its runs' link."""
    uri = uri or default_uri(experiment)
    server = uri if uri.startswith(("http://", "https://")) else f"http://127.0.0.1:{UI_PORT}"
    where = experiment_id_of(uri, experiment.location)
    link = runs_table_link(server, where) if where else server
    if server == uri:
        return f"open {link}"
    return f"mlflow ui --backend-store-uri {uri} --port {UI_PORT}, then open {link}"


def runs_table_link(server: str, experiment_id: str) -> str:
    """The link that opens an experiment on its runs table: MLflow 3's UI opens an experiment in its GenAI view
    (traces, "detect issues"), whatever the experiment's tags, unless the link asks for the model-training one."""
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}?workflowType=machine_learning"


def experiment_id_of(uri: str, location: str) -> str | None:
    """The MLflow experiment that holds the search at `location` (its parent run's), or None when the store cannot
    say (a server that does not answer: the words then name the server alone)."""
    database = sqlite_file(uri)
    if database is not None and not database.is_file():  # MLflow's client would create it
        return None
    try:
        client = mlflow_client(uri)
        for found in client.search_experiments(max_results=1000):
            if parent_run(client, found.experiment_id, location):
                return found.experiment_id
    except Exception:  # MLflow raises many kinds: connection, HTTP status, database
        logging.getLogger("ray.search").info("MLflow at %s did not say which experiment holds %s", uri, location)
    return None


def mlflow_client(uri: str):
    """MLflow's client on `uri`, short HTTP timeouts, few retries: a dead server slows a search, never hangs it."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    return client_class()(tracking_uri=uri, registry_uri=uri)


def client_class():
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UsageError(NOT_INSTALLED) from None
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # not its store's INFO lines (creating tables, ...)
    return MlflowClient


def refuse_unusable(config: RunConfig) -> None:
    """Before Ray: MLflow is installed, a given tracking server answers, a given store can be written. (The default
    store lives in the experiment folder, which `storage=` already has to be able to hold.)"""
    if config.tracking.to != "mlflow":
        return
    uri = config.tracking.uri
    database = sqlite_file(uri)
    if database is not None:  # before MLflow's client, which creates the folder and the store
        folder = database.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise UsageError(f"tracking.uri={uri}: cannot write a store there ({folder} is not a writable folder)")
    if not uri or (database is not None and not database.is_file()):  # a new store: not made before the run starts
        if importlib.util.find_spec("mlflow") is None:  # not imported here: the driver imports it while Ray starts
            raise UsageError(NOT_INSTALLED)
        return
    client = mlflow_client(uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:  # MLflow raises many kinds: connection, HTTP status, database
        reason = " ".join(str(exc).split())[:200]
        raise UsageError(
            f"tracking.uri={uri}: MLflow cannot use it ({type(exc).__name__}: {reason}); start a server "
            "(mlflow server --host 127.0.0.1) or leave tracking.uri unset for a store in the experiment folder"
        ) from None


def relocate_artifacts(database: Path) -> None:
    """A store that moved with its experiment (a copied folder): its artifacts folder is recorded where the store is
    now. MLflow records artifact locations as absolute URIs and offers no call to change them, so the store's own two
    columns are updated, in the store this project made beside its `mlflow.db` only."""
    import sqlite3

    here = (database.parent / "artifacts").resolve().as_uri()
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        experiments = db.execute("select experiment_id, artifact_location from experiments").fetchall()
        for experiment_id, location in experiments:
            ours = location and location.startswith("file://") and location.endswith("/mlflow/artifacts")
            if ours and location != here:
                db.execute(
                    "update experiments set artifact_location = ? where experiment_id = ?", (here, experiment_id)
                )
                db.execute(
                    "update runs set artifact_uri = ? || substr(artifact_uri, ?) where experiment_id = ?",
                    (here, len(location) + 1, experiment_id),
                )


def parent_run(client, experiment_id: str, location: str, search_id: str | None = None):
    """The parent run of the search at `location`, or of the search `search_id` (its study's identity: a search moved
    or copied elsewhere keeps it), or None."""
    found = client.search_runs([experiment_id], f"tags.`{EXPERIMENT_TAG}` = '{location}' and tags.`{ROLE}` = 'search'")
    if not found and search_id:
        found = client.search_runs([experiment_id], f"tags.`{SEARCH_TAG}` = '{search_id}' and tags.`{ROLE}` = 'search'")
    return found[0] if found else None


def flat(values: dict, prefix: str = "") -> dict:
    """{"data": {"root": x}} as {"data.root": x}."""
    flattened = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flattened.update(flat(value, f"{prefix}{key}."))
        else:
            flattened[f"{prefix}{key}"] = value
    return flattened


def param_list(values: dict):
    from mlflow.entities import Param

    return [Param(key, str(value)[:6000]) for key, value in sorted(values.items())]


def tag_list(values: dict):
    from mlflow.entities import RunTag

    return [RunTag(key, str(value)) for key, value in values.items() if value is not None]


def metric_list(values: dict, step: int, at: float | None = None):
    from mlflow.entities import Metric

    stamp = int((at if isinstance(at, (int, float)) else time.time()) * 1000)
    return [Metric(key, float(value), stamp, step) for key, value in values.items() if is_finite_number(value)]
