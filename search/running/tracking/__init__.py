"""Tracking in MLflow: the tracker brought up to the study (`tracker`), how its calls run (`calls`), the store it
writes (`mlflow_store`), and an export as a registered model version (`registry`)."""
