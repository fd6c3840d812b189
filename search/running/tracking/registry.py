"""`export ... tracking.register=NAME`: an export folder, logged under the search's parent run, as a version of an
MLflow registered model, which plain `mlflow` and `torch` restore. No Ray, no torch.
"""

from __future__ import annotations

from pathlib import Path

from search.running.tracking.mlflow_store import mlflow_client, parent_run, refuse_unusable, tracking_uri
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment


def refuse_unregistrable(run: RunConfig, name: str) -> None:
    """Before exporting: the search was tracked, and its tracking store can be used."""
    if run.tracking.to != "mlflow":
        raise UsageError(
            f"tracking.register={name}: this search was not tracked; run it with tracking=mlflow "
            "(or `python -m search resume EXPERIMENT_DIR tracking=mlflow trials=N` to track it from now on)"
        )
    refuse_unusable(run)


def register_export(run: RunConfig, space_name: str, experiment: Experiment, meta: dict, name: str) -> tuple[int, str]:
    """(version, tracking URI): the export logged under the search's parent run, a new version of model `name`."""
    uri = tracking_uri(run.tracking, experiment)
    client = mlflow_client(uri)
    mlflow_experiment = client.get_experiment_by_name(run.tracking.experiment or space_name)
    parent = mlflow_experiment and parent_run(client, mlflow_experiment.experiment_id, experiment.location)
    if not parent:
        raise UsageError(f"tracking.register={name}: {uri} holds no run of {experiment.location}")
    artifact_path = f"model_{meta['trial_id']}_epoch_{meta['epoch']}"
    client.log_artifacts(parent.info.run_id, str(Path(meta["folder"])), artifact_path)
    if not client.search_registered_models(f"name = '{name}'"):
        client.create_registered_model(name)
    metric = meta.get("metric") or {}
    metric_tag = {metric["name"]: str(metric["value"])} if "name" in metric else {}
    version = client.create_model_version(
        name,
        source=f"{parent.info.artifact_uri}/{artifact_path}",
        run_id=parent.info.run_id,
        tags={"trial_id": meta["trial_id"], "epoch": str(meta["epoch"]), **metric_tag},
        description=f"trial {meta['trial_id']} epoch {meta['epoch']} of {experiment.location}",
    )
    return int(version.version), uri
