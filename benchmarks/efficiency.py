"""The search against its peers at the same trial budget, over several seeds: (a) the search with its default sampler
(TPE) and ASHA, (b) the search with random proposals and ASHA, (c) Optuna's own loop in one process, TPE with its
HyperbandPruner, the pattern Optuna's documentation gives. All three search `resnet_mnist`'s whole space on the same
data and choose the same way (the best trial that finished its annealing schedule, by its last epoch's val_acc);
the chosen model's test_acc is the figure that counts. Part of `python -m benchmarks` (`--only efficiency`).
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

from benchmarks.options import ARMS
from benchmarks.search_runs import run_search, summary_of, trial_rows

WITHIN = 0.003  # "near its best": within 0.3 pt of the val_acc of the model the arm chose in the end


def search_arm(root: str, storage: Path, sampler: str, seed: int, trials: int, epochs: int) -> dict:
    """`python -m search run` as a user types it, with only the budget, the seed and the sampler given."""
    overrides = [
        "space=resnet_mnist",
        f"data.root={root}",
        f"trials={trials}",
        f"epochs={epochs}",
        f"seed={seed}",
        f"sampler={sampler}",
    ]
    started_at = time.time()
    run = run_search(storage, f"efficiency-{sampler}-{seed}", overrides)
    summary = summary_of(run["experiment"])
    finished = [
        (rows[-1]["started_at"] + rows[-1]["epoch_s"] - started_at, rows[-1]["val_acc"])
        for rows in trial_rows(run["experiment"])
        if rows[-1]["epoch"] == epochs
    ]
    best = summary["best"]
    return {
        "seed": seed,
        "test_acc": best["test_acc"],
        "val_acc": best["metrics"]["val_acc"],
        "wall_s": run["wall_s"],
        "epochs_run": sum(t["epochs_run"] for t in summary["trials"]),
        "trials_finished": len(finished),
        "near_best_at_s": first_near(finished, best["metrics"]["val_acc"]),
        "config": best["config"],
    }


def optuna_loop_arm(root: str, seed: int, trials: int, epochs: int) -> dict:
    """The loop a user writes from Optuna's documentation: `study.optimize` over an objective that samples the space,
    trains the way a trial of the search does (the same data, model, optimizer, schedule and step) and reports each
    epoch, so that the HyperbandPruner stops poor trials. Data loaded once; all cores to one trial at a time."""
    started = time.perf_counter()
    import optuna
    import torch

    from trainables.data import get_dataset
    from trainables.feeds import make_feed
    from trainables.foundation.config import RunConfig
    from trainables.foundation.space import load_space
    from trainables.models import model_for
    from trainables.training import LearningRate, StepOptions, evaluate, make_optimizer, train_one_epoch

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    device = torch.device("cpu")
    space = load_space("resnet_mnist")
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root}, "seed": seed, "epochs": epochs})
    dataset, finished, chosen = get_dataset(space.dataset), [], {}

    def objective(trial: optuna.Trial) -> float:
        hp = {**space.constants, **sample(trial, space.hyperparameters)}
        torch.manual_seed(run.seed)
        feed = make_feed(space, run, hp, 0, 1, device)  # the memory feed keeps the decoded digits between trials
        model = model_for(space, hp, dataset.info(root, hp))
        optimizer = make_optimizer(hp, model)
        learning_rate = LearningRate(hp, optimizer, epochs, feed.steps_per_epoch())
        options = StepOptions.of(run, hp)
        value = 0.0
        for epoch in range(1, epochs + 1):
            train_one_epoch(model, optimizer, feed.train_batches(epoch), device, options, learning_rate.after_step)
            stats = evaluate(model, feed.val_batches(), device, options)
            value = (stats["correct"] / stats["count"]).item()
            learning_rate.after_epoch((stats["loss_sum"] / stats["count"]).item())
            trial.report(value, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        finished.append((time.perf_counter() - started, value))
        if not chosen or value > chosen["val_acc"]:  # the study's best so far: keep its model for the test split
            chosen.update(val_acc=value, hp=hp, state=copy.deepcopy(model.state_dict()), feed=feed)
        return value

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)
    study.optimize(objective, n_trials=trials)
    model = model_for(space, chosen["hp"], dataset.info(root, chosen["hp"]))
    model.load_state_dict(chosen["state"])
    stats = evaluate(model, chosen["feed"].test_batches(), device)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    return {
        "seed": seed,
        "test_acc": stats["correct"].item() / stats["count"],
        "val_acc": study.best_value,
        "wall_s": time.perf_counter() - started,
        "epochs_run": sum(len(t.intermediate_values) for t in study.trials),
        "trials_finished": len(study.trials) - len(pruned),
        "near_best_at_s": first_near(finished, study.best_value),
        "config": study.best_params,
    }


def sample(trial, distributions: dict) -> dict:
    """The space's distributions through Optuna's public suggest calls (define-by-run)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    params = {}
    for name, d in distributions.items():
        if isinstance(d, FloatDistribution):
            params[name] = trial.suggest_float(name, d.low, d.high, log=d.log, step=d.step)
        elif isinstance(d, IntDistribution):
            params[name] = trial.suggest_int(name, d.low, d.high, log=d.log, step=d.step)
        elif isinstance(d, CategoricalDistribution):
            params[name] = trial.suggest_categorical(name, d.choices)
        else:
            raise TypeError(f"{name}: no suggest call for {type(d).__name__}")
    return params


def first_near(finished: list[tuple[float, float]], best: float) -> float | None:
    """Seconds into the run when a finished trial first scored within WITHIN of `best` (None: never)."""
    times = [at for at, value in sorted(finished) if value >= best - WITHIN]
    return round(times[0], 1) if times else None


def measure(root: str, storage: Path, trials: int, epochs: int, seeds: list[int], arms: list[str] = ARMS) -> dict:
    """Every arm for every seed, arms in turn within a seed (so that a drift of this machine's speed falls on all)."""
    runs = {arm: [] for arm in arms}
    for seed in seeds:
        for arm in arms:
            if arm == "optuna_loop":
                result = optuna_loop_arm(root, seed, trials, epochs)
            else:
                result = search_arm(root, storage, "tpe" if arm == "tpe_asha" else "random", seed, trials, epochs)
            runs[arm].append(result)
            print(
                f"  {arm} seed {seed}: test_acc {result['test_acc']:.4f} in {result['wall_s']:.0f} s, "
                f"{result['epochs_run']} epochs",
                flush=True,
            )
    return {
        "trials": trials,
        "epochs": epochs,
        "seeds": seeds,
        "within_pt": 100 * WITHIN,
        "runs": runs,
        "mean": {arm: mean_of(runs[arm]) for arm in arms},
    }


def mean_of(results: list[dict]) -> dict:
    n = len(results)
    return {key: sum(r[key] for r in results) / n for key in ("test_acc", "wall_s", "epochs_run")}


def print_table(e: dict) -> None:
    print(f"efficiency, resnet_mnist, {e['trials']} trials x up to {e['epochs']} epochs, seeds {e['seeds']}:")
    print(f"{'arm':<13}{'seed':>5}{'test_acc':>10}{'wall s':>8}{'epochs':>8}{'near best s':>12}")
    for arm in e["runs"]:
        for r in e["runs"][arm]:
            near = f"{r['near_best_at_s']:.0f}" if r["near_best_at_s"] is not None else "-"
            print(f"{arm:<13}{r['seed']:>5}{r['test_acc']:>10.4f}{r['wall_s']:>8.0f}{r['epochs_run']:>8}{near:>12}")
        m = e["mean"][arm]
        print(f"{arm:<13}{'mean':>5}{m['test_acc']:>10.4f}{m['wall_s']:>8.0f}{m['epochs_run']:>8.1f}")
