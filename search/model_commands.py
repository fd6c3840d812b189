"""`export` and `predict`: a search's model out of its experiment, and that model put to use."""

from __future__ import annotations

from pathlib import Path

from search.bounds import split_bounds
from search.commands import split_options
from search.results.summary import SUMMARY_FILE
from search.start import command_words
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment, open_for_reading

EXPORT_USAGE = (
    "usage: python -m search export EXPERIMENT_DIR [out=PATH] [trial=ID] [max.OBJECTIVE=N | min.OBJECTIVE=N ...] "
    "[tracking.register=NAME] [--replace]"
)


def cmd_export(args: list[str]) -> int:
    bounds, args = split_bounds(args)  # max.params=200000: a pick from the Pareto front
    positional, options, flags = split_options(args, {"out", "trial", "tracking.register", "--replace"})
    if len(positional) != 1:
        raise UsageError(EXPORT_USAGE)
    options["bounds"], options["replace"] = bounds, "--replace" in flags  # an earlier export: replaced only so
    from search.results.export import refuse_trial_and_bounds

    refuse_trial_and_bounds(options.get("trial"), bounds)  # before the lock and the download
    register = options.get("tracking.register")
    if not register:
        return export_and_register(open_for_reading(positional[0], SUMMARY_FILE), options)
    from search.running.writer.lock import WriterLock

    # a registration writes the search's MLflow store: as its one writer, from the driver's working folder
    with WriterLock(Experiment.at(positional[0]), command_words("export", args)):
        return export_and_register(open_for_reading(positional[0], SUMMARY_FILE, reading=False), options)


def export_and_register(experiment: Experiment, options: dict[str, str]) -> int:
    from search.results.export import export_experiment, latency_words
    from search.results.summary import read_summary

    summary, register = read_summary(experiment.local), options.get("tracking.register")
    run = RunConfig.from_dict(summary["run"])
    if register:
        from search.running.tracking.registry import refuse_unregistrable

        refuse_unregistrable(run, register)  # before the export's minutes
    out = Path(options["out"]).expanduser() if "out" in options else None
    meta = export_experiment(experiment, out, options.get("trial"), options.get("bounds", []), options["replace"])
    verified = meta["verified"]
    print(f"exported trial {meta['trial_id']} epoch {meta['epoch']} to {meta['folder']}")
    if "objectives" in meta:
        values = ", ".join(f"{name}={value:g}" for name, value in meta["objectives"].items())
        print(f"objectives: {values}; latency at export {latency_words(meta['measured_at_export'])}")
    print(
        f"verified: {verified['metric']}={verified[verified['metric']]:.4f} on {verified['samples']} validation images "
        f"(trial reported {verified['reported']:.4f})"
    )
    if register:
        from search.running.tracking.registry import register_export

        version, uri = register_export(run, summary["space"], experiment, meta, register)
        from search.running.tracking.mlflow_store import store_files

        experiment.upload(store_files(experiment.local))  # a URI experiment's store: the registration kept there
        print(f"registered: MLflow model {register} version {version} at {uri} (models:/{register}/{version})")
    return 0


def cmd_predict(args: list[str]) -> int:
    positional, _, flags = split_options(args, {"--json", "--all"})
    if len(positional) < 2:
        raise UsageError("usage: python -m search predict EXPORT_DIR INPUT... [--all] [--json]")
    folder, inputs = Path(positional[0]), positional[1:]
    from search.results.export import META_FILE, load_model
    from search.results.predict import predict_files, write_predictions

    if not (folder / META_FILE).is_file():
        raise UsageError(f"{folder}: not an export folder (no {META_FILE}); create one with `python -m search export`")
    model = load_model(folder)
    if "length" in model.meta["input"]:  # a model of sequences [N, C, L]: predict reads images
        raise UsageError(f"{folder}: a model of sequences [N, C, L]; predict reads images: load {folder}/model.pt2")
    predictions, hints = predict_files(model, inputs)
    return write_predictions(predictions, "--json" in flags, hints, "--all" in flags, model.class_names)
