"""Scale: N trials of a space whose epoch takes a fixed short time (its own data and a training step that sleeps),
8 side by side on a local Ray (cpus=0.25 a trial), through the real `run` path (study, StudyASHA, checkpoints,
TensorBoard, MLflow on and off), and the same trials through Ray Tune's own stack (`Tuner` + `OptunaSearch` +
`ASHAScheduler`, a function trainable) as the anchor. The driver process's CPU seconds and RSS are read from /proc
at each trial end it prints: per trial they must stay flat as trials accumulate (docs/design.md, "Many trials")."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

EPOCH_S, EPOCHS, SIDE_BY_SIDE = 0.5, 3, 8  # one training step a trial-epoch, sleeping EPOCH_S
REPO = Path(__file__).resolve().parents[1]
ENDED = re.compile(r"trial (\S+) (finished|failed|ended)")  # the live view's and the anchor's line per trial end


def tiny_data(root: str, seed: int):
    """32 training and 16 validation 8x8 images of two classes: one batch an epoch."""
    import numpy as np

    from spaces import OwnData

    rng = np.random.default_rng(seed)
    images, labels = rng.integers(0, 256, (48, 1, 8, 8), dtype=np.uint8), rng.integers(0, 2, 48)
    return OwnData(train=(images[:32], labels[:32]), val=(images[32:], labels[32:]), class_names=["a", "b"])


def sleepy_step(model, images, labels):
    """The forward as the built-in one, after EPOCH_S of sleep: an epoch that takes a fixed time, no CPU."""
    import torch.nn.functional as F

    time.sleep(EPOCH_S)
    return F.cross_entropy(model(images), labels)


def _space():
    from optuna.distributions import FloatDistribution as Float

    from spaces import Space

    hidden = {"in_channels": 1, "num_classes": 2, "image_size": 8, "hidden": 8, "layers": 1}
    return Space(
        name="scale",
        description="a tiny MLP on 32 random 8x8 images, each epoch one sleeping step",
        architecture="mlp",
        model_args=lambda hp, data: {**hidden, "dropout": hp["dropout"]},
        dataset=f"{__file__}:tiny_data",
        train_step=f"{__file__}:sleepy_step",
        hyperparameters={"lr": Float(1e-3, 1e-1, log=True), "dropout": Float(0.0, 0.5)},
        constants={"optimizer": "adam", "batch_size": 32, "weight_decay": 0.0},
    )


SPACE = _space()  # what `space=benchmarks/scale.py` reads


def _proc(pid: int) -> tuple[float, float]:
    """(CPU seconds, RSS MiB) of process `pid`, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    rss = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(rss.split()[1]) / 1024


def sampled_run(command: list[str], env: dict | None = None) -> dict:
    """Runs `command` (a driver), reading its CPU and RSS at each trial end it prints: [ended, cpu_s, rss_mib, s]."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    samples, epochs = [], 0
    for line in process.stdout:
        if ENDED.search(line):
            epochs += int(line.rsplit("epochs=", 1)[1]) if "epochs=" in line else 0
            samples.append([len(samples) + 1, *_proc(process.pid), round(time.perf_counter() - start, 2)])
    stderr = process.stderr.read()
    if process.wait() != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}): {stderr.strip()[-2000:]}")
    return {"wall_s": time.perf_counter() - start, "samples": samples, "anchor_epochs": epochs}


def per_trial(samples: list, lo: float, hi: float) -> dict:
    """Driver CPU seconds per ended trial between the fractions `lo` and `hi` of the trials, and RSS at `hi`."""
    a, b = samples[max(0, int(lo * len(samples)) - 1)], samples[max(0, int(hi * len(samples)) - 1)]
    return {"trials": [a[0], b[0]], "cpu_s_per_trial": (b[1] - a[1]) / max(1, b[0] - a[0])}


def flatness(run: dict) -> dict:
    """The targets' figures: CPU a trial at trials 90-100% against 5-15%, RSS at the end against at 10%, wall/ideal;
    seconds to the first trial's end (the processes' start), wall over ideal from 10% to 90% of the trials."""
    samples, tenth = run["samples"], max(1, len(run["samples"]) // 10)
    early, late = per_trial(samples, 0.05, 0.15), per_trial(samples, 0.9, 1.0)
    a, b = samples[tenth - 1], samples[-tenth - 1]  # the trials ended at 10% and at 90%
    rss_early, rss_end = a[2], samples[-1][2]
    ideal = run["trial_epochs"] * EPOCH_S / SIDE_BY_SIDE
    run.update(early=early, late=late, cpu_late_over_early=late["cpu_s_per_trial"] / early["cpu_s_per_trial"])
    run.update(rss_mib_at_10pct=rss_early, rss_mib_at_end=rss_end, rss_end_over_10pct=rss_end / rss_early)
    run.update(ideal_wall_s=ideal, wall_over_ideal=run["wall_s"] / ideal, first_end_s=samples[0][3])
    run["steady_wall_over_ideal"] = (b[3] - a[3]) / ((b[0] - a[0]) / samples[-1][0] * ideal)  # epochs even by trial
    run["samples"] = samples[:: max(1, len(samples) // 400)] + samples[-1:]  # 400 points keep the curve's shape
    return run


def search_run(storage: Path, trials: int, mlflow: bool) -> dict:
    name = f"scale-{trials}-{'mlflow' if mlflow else 'plain'}"
    words = f"trials={trials} epochs={EPOCHS} grace=1 asha=stop concurrency={SIDE_BY_SIDE} cpus=0.25 workers=1"
    words += f" checkpoints=1 tracking={'mlflow' if mlflow else 'none'} storage={storage} name={name}"
    command = [sys.executable, "-m", "search", "run", f"space={Path(__file__).resolve()}", *words.split()]
    run, summary = sampled_run(command), json.loads((storage / name / "summary.json").read_text())  # in this order
    run.update(experiment=str(storage / name), trial_epochs=sum(t["epochs_run"] for t in summary["trials"]))
    return flatness(run)


def tune_anchor(trials: int, storage: str) -> None:
    """The same trials through Ray Tune's own stack, printing `trial X ended epochs=E` at each trial end."""
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    def trainable(config):
        score = 1 - abs(config["lr"] - 0.01) - config["dropout"] / 10
        for epoch in range(1, EPOCHS + 1):
            time.sleep(EPOCH_S)
            tune.report({"val_acc": score + epoch / 100, "epoch": epoch})

    class Ended(tune.Callback):
        def on_trial_complete(self, iteration, trials, trial, **info):
            print(f"trial {trial.trial_id} ended epochs={trial.last_result.get('epoch', 0)}", flush=True)

        on_trial_error = on_trial_complete

    ray.init(num_cpus=len(os.sched_getaffinity(0)), include_dashboard=False, logging_level="ERROR")
    space = {"lr": tune.loguniform(1e-3, 1e-1), "dropout": tune.uniform(0.0, 0.5)}
    asha = ASHAScheduler(time_attr="epoch", max_t=EPOCHS, grace_period=1, reduction_factor=3)
    settings = dict(search_alg=OptunaSearch(seed=0), scheduler=asha, max_concurrent_trials=SIDE_BY_SIDE)
    run = tune.RunConfig(storage_path=storage, callbacks=[Ended()], verbose=0)
    config = tune.TuneConfig(metric="val_acc", mode="max", num_samples=trials, **settings)
    tune.Tuner(
        tune.with_resources(trainable, {"cpu": 0.25}), param_space=space, tune_config=config, run_config=run
    ).fit()


def sampler_alone(trials: int) -> dict:
    """The baseline of the driver's CPU: the proposals alone, a plain Optuna loop in memory (ask; epoch 1 reported;
    a third told complete, the others pruned), Optuna's `TPESampler` against the search's; seconds a trial."""
    import optuna

    from search.running.proposals.sampler import make_sampler

    figures, states = {}, (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name, sampler in (("optuna", optuna.samplers.TPESampler(seed=0)), ("search", make_sampler("tpe", 0, 10))):
        study, seconds = optuna.create_study(direction="maximize", sampler=sampler), []
        for number in range(trials):
            start, trial, value = time.perf_counter(), study.ask(SPACE.hyperparameters), (number * 7919 % 1000) / 1000
            trial.report(value, 1)
            study.tell(trial, value if number % 3 == 0 else None, state=states[number % 3 > 0])
            seconds.append(time.perf_counter() - start)
        early, late = (
            sum(seconds[int(a * trials) : int(b * trials)]) / (trials * 0.1) for a, b in ((0.05, 0.15), (0.9, 1))
        )
        figures[name] = {"early_s_per_trial": early, "late_s_per_trial": late, "late_over_early": late / early}
    return figures


def again(kept: Path, storage: Path, rounds: int = 3) -> dict:
    """`resume` to its first new trial timed again (seconds, a round each) on a fresh copy of each experiment `kept`
    holds (the code's own, not the code's that ran the trials), the experiments in turn in each round."""
    from benchmarks.many_trials import resumed

    experiments, figures = sorted(path.parent for path in kept.glob("scale-*/study.log")), {"again": str(kept)}
    for _ in range(rounds):
        for experiment in experiments:
            shutil.copytree(experiment, storage / "copy", symlinks=True)
            said = resumed(storage / "copy")["s"]
            figures.setdefault(experiment.name.removeprefix("scale-"), []).append(said)
            print(f"  {experiment.name}: resume answered in {said} s", flush=True)
            shutil.rmtree(storage / "copy")
    figures["median"] = {name: sorted(s)[len(s) // 2] for name, s in figures.items() if isinstance(s, list)}
    return figures


def measure(storage: Path, trial_counts: list[int], mlflow: list[bool]) -> dict:
    from benchmarks import many_trials  # here: this file is also a space, loaded where `benchmarks` may not be

    figures = {"epoch_s": EPOCH_S, "epochs": EPOCHS, "side_by_side": SIDE_BY_SIDE, "cores": os.cpu_count(), "runs": {}}
    figures["sampler_alone"] = {}
    for trials in trial_counts:
        figures["sampler_alone"][str(trials)] = alone = sampler_alone(trials)
        print(f"  scale {trials} proposals alone: late/early {alone['search']['late_over_early']:.2f}x", flush=True)
        for tracked in mlflow:
            figures["runs"][f"{trials}-{'mlflow' if tracked else 'plain'}"] = run = search_run(storage, trials, tracked)
            print(f"  scale {trials} trials: {run['wall_s']:.0f} s ({run['wall_over_ideal']:.2f}x ideal)", flush=True)
            run["usable"] = many_trials.measure(Path(run["experiment"]))
        code = f"from benchmarks.scale import tune_anchor; tune_anchor({trials}, {str(storage / 'tune')!r})"
        anchor = sampled_run([sys.executable, "-c", code], {"RAY_AIR_NEW_OUTPUT": "0"})
        figures["runs"][f"{trials}-tune"] = flatness({**anchor, "trial_epochs": anchor["anchor_epochs"]})
        print(f"  scale {trials} trials, Ray Tune's stack: {anchor['wall_s']:.0f} s", flush=True)
    return figures
