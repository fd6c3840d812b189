"""The training step on an accelerator (part `gpu`): device-memory data, channels_last, bf16 autocast and torch.compile
against the tutorials' DataLoader, bare and as one `search run` trial with the same keys; the device's utilization."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import torch

from benchmarks.search_runs import resnet_words, run_search, trial_rows
from benchmarks.throughput import SGD, memory_feed, steady_images_per_s, tutorial_loader, tutorial_model
from trainables.training import StepOptions, make_optimizer, prepare_layout, train_one_epoch

VARIANTS = {
    "fp32": {},
    "channels_last": {"channels_last": True},
    "bf16": {"precision": "bf16"},
    "bf16 channels_last": {"precision": "bf16", "channels_last": True},
    "bf16 channels_last compile": {"precision": "bf16", "channels_last": True, "compile": True},
    "compile": {"compile": True},  # inductor's default mode
    "compile reduce-overhead": {"compile": True, "compile_mode": "reduce-overhead"},  # CUDA graphs
}


class UtilizationSampler:
    """The device's busy percentage from nvidia-smi, sampled every `every_s` while a block runs (None: none)."""

    def __init__(self, every_s: float = 0.2):
        self.every_s, self.stamped, self.running = every_s, [], False
        self.available = torch.cuda.is_available() and shutil.which("nvidia-smi") is not None

    def __enter__(self):
        self.stamped, self.running = [], self.available
        if self.running:
            self.thread = threading.Thread(target=self._sample, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.running:
            self.running = False
            self.thread.join()

    def _sample(self) -> None:
        query = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "--id=0"]
        while self.running:
            out = subprocess.run(query, capture_output=True, text=True).stdout.strip()
            if out.isdigit():
                self.stamped.append((time.time(), int(out)))
            time.sleep(self.every_s)

    def mean(self, start: float = 0.0, end: float = float("inf")) -> float | None:
        """The mean busy percentage of the samples taken between two wall-clock times (default: all of them)."""
        inside = [busy for at, busy in self.stamped if start <= at <= end]
        return sum(inside) / len(inside) if inside else None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_rate(batches_of_epoch, device: torch.device, variant: dict, epochs: int) -> dict:
    """Images/s of epochs after the first two (warm-up, compilation) and the device's mean utilization."""
    options = StepOptions(channels_last=variant.get("channels_last", False), precision=variant.get("precision", "fp32"))
    model = prepare_layout(tutorial_model(), options).to(device)
    optimizer = make_optimizer(SGD, model)
    if variant.get("compile"):
        model = torch.compile(model, mode=variant.get("compile_mode", "default"))
    rates, utilization = [], []
    for epoch in range(1, epochs + 1):
        with UtilizationSampler() as sampler:
            stats = train_one_epoch(model, optimizer, batches_of_epoch(epoch), device, options)
            synchronize(device)
        rates.append(stats["count"] / stats["seconds"])
        utilization.append(sampler.mean())
    steady, busy = rates[2:] or rates[-1:], [u for u in utilization[2:] if u is not None]
    return {"images_per_s": sum(steady) / len(steady), "utilization_pct": sum(busy) / len(busy) if busy else None}


def row_or_failure(measure_row, *args) -> dict:
    """A variant that crashes (inductor, with some torch versions) is a failed row naming the error."""
    try:
        return measure_row(*args)
    except Exception as exc:  # noqa: BLE001 - any crash of torch's compiler stack
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {"failed": f"{type(exc).__name__}: {message}"[:300]}


def search_trial(root: str, storage, batch: int, limit: int, epochs: int, variant: dict, label: str) -> float:
    """Images/s of one trial of `python -m search run` with the variant's keys, on the whole device, every core."""
    keys = " ".join(f"{k}={str(v).lower()}" for k, v in variant.items())
    words = f"data.limit={limit} data.val_limit=500 batch_size={batch} trials=1 epochs={epochs} grace={epochs}"
    overrides = resnet_words(root, f"{words} workers=1 cpus={len(os.sched_getaffinity(0))} {keys}")
    run = run_search(storage, "device-" + label.replace(" ", "-"), overrides)
    return steady_images_per_s(trial_rows(run["experiment"])[0])


def measure(root: str, storage, device_name="cuda", batch=128, limit=6000, epochs=6) -> dict:
    """Every variant on the device (`cpu`: a smoke run of the code); `batch`: the largest resnet_mnist offers."""
    if device_name == "cuda" and not torch.cuda.is_available():
        return {"skipped": "no CUDA device visible to torch"}
    device = torch.device(device_name)
    feed = memory_feed(root, batch, limit, device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    figures = dict(device=name, batch=batch, train_images=limit, epochs=epochs, bare_loop={}, search_trial={})
    for label, variant in VARIANTS.items():
        figures["bare_loop"][label] = row_or_failure(train_rate, feed.train_batches, device, variant, epochs)
    loader = tutorial_loader(root, batch, limit, workers=2, pin=device.type == "cuda")
    figures["bare_loop"]["tutorial DataLoader fp32"] = train_rate(lambda epoch: loader, device, {}, epochs)
    tutorial = figures["bare_loop"]["tutorial DataLoader fp32"]["images_per_s"]
    for label in ("fp32", "bf16 channels_last"):
        rate = search_trial(root, storage, batch, limit, epochs, VARIANTS[label], label)
        bare = figures["bare_loop"][label]["images_per_s"]
        figures["search_trial"][label] = dict(
            images_per_s=rate, vs_bare_loop=rate / bare, vs_tutorial_dataloader=rate / tutorial
        )
    return figures
