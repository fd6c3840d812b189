"""Export a trial's best checkpoint as a model that restores without this project (`model.safetensors`,
`model.json` and the `torch.export` program `model.pt2`: docs/results.md), and restore it."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from search.results.files import publish_folder, staging_folder
from search.results.pareto import pick_member
from search.results.predict import training_look
from search.results.summary import SUMMARY_FILE, read_summary
from trainables.checkpoints import refuse_damaged
from trainables.costs import latency
from trainables.data import get_dataset
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import SearchFailed, UsageError
from trainables.foundation.objectives import Bound
from trainables.foundation.space import Space, load_run_space
from trainables.foundation.storage import Experiment
from trainables.models import build_model, model_for
from trainables.training import evaluate, load_model_weights

WEIGHTS_FILE = "model.safetensors"
META_FILE = "model.json"
PROGRAM_FILE = "model.pt2"


class NormalizedClassifier(nn.Module):
    """A network with its input normalization: takes images as floats in [0, 1], returns logits."""

    def __init__(self, network: nn.Module, mean, std):
        super().__init__()
        self.network = network
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        shape = (1, -1) + (1,) * (images.dim() - 2)  # [N, C, H, W], or [N, C, L] for sequences
        return self.network((images - self.mean.view(shape)) / self.std.view(shape))


def pick_trial(summary: dict, trial_id: str | None) -> dict:
    """The summary's entry of the best trial, or of `trial_id`, refused without a checkpoint."""
    if trial_id is None:
        if summary["best"] is None:
            raise UsageError("this experiment has no trial with a checkpoint to export")
        trial_id = summary["best"]["trial_id"]
    for trial in summary["trials"]:
        if trial["trial_id"] == trial_id:
            if not trial.get("checkpoint"):
                raise UsageError(f"trial={trial_id}: this trial has no checkpoint ({trial['status']})")
            return trial
    known = ", ".join(t["trial_id"] for t in summary["trials"])
    raise UsageError(f"trial={trial_id}: no such trial; trials: {known}")


def model_metadata(space: Space, info, summary: dict, config: dict, epoch: int, trial_id: str, value: float) -> dict:
    try:
        project_version = version("search")
    except PackageNotFoundError:
        project_version = "unknown"
    return {
        "format": 1,
        "space": space.name,
        "architecture": space.architecture,
        "architecture_args": space.builder_args(config, info),
        "num_classes": info.num_classes,
        "class_names": list(info.class_names),
        "input": input_shape(info),
        "preprocessing": preprocessing(space, info),
        "normalization": {"mean": list(info.mean), "std": list(info.std)},
        "hyperparameters": config,
        "metric": {"name": summary["metric"], "mode": summary["mode"], "value": value},
        "trial_id": trial_id,
        "epoch": epoch,
        "versions": {"torch": torch.__version__, "search": project_version},
    }


def input_shape(info) -> dict:
    """model.json's `input`: channels and height and width, or channels and length for sequences."""
    if len(info.shape) == 2:
        channels, length = info.shape
        program = "float32 [N, C, L] in [0, 1]; model.pt2 normalizes inside"
        return {"channels": channels, "length": length, "program_input": program}
    channels, height, width = info.shape
    program = "float32 [N, C, H, W] in [0, 1]; model.pt2 normalizes inside"
    return {"channels": channels, "height": height, "width": width, "program_input": program}


def refuse_trial_and_bounds(trial_id: str | None, bounds: list[Bound]) -> None:
    if bounds and trial_id is not None:
        raise UsageError("give trial=ID or bounds on the objectives, not both")


def export_experiment(
    experiment: Experiment,
    out: Path | None = None,
    trial_id: str | None = None,
    bounds: list[Bound] = (),
    replace: bool = False,
) -> dict:
    """Write the export folder atomically and verify it; returns its model.json content. A multi-objective search
    exports its Pareto front's most accurate member within `bounds`."""
    refuse_trial_and_bounds(trial_id, bounds)
    summary = read_summary(experiment.local)
    run = RunConfig.from_dict(summary["run"])
    space = load_run_space(run)
    member = pick_member(summary, list(bounds)) if (bounds or summary.get("front")) and trial_id is None else None
    trial = pick_trial(summary, member["trial_id"] if member else trial_id)
    config, checkpoint, reported = trial["config"], trial["checkpoint"], trial[summary["metric"]]
    out = (out or experiment.local / "export").resolve()
    refuse_overwrite(out, replace)
    remedy = f"export another trial with trial=ID (see {SUMMARY_FILE})"
    refuse_damaged(experiment.checkpoint_location(checkpoint), remedy)  # never another silently
    info = get_dataset(space.dataset, run).info(run.data.root, config)
    network = model_for(space, config, info)
    load_model_weights(experiment.local_checkpoint(checkpoint), network)  # torch.load(weights_only=True)
    classifier = NormalizedClassifier(network, info.mean, info.std).eval()
    staging = staging_folder(out)
    try:
        meta = model_metadata(space, info, summary, config, trial["best_epoch"], trial["trial_id"], reported)
        look = training_look(space, run, config, meta) if "height" in meta["input"] else None  # images only
        meta.update({"training_images": look} if look else {})
        if member:  # what the search measured, and the latency again on the exported model, here
            meta["objectives"] = member["objectives"]
            meta["measured_at_export"] = {**latency(classifier, info), "device": "cpu", "batch": 1}
        write_export(staging, classifier, meta)
        meta["verified"] = verify_export(staging, run, space, config, summary["metric"], reported)
        write_meta(staging, meta)
        publish_folder(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {**meta, "folder": str(out)}


def refuse_overwrite(out: Path, replace: bool) -> None:
    """An existing `out` is replaced only with `replace`, and then only an earlier export or an empty folder."""
    if not out.exists() and not out.is_symlink():
        return
    is_export = out.is_dir() and (out / META_FILE).is_file()
    if not replace:
        what = "an export" if is_export else "a file" if not out.is_dir() else "a folder"
        ways = "export to another folder with out=PATH, or replace it with --replace"
        raise UsageError(f"{out}: {what} is already there; {ways}")
    if not (is_export or (out.is_dir() and not any(out.iterdir()))):
        only = "--replace replaces only an earlier export or an empty folder; give out=PATH"
        raise UsageError(f"{out}: not an export folder (no {META_FILE}); {only}")


def preprocessing(space: Space, info) -> dict:
    """How `predict` turns an image file into the model's input (what the trial's validation did)."""
    from trainables.data import FolderDataset
    from trainables.feeds import eval_resize

    if isinstance(get_dataset(space.dataset), FolderDataset):
        return {"resize_shorter_side": eval_resize(info.image_size), "center_crop": info.image_size}
    return {"resize": list(info.shape[1:])} if len(info.shape) == 3 else {}


def write_export(folder: Path, classifier: NormalizedClassifier, meta: dict) -> None:
    write_weights(folder, classifier.network, meta)
    shape = meta["input"]
    sizes = [shape["length"]] if "length" in shape else [shape["height"], shape["width"]]
    example = torch.rand(2, shape["channels"], *sizes)
    batch = torch.export.Dim("batch", min=1, max=65536)
    program = torch.export.export(classifier, (example,), dynamic_shapes={"images": {0: batch}})
    torch.export.save(program, str(folder / PROGRAM_FILE))


def write_weights(folder: Path, network: nn.Module, meta: dict) -> None:
    """`model.safetensors` and `model.json`, both with the mode the umask gives (safetensors alone writes 0600)."""
    weights = {k: v.contiguous() for k, v in network.state_dict().items()}
    save_file(weights, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
    write_meta(folder, meta)
    shutil.copymode(folder / META_FILE, folder / WEIGHTS_FILE)


def write_meta(folder: Path, meta: dict) -> None:
    (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")


def verify_export(folder: Path, run: RunConfig, space: Space, config: dict, metric: str, reported: float) -> dict:
    """Re-evaluate the exported program and the exported weights on the trial's validation split: the space's metric
    (val_acc, val_loss, val_f1, val_auc or its own) against the figure the trial reported."""
    program = torch.export.load(str(folder / PROGRAM_FILE)).module()
    found = {}
    for label, model in (("program", program), ("weights", load_model(folder))):
        found[label], samples = metric_like_training(_FromUnitRange(model), space, run, config, metric)
        # Same data, preprocessing and shards as the trial: float noise may flip a sample's prediction (accuracy
        # moves by 1/samples, a macro F1 by about twice that) or move a loss in its third digit.
        allowed = 1.0 / samples if metric == "val_acc" else max(2.0 / samples, 1e-3 * abs(reported))
        if not abs(found[label] - reported) <= allowed + 1e-12:
            raise SearchFailed(
                f"export verification failed: {label} gives {metric}={found[label]:.6f} but the trial reported "
                f"{reported:.6f}"
            )
    return {"metric": metric, metric: found["program"], "reported": reported, "samples": samples}


def metric_like_training(model, space: Space, run: RunConfig, config: dict, metric: str) -> tuple[float, int]:
    """`metric` over the same per-rank shards and batches the trial evaluated (images in [0, 1]), with the count."""
    from trainables.feeds import make_feed
    from trainables.metrics import figures, metric_functions

    functions = {name: f for name, f in metric_functions(space, run).items() if name == metric}
    run = dataclasses.replace(run, data=dataclasses.replace(run.data, workers=0))  # decode in this process
    correct, loss_sum, count, logits, labels = 0.0, 0.0, 0, [], []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in a training worker
    try:
        for rank in range(run.workers):
            feed = make_feed(
                space, run, config, rank, run.workers, torch.device("cpu"), normalize=False, skip=run.data.skip
            )
            stats = evaluate(model, feed.val_batches(), torch.device("cpu"), keep=bool(functions))
            correct, count = correct + stats["correct"].item(), count + stats["count"]
            loss_sum += stats["loss_sum"].item()
            if functions:
                logits.append(stats["logits"])
                labels.append(stats["labels"])
    finally:
        torch.set_num_threads(threads)
    if functions:
        return figures(functions, torch.cat(logits), torch.cat(labels))[metric], count
    return (loss_sum if metric == "val_loss" else correct) / count, count


class _FromUnitRange(nn.Module):
    """Lets `evaluate` run an exported program, which refuses eval() switches (it is in eval mode already)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        return self.model(images)

    def eval(self):
        return self


def latency_words(measured: dict) -> str:
    """`11 ms (IQR 4, batch 1, cpu)`: the latency measured at export with the digits its spread leaves it (the
    decimal place of the interquartile range's first figure)."""
    median, spread = measured["latency_ms"], measured["latency_iqr_ms"]
    if spread > 0:
        decimals = max(0, -math.floor(math.log10(spread)))
        figures = f"{median:.{decimals}f} ms (IQR {spread:.{decimals}f}"
    else:
        figures = f"{median:.3g} ms (IQR 0"
    return f"{figures}, batch {measured.get('batch', 1)}, {measured.get('device', 'cpu')})"


def load_model(path: str | Path) -> NormalizedClassifier:
    """Restore an exported model as an eval-mode module taking float images in [0, 1] of the recorded size, with
    `model.class_names` and `model.meta` (model.json)."""
    folder = Path(path)
    meta = json.loads((folder / META_FILE).read_text())
    network = build_model(meta["architecture"], meta["architecture_args"])
    network.load_state_dict(load_file(str(folder / WEIGHTS_FILE)))
    norm = meta["normalization"]
    model = NormalizedClassifier(network, norm["mean"], norm["std"]).eval()
    model.class_names = meta["class_names"]
    model.meta = meta
    return model
