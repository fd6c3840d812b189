"""An experiment of many trials stays usable: `report`, `export`, `dashboard`, `tensorboard` and `resume` (to its first
new trial) timed to their answer on an experiment the scale run kept, and its trials' files (bounded a trial)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
URL = re.compile(r"at (http://127\.0\.0\.1:\d+/)")


def answers(path: str, runs: int = 0):
    """Ready once the command printed its URL and `path` under it answers (with a JSON list of at least `runs` items
    when given: TensorBoard's runs, listed as it loads their event files); an error is not ready yet."""

    def ready(lines: list[str], _experiment: Path) -> bool:
        urls = [found.group(1) for found in map(URL.search, lines) if found]
        try:
            body = urls and urllib.request.urlopen(urls[0] + path, timeout=5).read()
        except OSError:  # not serving yet, or refused: asked again
            return False
        return bool(body) and (not runs or len(json.loads(body)) >= runs)

    return ready


def timed(words: list[str], experiment: Path, ready=None, timeout: float = 600) -> dict:
    """Seconds from the start of `python -m search WORDS` to its exit 0 (`ready` None) or to `ready(output lines,
    experiment)`, then Ctrl-C (a kill 120 s later); None if it ended otherwise or took longer than `timeout`."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "search", *words]
    process = subprocess.Popen(  # Ctrl-C as at a terminal, even when this runs where SIGINT is ignored (a `&` job)
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=_ctrl_c_default
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    try:
        while time.perf_counter() - start < timeout:
            done = process.poll() is not None
            if (ready is None and done and process.returncode == 0) or (ready and ready(list(lines), experiment)):
                return {"s": round(time.perf_counter() - start, 2), "said": lines[-1:]}
            if done:
                break
            time.sleep(0.1)
        return {"s": None, "exit": process.poll(), "said": lines[-5:]}
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _ctrl_c_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python turns SIGINT into KeyboardInterrupt only from SIG_DFL


def trial_files(experiment: Path) -> dict:
    """Files a trial left in `trial_<id>/` (rows, end, TensorBoard events) and `train_<id>/` (checkpoints): the most
    and the median of all, of checkpoint folders and of event files; and the experiment's files in all."""
    counts = {"files": [], "checkpoints": [], "events": []}
    for trial in experiment.glob("trial_*"):
        run = experiment / f"train_{trial.name.removeprefix('trial_')}"
        files = [p for folder in (trial, run) for p in folder.rglob("*") if p.is_file()]
        counts["files"].append(len(files))
        counts["checkpoints"].append(len({p.parent for p in files if p.parent.name.startswith("checkpoint_epoch_")}))
        counts["events"].append(sum("tfevents" in p.name for p in files))
    figures = {key: {"max": max(v), "median": sorted(v)[len(v) // 2]} for key, v in counts.items() if v}
    return {**figures, "experiment_files": sum(1 for p in experiment.rglob("*") if p.is_file())}


def resumed(experiment: Path) -> dict:
    """`resume` with one more trial than its folders hold, timed to the new trial's folder."""
    before = {p.name for p in experiment.glob("trial_*")}
    new_trial = lambda _, folder: bool({p.name for p in folder.glob("trial_*")} - before)  # noqa: E731
    return timed(["resume", str(experiment), f"trials={len(before) + 1}"], experiment, new_trial)


def measure(experiment: Path) -> dict:
    """Each command's time to its answer; resume last: it leaves the (scale part's own) experiment a trial longer."""
    experiment = experiment.resolve()
    trials = len(json.loads((experiment / "summary.json").read_text())["trials"])
    figures = {"trials": trials, "files": trial_files(experiment)}
    figures["report"] = timed(["report", str(experiment)], experiment)
    figures["export"] = timed(["export", str(experiment), f"out={experiment}-export", "--replace"], experiment)
    figures["dashboard"] = timed(["dashboard", str(experiment), "port=0"], experiment, answers("api/studies"))
    every_run = answers("data/runs", runs=trials)  # each trial's event file loaded, not the server's start alone
    figures["tensorboard"] = timed(["tensorboard", str(experiment), "port=0"], experiment, every_run)
    figures["resume"] = resumed(experiment)
    for command in ("report", "export", "dashboard", "tensorboard", "resume"):
        said = figures[command]["s"]
        print(f"  {trials} trials: {command} " + (f"answered in {said} s" if said else "did not answer"), flush=True)
    return figures
