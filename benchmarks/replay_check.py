"""Does the replay stop trials where a real search does? Ray Tune searches, a trial at a time under the search's own
ASHA, on a trainable reporting the table's validation scores, against their replays: each trial's epochs compared.

    python -m benchmarks --only replay   (the check runs after the replay's figures)
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from benchmarks.replay import CurveTable, FixedArm, replay_search, search_asha, table_space

TIME_BUDGET_S = 300  # a 12-trial search takes about 25 s on 2 cores


def table_trainable(table_path: str, seed_slot: int):
    """A Tune function trainable that reads a configuration's validation scores from the table."""

    def train(config: dict) -> None:
        import ray.tune

        table = CurveTable.load(table_path)
        space = table_space(table)
        key = table.key(config, space.hyperparameters)
        for epoch in range(1, table.epochs + 1):
            ray.tune.report({"epoch": epoch, space.metric: float(table.val[key][seed_slot, epoch - 1])})

    return train


def grid_configs(table: CurveTable, count: int, seed: int) -> list[dict]:
    """`count` grid configurations drawn at random."""
    rng, keys = random.Random(seed), sorted(table.val)
    return [dict(zip(table.grid, rng.choice(keys))) for _ in range(count)]


def tune_epochs(table_path: str, table: CurveTable, configs: list[dict], seed_slot: int, storage: str) -> list[int]:
    """Each configuration's epochs in a real Tune search under the search's ASHA."""
    import ray.tune
    from ray.tune.search import BasicVariantGenerator

    space = table_space(table)
    tuner = ray.tune.Tuner(
        ray.tune.with_resources(table_trainable(table_path, seed_slot), {"cpu": 2}),  # one trial at a time
        param_space={name: ray.tune.choice(values) for name, values in table.grid.items()},  # the points come first
        tune_config=ray.tune.TuneConfig(
            metric=space.metric,
            mode=space.mode,
            search_alg=BasicVariantGenerator(points_to_evaluate=configs),
            scheduler=search_asha(space, table.epochs, metric=False),
            num_samples=len(configs),
            time_budget_s=TIME_BUDGET_S,  # never a hang: what did not run in time is named below
        ),
        run_config=ray.tune.RunConfig(verbose=0, storage_path=storage),
    )
    results = list(tuner.fit())
    failed = [result.error for result in results if result.error]
    ran = [result for result in results if "epoch" in (result.metrics or {})]  # the budget leaves some unstarted
    if failed or len(ran) != len(configs):
        raise RuntimeError(
            f"replay check: Tune ran {len(ran)} of {len(configs)} trials in {TIME_BUDGET_S} s; errors: {failed}"
        )
    ordered = sorted(results, key=lambda result: result.metrics["trial_id"])  # ids count up in creation order
    return [int(result.metrics["epoch"]) for result in ordered]


def check(table_path: str, searches: int = 3, trials: int = 12) -> dict:
    """`searches` real searches of `trials` trials against their replays: epochs per trial, and whether they match."""
    import ray

    table_path = str(Path(table_path).resolve())  # a trial runs in its own folder
    table, runs = CurveTable.load(table_path), []
    space = table_space(table)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with tempfile.TemporaryDirectory(prefix="replay-check-") as storage:
            for seed in range(searches):
                configs, slot = grid_configs(table, trials, seed), seed % len(table.seeds)
                real = tune_epochs(table_path, table, configs, slot, storage)
                replay = replay_search(table, space, FixedArm(space, configs, table.epochs), slot, len(configs))
                replayed = [len(trial["rows"]) for trial in replay["trials"].values()]  # the same ASHA, the same order
                runs.append({"seed": seed, "tune_epochs": real, "replay_epochs": replayed, "match": real == replayed})
    finally:
        ray.shutdown()
    return {"searches": runs, "all_match": all(run["match"] for run in runs)}
