"""Searches replayed as the command line runs them on a learning-curve table (benchmarks.replay), every arm on
hundreds of seeds: per table the regret's IQM with a 95% bootstrap interval and a one-sided Wilcoxon signed-rank
test paired by seed; the results JSON keeps each seed's final regret for benchmarks.replay_stats.

    python -m benchmarks.replay_cli benchmarks/results/tables/mlp_mnist-3ep-4seeds.jsonl.gz \\
        [--seed-set tuning|evidence | --seeds 300 --first-seed 0] [--trials 8 | --epoch-budget 24]
        [--concurrency 1,2,4] [--arms search,random_asha,...] [--out results.json]

Replayed seconds assume CORES cores at every concurrency (`--cores N`): at 4 side by side, 4 trials share 2 cores,
not the 4 cores or GPU on which `run` puts 4; the results JSON says so.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import warnings
from pathlib import Path

import numpy as np
import optuna

from benchmarks import code_state, portable, statistics
from benchmarks.families import refuse, replay_settings
from benchmarks.replay import DEFAULTS, _table, replay_search, table_space
from benchmarks.replay_arms import ARMS, make_arm, parse_variant
from benchmarks.replay_peers import PEERS, versions
from search.running.proposals.unrun import configuration_count
from trainables.foundation.errors import UsageError

CORES = 2  # the machine every concurrency is replayed on (--cores); the results JSON names it
# disjoint: defaults chosen on tuning seeds, confirmed on evidence seeds, fresh ones replayed once they stood
SEED_SETS = {"tuning": range(100, 400), "evidence": range(2000, 2300), "fresh": range(5000, 5300)}
SEED_SETS["heldout"] = range(7000, 7300)  # the held-out tables' own
ANYTIME_POINTS = 41  # the wall-time grid of the anytime curves


def replay_cli(job: tuple) -> dict:
    """One replayed search: (table path, arm, seed, trials, concurrency[, epoch budget]) -> its final regret, wall
    time, epochs spent and (seconds, regret) after each epoch. The sampler's random start is sized for the trials an
    epoch budget buys at full length."""
    path, arm, seed, trials, concurrency, *rest = job
    table, settings = _table(path), parse_variant(arm)[1]
    trials, epoch_budget = arm_stop_rule(settings, table.epochs, trials, rest[0] if rest else 0)
    space = table_space(table, as_choices=settings.get("space") == "choices")  # finite: each configuration once
    count = configuration_count(space.hyperparameters) if settings.get("once") != "0" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        trials = min(trials, count or trials)  # as the product's search_trials: no more than the space holds
        expected = min(trials, max(1, epoch_budget // table.epochs)) if epoch_budget else trials
        runner = make_arm(arm, space, seed, expected, table.epochs, concurrency)
        run = replay_search(table, space, runner, seed, trials, concurrency, epoch_budget, CORES)
    return {key: run[key] for key in ("regret", "wall_s", "epochs", "trace")}


def arm_stop_rule(settings: dict, epochs: int, trials: int, epoch_budget: int) -> tuple[int, int]:
    """(trials, epoch budget) of an arm: the replay's, or the variant's own rule (`trials=N`; `budget=N`: the epochs
    of N full trials; `epoch_budget=E`), trials lifted under a budget as the CLI lifts them."""
    if "trials" in settings:
        return int(settings["trials"]), 0
    if "budget" in settings or "epoch_budget" in settings:
        epoch_budget = int(settings["epoch_budget"]) if "epoch_budget" in settings else int(settings["budget"]) * epochs
        return max(trials, epoch_budget), epoch_budget
    return trials, epoch_budget


def product_stop_rule(epochs: int, trials: int | None, epoch_budget: int | None) -> tuple[int, int]:
    """(trials, epoch budget) as `python -m search run` reads them (search.commands.parse_run)."""
    return (trials or epoch_budget, epoch_budget) if epoch_budget else (trials or DEFAULTS.trials, 0)


def replayed_keeping(work: list[tuple], jobs: int, keep: Path | None) -> list[dict]:
    """`replay_cli` of each job, each result appended to `keep` as it comes, stamped with what replayed it (a clean
    commit, the cores, each table's hash), so that a run stopped part way goes on where it stopped: a job kept under
    the same stamp is not replayed again; a line cut short by a kill is left out."""
    code = code_state()
    tables = {path: hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] for path in sorted({j[0] for j in work})}
    stamp = {"code": code["code"], "cores": CORES, "tables": tables}
    text = keep.read_text() if keep and keep.exists() else ""
    reusable, done = not code["code_dirty"] and code["code"] != "unknown", {}
    for line in text.splitlines() if reusable else []:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            kept = json.loads(line)
            done.update({tuple(kept["job"]): kept["result"]} if kept["stamp"] == stamp else {})
    todo = [job for job in work if job not in done]
    print(f"replays: {len(work) - len(todo)} of {len(work)} kept in {keep}" if done else f"replays: {len(work)}")
    torn = bool(text) and not text.endswith("\n")
    with multiprocessing.get_context("fork").Pool(jobs) as pool, open(keep or "/dev/null", "a") as kept:
        kept.write("\n" if torn else "")
        for job, result in zip(todo, pool.imap(replay_cli, todo, chunksize=8)):
            kept.write(json.dumps({"stamp": stamp, "job": job, "result": result}, default=float) + "\n")
            kept.flush()
            done[job] = result
    return [done[job] for job in work]


def measure(
    path, seeds: int, trials: int, concurrencies: list, jobs: int, epoch_budget=0, first_seed=0, arms=ARMS, keep=None
) -> dict:
    """Every arm on seeds `first_seed`.. at each concurrency: per arm its regret's IQM, each seed's final regret
    and its anytime quartiles (`keep`: see replayed_keeping)."""
    replayed = range(first_seed, first_seed + seeds)
    work = [(path, arm, seed, trials, k, epoch_budget) for k in concurrencies for arm in arms for seed in replayed]
    results, table = replayed_keeping(work, jobs, keep), _table(path)
    figures = {**code_state(), "table": portable(path), "space": table.space, "epochs": table.epochs}
    figures |= {"held_out": True} if table.held_out else {}  # a workload no default was chosen on (benchmarks.replay)
    figures["exhaustive_floor_pt"] = table.exhaustive_floor_pt()  # what no method can beat but by chance
    figures |= {"peers": versions()} if PEERS.keys() & set(arms) else {}  # the field's optimizers' versions
    figures["seeds"] = seeds
    figures["replayed_seconds"] = {"cores": CORES, "slowdown": {str(k): max(1.0, k / CORES) for k in concurrencies}}
    seed_set = next((name for name, known in SEED_SETS.items() if known == replayed), "other")  # other: none exactly
    figures.update(first_seed=first_seed, seed_set=seed_set)
    figures.update({f"{name}_seeds": f"{known.start}-{known.stop - 1}" for name, known in SEED_SETS.items()})
    figures.update(trials=trials, epoch_budget=epoch_budget, concurrency={})
    for k in concurrencies:
        runs = {arm: [r for (_, a, _, _, c, _), r in zip(work, results) if a == arm and c == k] for arm in arms}
        figures["concurrency"][str(k)] = summarise(runs)
    return figures


def summarise(runs: dict[str, list[dict]]) -> dict:
    regrets = {arm: np.asarray([r["regret"] for r in rs]) * 100 for arm, rs in runs.items()}  # in points
    ours = "search" if "search" in regrets else next(iter(regrets))  # a family of variants: its first arm stands in
    random_final = float(np.median(regrets[next((a for a in regrets if a.split("|")[0] == "random_asha"), ours)]))
    grid = np.linspace(0.0, max(r["wall_s"] for rs in runs.values() for r in rs), ANYTIME_POINTS)
    epochs = np.arange(1, max(r["epochs"] for rs in runs.values() for r in rs) + 1)
    at_k = {"anytime_wall_s": grid.round(2).tolist(), "anytime_epochs": epochs.tolist(), "arms": {}}
    for arm, rs in runs.items():
        at_k["arms"][arm] = {
            "regret_iqm_pt": statistics.iqm(regrets[arm]),
            "interval": statistics.bootstrap_interval(regrets[arm]),
            "median_wall_s": float(np.median([r["wall_s"] for r in rs])),
            "median_epochs": float(np.median([r["epochs"] for r in rs])),
            "share_of_wall_to_random_asha_final_median": statistics.wall_share_to(rs, random_final / 100),
            "final_regret_pt": regrets[arm].round(4).tolist(),
            "to_within_pt": statistics.to_within(rs),
            "anytime_quartiles_pt": statistics.anytime_quartiles(rs, grid),
            "anytime_iqm_pt": {
                by: statistics.anytime_iqm(rs, at, by) for by, at in (("wall", grid), ("epochs", epochs))
            },
        }
    for arm in (a for a in runs if a != ours):  # paired by seed: every arm replays the same seeds
        at_k["arms"][arm]["p_search_lower"] = statistics.wilcoxon(regrets[ours], regrets[arm], "less")
        at_k["arms"][arm]["p_search_higher"] = statistics.wilcoxon(regrets[ours], regrets[arm], "greater")
    return at_k


def measure_part(path: str, seeds: int, first_seed: int, epoch_budget: int, checks: int) -> dict:
    """The `replay` part of `python -m benchmarks`: every arm at the CLI's stop rule, 1, 2 and 4 side by side, then
    `checks` real searches through Ray against their replays (benchmarks.replay_check)."""
    trials, epoch_budget = product_stop_rule(_table(path).epochs, None, epoch_budget or None)
    figures = measure(path, seeds, trials, [1, 2, 4], 2, epoch_budget, first_seed)
    if checks:
        from benchmarks.replay_check import check

        figures["ray_check"] = check(path, searches=checks)
    return figures


def print_table(figures: dict) -> None:
    rule = f"epoch_budget={figures['epoch_budget']}" if figures["epoch_budget"] else f"trials={figures['trials']}"
    for k, at_k in figures["concurrency"].items():
        print(
            f"{figures['space']}'s table, {rule}, {k} side by side, {figures['seeds']} seeds from "
            f"{figures['first_seed']}: regret in points, IQM [95%]; p of the search lower (higher)"
        )
        for arm, f in at_k["arms"].items():
            (low, high), share = f["interval"], f["share_of_wall_to_random_asha_final_median"]
            p = f" p {f['p_search_lower']:.3g} ({f['p_search_higher']:.3g})" if "p_search_lower" in f else ""
            print(
                f"  {arm:22s} {f['regret_iqm_pt']:.3f} [{low:.3f}, {high:.3f}], wall {f['median_wall_s']:.1f} s, "
                f"{f['median_epochs']:.0f} epochs; random+ASHA's final median at {share:.0%} of the wall;{p}"
            )
    if "ray_check" in figures:
        runs = figures["ray_check"]["searches"]
        same = sum(run["match"] for run in runs)
        print(f"ASHA through Ray: {same} of {len(runs)} real searches stopped every trial where the replay did")


def main() -> None:
    global CORES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    sets = ", ".join(f"{name} {seeds.start}-{seeds.stop - 1}" for name, seeds in SEED_SETS.items())
    seed_help = f"the seeds replayed: {sets} (defaults are chosen on tuning seeds and confirmed on evidence seeds; "
    seed_help += "the fresh seeds are replayed once they stand)"
    parser.add_argument("--seed-set", choices=list(SEED_SETS), default="evidence", help=seed_help)
    parser.add_argument("--seeds", type=int, help="another set: this many seeds from --first-seed")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--trials", type=int, help="the stop rule trials=N (default: the product's trial count)")
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--epoch-budget", type=int, help="the stop rule: trial-epochs, trials lifted unless capped")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated, the search first; or search|grace=2")
    parser.add_argument("--family", help="a family of benchmarks/families.json: its arms, concurrency, trials")
    parser.add_argument("--cores", type=int, default=CORES, help=f"cores the trials share (default {CORES})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    CORES = args.cores  # before the workers fork
    concurrencies, arms = [int(k) for k in args.concurrency.split(",")], tuple(args.arms.split(","))
    for arm in arms:
        try:
            parse_variant(arm)
        except ValueError as error:
            parser.error(str(error))
    replayed = SEED_SETS[args.seed_set] if args.seeds is None else range(args.first_seed, args.first_seed + args.seeds)
    family = None
    if args.family:  # the registered family fixes what is replayed
        try:
            settings = replay_settings(args.family, portable(args.table), f"{replayed.start}-{replayed.stop - 1}")
        except UsageError as error:
            refuse(error)
        arms, concurrencies, args.trials, family = (settings[k] for k in ("arms", "concurrency", "trials", "family"))
        if args.epoch_budget not in (None, settings["epoch_budget"]):  # none given: the registered one
            refuse(f"--epoch-budget={args.epoch_budget}: {args.family} registers {settings['epoch_budget']} here")
        args.epoch_budget = settings["epoch_budget"]
    try:  # a held-out table is replayed only to report a registered family that names it, never to tune
        table = _table(args.table, held_out_ok=family is not None)
    except UsageError as error:
        parser.error(f"{error}; it is replayed only with --family, a registered family that names it")
    trials, budget = product_stop_rule(table.epochs, args.trials, args.epoch_budget)
    keep = Path(f"{args.out}.replays.jsonl") if args.out else None  # removed once the results JSON is written
    figures = measure(args.table, len(replayed), trials, concurrencies, args.jobs, budget, replayed.start, arms, keep)
    figures |= {"family": family} if family else {}
    print_table(figures)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1))
        keep.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
