"""Search performance on this machine, in one run: the search against a plain Optuna loop, trial start and
overhead, throughput against a bare loop, the data path, DDP without Ray, ASHA's savings, memory over a 20-trial
search, the training step on a GPU, and the search method itself replayed as the command line runs it on a
learning-curve table (replay).

    python -m benchmarks [--out benchmarks.json] [--only peer,warm,overhead,ddp,data,asha,memory,gpu,scale,replay]
        [--device cuda]

Every figure is measured in this run, on this machine; ratios compare runs made by this same script."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks import accelerator, data_path, ddp_ceiling, memory, overhead, peer, replay_cli, scale, warm_start
from benchmarks.options import PARTS, SHAPES, parse_args
from benchmarks.search_runs import resnet_words, run_search, summary_of, trial_rows
from benchmarks.throughput import bare_loop, steady_images_per_s, steady_rows
from search.results.files import write_json_atomically


def measure_trials(
    root: str, storage: Path, batch: int, limit: int, epochs: int, trials_per_shape: int, shapes: list[str]
) -> dict:
    """`trials_per_shape` fixed-configuration trials in a row per shape: throughput, overhead breakdown and the cores
    each process kept busy training; the bare loop runs right before and after each search (shared cores drift)."""
    cores = len(os.sched_getaffinity(0))
    figures = dict(bare_loop_threads=cores, epochs=epochs, train_images=limit, batch=batch)
    figures.update(trials_per_shape=trials_per_shape, shapes={})
    for label in shapes:
        words = f"data.limit={limit} data.val_limit=500 batch_size={batch} trials={trials_per_shape} concurrency=1"
        overrides = [*resnet_words(root, f"{words} epochs={epochs} grace={epochs}"), *SHAPES[label]]
        before = bare_loop(root, limit, epochs, batch, threads=cores)
        run = run_search(storage, label.replace(" ", "_").replace("=", ""), overrides, sample_processes=True)
        print(f"  {label}: {run['wall_s']:.0f} s", flush=True)
        after, trials = bare_loop(root, limit, epochs, batch, threads=cores), trial_rows(run["experiment"])
        steady = [row for rows in trials for row in steady_rows(rows)]  # the epochs images/s is averaged over
        training = [(row["started_at"], row["started_at"] + row["train_s"]) for row in steady]
        rate = sum(map(steady_images_per_s, trials)) / len(trials)
        figures["shapes"][label] = {
            "images_per_s": rate,
            "bare_loop_images_per_s": {"before": before, "after": after},
            "vs_bare_loop": rate / ((before + after) / 2),
            "search_wall_s": run["wall_s"],
            "cores_busy_while_training": run["processes"].cores_by_role(training),
            **overhead.breakdown(trials),
        }
    return figures


def measure_asha(root, storage: Path, trials: int, epochs: int, reduction: float, images=1024, space="resnet_mnist"):
    """ASHA (asha=stop) and its promotion variant (asha=promote) against every trial run to `epochs`, on seeded random
    proposals (TPE's would change with ASHA's results): the same configurations in all three; `resumptions`: the
    promotion variant's paused trials resumed from a checkpoint (each a fresh start of the trial)."""
    words = f"data.limit={images} trials={trials} epochs={epochs} reduction={reduction:g} workers=1 cpus=1"
    common, runs = [f"space={space}", f"data.root={root}", *f"{words} concurrency=2 seed=0 sampler=random".split()], {}
    rules = {"asha": "asha=stop grace=1", "promote": "asha=promote grace=1", "full": f"grace={epochs}"}
    for label, rule in rules.items():
        run = run_search(storage, f"asha-{label}", [*common, *rule.split()])
        summary, rows = summary_of(run["experiment"]), trial_rows(run["experiment"])
        best, epochs_run = summary["best"], sum(t["epochs_run"] for t in summary["trials"])
        runs[label] = dict(epochs_run=epochs_run, best_test_acc=best.get("test_acc"), wall_s=run["wall_s"])
        runs[label] |= dict(best_value=best["metrics"][summary["metric"]], best_config=best["config"])
        runs[label]["configs"] = sorted(repr(sorted(t["config"].items())) for t in summary["trials"])
        runs[label]["resumptions"] = sum(len({r.get("resumed_from") for r in t} - {0, None}) for t in rows)
    by = lambda key: {label: run[key] for label, run in runs.items()}  # noqa: E731
    asha, promote, full = runs["asha"], runs["promote"], runs["full"]
    return {
        **dict(trials=trials, epochs=epochs, reduction=reduction, sampler="random", space=space),
        "same_configurations": len(set(map(repr, by("configs").values()))) == 1,
        **{key: by(key) for key in ("epochs_run", "best_value", "best_test_acc", "wall_s", "resumptions")},
        "epochs_ratio": asha["epochs_run"] / full["epochs_run"],
        "promote_over_asha": {key: promote[key] / asha[key] for key in ("epochs_run", "wall_s")},
        "same_best_configuration": asha["best_config"] == full["best_config"],
        "points_behind_full": {label: 100 * (full["best_value"] - run["best_value"]) for label, run in runs.items()},
        "test_points_behind_full": {k: 100 * (full["best_test_acc"] - r["best_test_acc"]) for k, r in runs.items()},
        "train_images": images or "all",
    }


def summary_lines(report: dict) -> list[str]:
    """One line per measurement, its headline figures (the JSON keeps every figure)."""
    lines = []
    if "peer" in report:
        loop, search, over = (report["peer"][key] for key in ("plain_loop", "search", "search_over_loop"))
        lines.append(f"peer: search {search['wall_s']:.0f} s, plain Optuna loop {loop['wall_s']:.0f} s ({over:.2f}x)")
    if warm := report.get("warm_start"):
        lines.append(
            f"warm: smallest search {warm['smallest_vs_fresh_import']:.2f}x a fresh import, reuse_actors "
            f"{warm['reuse_true_vs_false_wall']:.2f}x the wall without, "
            f"DDP trials {warm['ddp_start_gap_s']:.1f} s apart"
        )
    for label, shape in report.get("trials", {}).get("shapes", {}).items():
        apart = shape["mean_after_first"].get("last_report_to_next_first_step_s", 0)
        lines.append(
            f"overhead, {label}: {shape['images_per_s']:.0f} images/s, {shape['vs_bare_loop']:.2f} of the bare loop, "
            f"trials {apart:.1f} s apart"
        )
    if ddp := report.get("ddp_without_ray"):
        lines.append(
            f"ddp: two processes DDP/gloo {ddp['two_processes_ddp_gloo']:.0f} images/s, one process 2 threads "
            f"{ddp['one_process_2_threads']:.0f}"
        )
    for name, d in report.get("data_path", {}).items():
        lines.append(f"data, {name}: the tutorial's DataLoader {d['tutorial_over_memory_feed']:.1f}x the memory feed")
    if asha := report.get("asha"):
        lines.append(
            f"asha: {asha['epochs_run']['asha']} of {asha['epochs_run']['full']} epochs, best val_acc "
            f"{asha['best_value']['asha']:.4f} against {asha['best_value']['full']:.4f} with every epoch; promotion "
            f"variant {asha['epochs_run'].get('promote')} epochs, best {asha['best_value'].get('promote')}"
        )
    if "memory" in report:
        first, last = (report["memory"]["peak_rss_mib"]["trial_driver"][key] for key in ("first", "last"))
        lines.append(f"memory: a trial driver's peak {first:.0f} MiB at the first trial, {last:.0f} at the last")
    for label, run in report.get("scale", {}).get("runs", {}).items():
        lines.append(
            f"scale {label}: {run['wall_s']:.0f} s ({run['wall_over_ideal']:.2f}x ideal), driver CPU a trial "
            f"{run['cpu_late_over_early']:.2f}x late/early, RSS {run['rss_end_over_10pct']:.2f}x"
        )
    if "accelerator" in report and "skipped" in report["accelerator"]:
        lines.append(f"gpu: skipped ({report['accelerator']['skipped']})")
    elif "accelerator" in report:
        bare = report["accelerator"]["bare_loop"]
        rates = [f"{k} {'failed' if 'failed' in r else format(r['images_per_s'], '.0f')}" for k, r in bare.items()]
        trial = report["accelerator"]["search_trial"]["fp32"]["vs_bare_loop"]
        lines.append(f"gpu: a trial {trial:.2f} of the bare loop (fp32); bare loop images/s: {', '.join(rates)}")
    return lines


KEYS = {"warm": "warm_start", "overhead": "trials", "ddp": "ddp_without_ray", "data": "data_path", "gpu": "accelerator"}


def measure(part: str, args, storage: Path, shapes: list[str]) -> dict:
    """One part's figures (its key in the JSON: KEYS, else the part's name)."""
    root = args.root
    if part == "peer":
        return peer.measure(root, storage, args.peer_trials, args.peer_epochs, args.peer_keys.split())
    if part == "warm":
        return warm_start.measure(root, storage)
    if part == "overhead":
        return measure_trials(root, storage, 128, args.trial_images, args.trial_epochs, args.trials_per_shape, shapes)
    if part == "ddp":
        return ddp_ceiling.measure(root)
    if part == "data":
        return data_path.measure(root, batch=128)
    if part == "asha":
        return measure_asha(
            *(root, storage, args.asha_trials, args.asha_epochs), *(args.reduction, args.asha_images, args.asha_space)
        )
    if part == "memory":
        return memory.measure(root, storage, trials=args.memory_trials)
    if part == "scale" and args.scale_again:
        return scale.again(Path(args.scale_again), storage)
    if part == "scale":
        keep = Path(args.scale_keep) if args.scale_keep else storage
        keep.mkdir(exist_ok=True)
        trial_counts = [int(n) for n in args.scale_trials.split(",")]
        return scale.measure(keep, trial_counts, [word == "on" for word in args.scale_mlflow.split(",")])
    if part == "replay":
        seeds, first, budget = args.replay_seeds, args.replay_first_seed, args.replay_epoch_budget
        return replay_cli.measure_part(args.replay_table, seeds, first, budget, args.replay_checks)
    return accelerator.measure(root, storage, args.device, limit=args.gpu_images)


def write_report(path: str, figures: dict) -> dict:
    """The figures with when, on what and with which torch they were measured."""
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    report = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "torch": torch.__version__, **figures}
    write_json_atomically(Path(path), report)  # a reader never sees half a report
    return report


def main() -> None:
    args, parts, shapes = parse_args(sys.argv[1:], __doc__.split("\n\n")[0])
    figures = {}
    with tempfile.TemporaryDirectory() as storage:
        for part in PARTS:
            if part in parts:
                try:
                    figures[KEYS.get(part, part)] = measure(part, args, Path(storage), shapes)
                except RuntimeError as exc:  # a search the part ran failed: its command and the end of its stderr
                    kept = f"{args.out} keeps the parts before it" if figures else "nothing was measured"
                    print(f"error: the {part} part failed ({kept}): {exc}", file=sys.stderr)
                    raise SystemExit(1) from None
                write_report(args.out, {**figures, "complete": False})  # what is measured so far survives a crash
    report = write_report(args.out, {**figures, "complete": True})
    print("\n".join(summary_lines(report)))
    if "replay" in report:
        replay_cli.print_table(report["replay"])


if __name__ == "__main__":
    main()
