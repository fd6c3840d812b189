"""The peer: the same fixed-configuration trials as the plain Optuna loop a user would write by hand, in one
process (`study.optimize`, data loaded once, one model per trial), and as a search with its defaults, in the same
run. Part of `python -m benchmarks`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks.search_runs import FIXED_HP, run_search, summary_of

BATCH = 128


def plain_optuna_loop(root: str, trials: int, epochs: int, threads: int) -> dict:
    """The hand-written loop: Optuna proposes (nothing left to search: the fixed configuration), each trial builds
    its model, trains `epochs` epochs on the data loaded once and returns its validation accuracy."""
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
    feed = MemoryFeed(MNIST, run, {"batch_size": BATCH}, rank=0, world_size=1, device=device)  # loaded once
    space = load_space("resnet_mnist")
    hp = {"lr": 0.02, "momentum": 0.9, "weight_decay": 1e-4, "optimizer": "sgd", "batch_size": BATCH, "stem": "imagenet"}

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_categorical("batch_size", [BATCH])
        torch.manual_seed(0)
        model = model_for(space, hp, MNIST.info(root, hp)).to(device)
        optimizer = make_optimizer(hp, model)
        accuracy = 0.0
        for epoch in range(1, epochs + 1):
            train_one_epoch(model, optimizer, feed.train_batches(epoch), device)
            stats = evaluate(model, feed.val_batches(), device)
            accuracy = (stats["correct"] / stats["count"]).item()
            trial.report(accuracy, epoch)
        return accuracy

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(objective, n_trials=trials)
    return {"wall_s": time.perf_counter() - started, "best_val_acc": study.best_value, "threads": threads,
            "device": str(device)}


def measure(root: str, storage: Path, trials: int, epochs: int, keys: list[str] = ()) -> dict:
    loop = plain_optuna_loop(root, trials, epochs, threads=len(os.sched_getaffinity(0)))
    print(f"  plain Optuna loop: {loop['wall_s']:.0f} s", flush=True)
    overrides = ["space=resnet_mnist", f"data.root={root}", f"trials={trials}", f"epochs={epochs}", f"grace={epochs}",
                 f"batch_size={BATCH}", *FIXED_HP, *keys]  # fmt: skip
    run = run_search(storage, "peer", overrides)
    summary = summary_of(run["experiment"])
    settings = summary["run"]
    print(f"  search: {run['wall_s']:.0f} s", flush=True)
    return {
        "trials": trials,
        "epochs": epochs,
        "plain_loop": loop,
        "search": {
            "wall_s": run["wall_s"],
            "best_val_acc": summary["best"]["metrics"]["val_acc"],
            "shape": {key: settings[key] for key in ("workers", "cpus", "gpus", "concurrency")},
            "keys": list(keys),
        },
        "search_over_loop": run["wall_s"] / loop["wall_s"],
    }


def print_table(p: dict) -> None:
    s, loop = p["search"], p["plain_loop"]
    print(f"peer, {p['trials']} trials x {p['epochs']} epochs: plain Optuna loop {loop['wall_s']:.0f} s "
          f"({loop['threads']} threads, best {loop['best_val_acc']:.4f}), search {s['wall_s']:.0f} s "
          f"(workers={s['shape']['workers']} cpus={s['shape']['cpus']:g}, best {s['best_val_acc']:.4f}): "
          f"{p['search_over_loop']:.2f}x the loop")  # fmt: skip
