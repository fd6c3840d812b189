"""The peer (part `peer`): the same fixed-configuration trials as a hand-written plain Optuna loop in one process and as
a search with its defaults, in one run; where the search's wall goes (its trials' rows), on a GPU how busy it was."""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks.accelerator import UtilizationSampler, synchronize
from benchmarks.overhead import driver_to_first_step_s, last_report_at
from benchmarks.search_runs import resnet_words, run_search, summary_of, trial_rows

BATCH = 128


def plain_optuna_loop(root: str, trials: int, epochs: int, threads: int) -> dict:
    """The hand-written loop: each trial builds its model and trains `epochs` epochs on the data loaded once."""
    started = time.perf_counter()
    import optuna
    import torch

    from trainables.data import MNIST
    from trainables.feeds import MemoryFeed
    from trainables.foundation.config import RunConfig
    from trainables.foundation.space import load_space
    from trainables.models import model_for
    from trainables.training import evaluate, make_optimizer, train_one_epoch

    torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # where the search's trials train too
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root}})
    loading = time.perf_counter()
    feed = MemoryFeed(MNIST, run, {"batch_size": BATCH}, rank=0, world_size=1, device=device)  # loaded once
    spent = {"imports_s": loading - started, "data_s": time.perf_counter() - loading, "steps_s": 0.0, "eval_s": 0.0}
    space = load_space("resnet_mnist")
    hp = dict(lr=0.02, momentum=0.9, weight_decay=1e-4, optimizer="sgd", batch_size=BATCH, stem="imagenet")

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_categorical("batch_size", [BATCH])
        torch.manual_seed(0)
        model = model_for(space, hp, MNIST.info(root, hp)).to(device)
        optimizer, accuracy = make_optimizer(hp, model), 0.0
        for epoch in range(1, epochs + 1):
            stepping = time.perf_counter()
            train_one_epoch(model, optimizer, feed.train_batches(epoch), device)
            synchronize(device)
            evaluating, stats = time.perf_counter(), evaluate(model, feed.val_batches(), device)  # left to right
            accuracy = (stats["correct"] / stats["count"]).item()
            spent["steps_s"] += evaluating - stepping
            spent["eval_s"] += time.perf_counter() - evaluating
            trial.report(accuracy, epoch)
        return accuracy

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    with UtilizationSampler(every_s=0.5) as gpu:
        study.optimize(objective, n_trials=trials)
    wall = time.perf_counter() - started
    spent["other_s"] = wall - sum(spent.values())  # models, optimizers, Optuna
    figures = dict(wall_s=wall, best_val_acc=study.best_value, threads=threads, device=str(device), split=spent)
    return {**figures, "gpu_busy_pct": gpu.mean()}


def measure(root: str, storage: Path, trials: int, epochs: int, keys: list[str] = ()) -> dict:
    loop = plain_optuna_loop(root, trials, epochs, threads=len(os.sched_getaffinity(0)))
    print(f"  plain Optuna loop: {loop['wall_s']:.0f} s", flush=True)
    overrides = [*resnet_words(root, f"trials={trials} epochs={epochs} grace={epochs} batch_size={BATCH}"), *keys]
    with UtilizationSampler(every_s=0.5) as gpu:
        run = run_search(storage, "peer", overrides)
    summary, split = summary_of(run["experiment"]), search_split(run, trial_rows(run["experiment"]))
    print(f"  search: {run['wall_s']:.0f} s", flush=True)
    search = {
        "wall_s": run["wall_s"],
        "best_val_acc": summary["best"]["metrics"]["val_acc"],
        "shape": {key: summary["run"][key] for key in ("workers", "cpus", "gpus", "concurrency")},
        "keys": list(keys),
        "split": split,
        "gpu_busy_pct": gpu.mean(),
        "gpu_busy_pct_while_trials_train": gpu.mean(*split["trials_window"]),
    }
    return dict(
        trials=trials, epochs=epochs, plain_loop=loop, search=search, search_over_loop=run["wall_s"] / loop["wall_s"]
    )


def search_split(run: dict, trials: list[list[dict]]) -> dict:
    """The search's wall by phase; the trials' span in trial-seconds by use, each from its driver (not its process)."""
    starts = [rows[0]["started_at"] - driver_to_first_step_s(rows[0]) for rows in trials]
    ends = [last_report_at(rows) for rows in trials]
    span, at_once = max(ends) - min(starts), max(sum(s <= t < e for s, e in zip(starts, ends)) for t in starts)
    between_epochs = sum(b["started_at"] - last_report_at([a]) for rows in trials for a, b in zip(rows, rows[1:]))
    split = {
        "trials_window": (min(starts), max(ends)),
        "ray_and_tune_start_s": min(starts) - run["started_at"],
        "trials_span_s": span,
        "end_s": run["ended_at"] - max(ends),
        "trials_at_once": at_once,
        "trial_s": {
            "start": sum(driver_to_first_step_s(rows[0]) for rows in trials),
            "steps": sum(r["train_s"] for rows in trials for r in rows),
            "eval_and_report": sum(r["epoch_s"] - r["train_s"] for rows in trials for r in rows),
            "checkpoint": sum(r.get("checkpoint_s", 0.0) for rows in trials for r in rows),
            "between_epochs": between_epochs,
        },
    }
    split["trial_s"]["empty_slots"] = at_once * span - sum(split["trial_s"].values())
    split["images_per_s_together"] = sum(r["train_samples"] for rows in trials for r in rows) / span
    split["images_per_s_per_trial"] = sum(r["images_per_s"] for rows in trials for r in rows) / sum(map(len, trials))
    return split
