"""SIGKILL at any moment, then `resume`: nothing that a trial did is lost.

One search is killed (SIGKILL to its process group: the driver and every Ray process it started) at eight moments of
its life (one of 2-worker DDP trials and two objectives at the four where their own code runs), each during the
`run` or `resume` before it, and resumed after each; a last resume finishes it, after the study's journal is cut
short mid-line with Optuna's lock left held, as a kill during the driver's append leaves it. After every kill the
files are snapshotted and the study holds no trial twice. At the end the study holds every epoch the files hold and
no trial RUNNING, every epoch a trial reported before a kill is still there with the same metrics, results files
were only ever grown or added and event files never lost an epoch (a trial that ends again takes its earlier end out
of them), every trial ended completed, stopped early or failed, the best is the best by the documented rule, and it
exports.
"""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from search.running.study.queries import CONTINUES_ATTR, epoch_values
from tests.conftest import REPO
from tests.e2e_helpers import descendants, kill_pids, run_cli

pytestmark = pytest.mark.e2e

# stem=imagenet and batch 128: the tutorial's cheap model; this test is about processes and files, not accuracy
COMMON = [
    "space=resnet_mnist",
    "data.val_limit=200",
    "seed=3",
    "stem=imagenet",
    "batch_size=128",
    "epochs=2",
    "grace=1",
]
# DDP trials get 1,024 images an epoch: with 256, rank 0 could finish the trial's last epoch before the driver had
# printed its first, and a kill "right after the first epoch" then left nothing for resume to replay (seen once)
# The DDP shape is also a search of two objectives: its study keeps epochs as user attributes and its scheduler is
# ParetoASHA, so one chain of kills covers both where their own code runs; the in-process shape is the default
# search (one objective, StudyASHA) at every moment.
SHAPES = {
    "in_process": ["workers=1", "trials=8", "concurrency=2", "data.limit=256"],
    "ddp_two_objectives": ["workers=2", "cpus=1", "trials=2", "data.limit=1024", "objectives=val_acc,params"],
}
EPOCH_LINE = re.compile(r"(?m)^\s+(\w{8})\s+epoch (\d+)/\d+\s+val_acc (\d\.\d{4})")


def log_has(pattern: str, after_s: float = 0.0):
    def moment(log: str, experiment: Path, elapsed: float) -> bool:
        match = re.search(pattern, log)
        if match and after_s:
            time.sleep(after_s)
        return bool(match)

    return moment


def after_seconds(seconds: float):
    return lambda log, experiment, elapsed: elapsed >= seconds


def experiment_claimed(log: str, experiment: Path, elapsed: float) -> bool:
    """search.json written: the driver is about to start Ray."""
    if (experiment / "search.json").exists():
        time.sleep(0.5)
        return True
    return False


def checkpoint_being_written(log: str, experiment: Path, elapsed: float) -> bool:
    """A checkpoint folder without its completion marker (or, after 30 s of looking, any moment)."""
    return elapsed > 30 or any(
        not (folder / ".complete").exists() for folder in experiment.glob("train_*/checkpoint_epoch_*")
    )


# (what the moment is, when it has come), in the order the chain meets them
MOMENTS = [
    ("while Ray starts", experiment_claimed),
    ("right after a trial's first epoch", log_has(r"epoch 1/2  val_acc")),
    ("while resume replays recorded epochs", log_has(r"recovered from its files")),
    ("right after a trial's last epoch", log_has(r"finished: completed")),
    ("between a trial's end and the next one's start", log_has(r"finished: \w+", after_s=0.3)),
    ("during a checkpoint write", checkpoint_being_written),
    ("while resume starts", after_seconds(2.5)),
    ("after the last trial ended (the summary)", log_has(r"(\d+)/\1 done")),
]


# DDP trials of two objectives are killed only where their own code runs (rank 0's rows and checkpoints, the
# replay into the study's user attributes, the end); the driver's own moments (Ray or resume starting, the gap
# between trials) are the same for both shapes.
DDP_MOMENTS = [
    "right after a trial's first epoch",
    "while resume replays recorded epochs",
    "during a checkpoint write",
    "after the last trial ended (the summary)",
]
MOMENTS_OF = {
    "in_process": MOMENTS,
    "ddp_two_objectives": [moment for moment in MOMENTS if moment[0] in DDP_MOMENTS],
}


def start(command: str, *args: str, log_path: Path, temporary: Path) -> subprocess.Popen:
    """The command in a session of its own, with a temporary folder of its own (Ray's stays in /tmp)."""
    log = open(log_path, "w")
    env = {**os.environ, "TMPDIR": str(temporary), "RAY_TMPDIR": "/tmp"}
    return subprocess.Popen(
        [sys.executable, "-m", "search", command, *args],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL to the command's process group, and to every process below it (Ray's may have left the group)."""
    below = descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    kill_pids([process.pid, *below])
    process.wait(timeout=30)


def snapshot(experiment: Path) -> dict:
    """What the files hold now: each result.json's text, each event file's epochs, each complete checkpoint's hash."""
    return {
        "results": {p.parent.name: p.read_text() for p in experiment.glob("trial_*/result.json")},
        "events": {str(p): scalars_of(p) for p in experiment.glob("trial_*/events.out.tfevents.*")},
        "checkpoints": {
            str(folder): hashlib.sha256((folder / "model.pt").read_bytes()).hexdigest()
            for folder in experiment.glob("train_*/checkpoint_epoch_*")
            if (folder / ".complete").exists()
        },
    }


def scalars_of(path: Path, ends: bool = False) -> set[tuple[str, int, str]]:
    """An event file's epochs: every scalar but a trial's end (its HParams summary and `hparams/` values, which a
    trial that ends again takes out of its earlier files: TensorBoard shows a run's first end it reads); `ends`:
    the end's values only. Values as text: a diverged epoch's NaN equals itself."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    from search.results.tensorboard import END_TAGS

    events = LegacyEventFileLoader(str(path)).Load()
    values = ((event.step, value) for event in events for value in event.summary.value)
    return {(v.tag, step, repr(v.simple_value)) for step, v in values if v.tag.startswith(END_TAGS) == ends}


def cut_study_journal(experiment: Path) -> None:
    """What a kill during the driver's append to the study leaves: its last line cut short, Optuna's lock held."""
    journal = experiment / "study.log"
    journal.write_bytes(journal.read_bytes() + b'{"op_code":6,"worker_id":"x","trial_id":0,"st')
    os.symlink(journal, experiment / "study.log.lock")


def study_trials(experiment: Path) -> list:
    """The study as Optuna reads it (what optuna-dashboard shows)."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(experiment / "study.log")))
    return optuna.load_study(study_name="search", storage=storage).trials


def assert_study_agrees_with_files(experiment: Path, finished: bool) -> None:
    """No trial twice: a trial the study holds more than once is one chain, each later entry the continuation of the
    one before (ASHA's promotion variant resumes a paused trial so: Optuna never reopens an ended trial), every one
    but the last ended. Every epoch a trial's files hold is in the study, its chain's last entry, with the same value
    (always, once the search finished: a killed driver's study may lag its files until the next resume); none left
    RUNNING at the end."""
    everything = [t for t in study_trials(experiment) if t.state.name != "WAITING"]
    chains: dict[str, list] = {}
    for trial in everything:  # a proposal a kill cut short has no id yet
        if "trial_id" in trial.user_attrs:
            chains.setdefault(trial.user_attrs["trial_id"], []).append(trial)
    for trial_id, chain in chains.items():
        links = [(t.number, t.user_attrs.get(CONTINUES_ATTR), t.state.name) for t in chain]
        for before, after in zip(chain, chain[1:]):
            assert after.user_attrs.get(CONTINUES_ATTR) == before.number, (trial_id, links)
            assert before.state.name != "RUNNING", (trial_id, links)
    if not finished:
        return
    assert not [t for t in everything if t.state.name == "RUNNING"], [(t.number, t.user_attrs) for t in everything]
    for trial_id, chain in chains.items():
        trial = chain[-1]
        recorded = rows_of(experiment, trial_id) if (experiment / f"trial_{trial_id}" / "result.json").exists() else {}
        assert {e: r["val_acc"] for e, r in recorded.items()} == epoch_values(trial), trial.user_attrs


def rows_of(experiment: Path, trial_id: str) -> dict[int, dict]:
    text = (experiment / f"trial_{trial_id}" / "result.json").read_text()
    return {row["epoch"]: row for row in map(json.loads, text.splitlines())}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_search_killed_at_every_moment_resumes_without_losing_anything(tmp_path, mnist_root, shape):
    experiment = tmp_path / "k"
    run_args = [*COMMON, *SHAPES[shape], f"data.root={mnist_root}", f"storage={tmp_path}", "name=k"]
    reported, snapshots, kills, logs = set(), [], [], []
    moments = MOMENTS_OF[shape]
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    for index, (label, has_come) in enumerate(moments):
        log_path = tmp_path / f"segment{index}.log"
        command = ["run", *run_args] if index == 0 else ["resume", str(experiment)]
        process = start(*command, log_path=log_path, temporary=temporary)
        began = time.monotonic()
        while process.poll() is None and not has_come(log_path.read_text(), experiment, time.monotonic() - began):
            assert time.monotonic() - began < 300, f"{label}: not reached in 300 s\n{log_path.read_text()[-3000:]}"
            time.sleep(0.01)
        finished = process.poll() is not None
        kill_group(process)
        log = log_path.read_text()
        logs.append(log)
        reported |= set(EPOCH_LINE.findall(log))
        if finished:  # the search ended before this moment: nothing left to kill
            assert process.returncode == 0, log[-3000:]
            break
        kills.append((label, round(time.monotonic() - began, 1)))
        snapshots.append(snapshot(experiment))
        if (experiment / "study.log").exists():
            assert_study_agrees_with_files(experiment, finished=False)
    assert len(kills) == len(moments), f"only {len(kills)} kills before the search ended: {kills}"
    # a killed trial leaves no checkpoint behind outside the experiment (once: 86 MB in /tmp at most kills)
    assert not list(temporary.rglob("*.pt")), sorted(map(str, temporary.rglob("*.pt")))
    cut_study_journal(experiment)

    final = run_cli("resume", str(experiment))
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    reported |= set(EPOCH_LINE.findall(final.stdout))
    if shape == "in_process":  # the same driver's answer for either shape
        again = run_cli("resume", str(experiment))
        assert again.returncode == 0 and "already finished" in again.stdout
    assert_study_agrees_with_files(experiment, finished=True)

    summary = json.loads((experiment / "summary.json").read_text())
    trials = {t["trial_id"]: t for t in summary["trials"]}
    assert len(trials) == summary["run"]["trials"], (kills, sorted(trials))
    assert {t["status"] for t in trials.values()} <= {"completed", "stopped_early", "failed"}, summary["trials"]
    for trial in trials.values():
        assert trial["status"] != "failed" or trial["error"], trial
    # every epoch reported before a kill keeps its metrics
    for trial_id, epoch, value in reported:
        assert trial_id in trials, f"trial {trial_id} reported epoch {epoch}, then vanished ({kills})"
        assert f"{rows_of(experiment, trial_id)[int(epoch)]['val_acc']:.4f}" == value, (trial_id, epoch)
    # files only grew or were added (an event file may lose a trial's end, never an epoch); a complete checkpoint is
    # never rewritten (pruning may remove it)
    now = snapshot(experiment)
    for before in snapshots:
        for name, text in before["results"].items():
            assert now["results"][name].startswith(text), f"{name}/result.json lost lines"
        for path, epochs in before["events"].items():
            assert epochs <= scalars_of(Path(path)), f"{path} lost epochs"
        for path, digest in before["checkpoints"].items():
            assert path not in now["checkpoints"] or now["checkpoints"][path] == digest, f"{path} was rewritten"
    assert any(epochs for before in snapshots for epochs in before["events"].values())  # epochs were there to lose
    for folder in experiment.glob("trial_*"):  # TensorBoard shows a run's first end it reads: one at most
        ends = [path.name for path in folder.glob("events.out.tfevents.*") if scalars_of(path, ends=True)]
        assert len(ends) <= 1, (folder.name, ends)
    # the best by the documented rule: a trial that finished its OneCycle schedule, by its final epoch
    finishers = [t for t in trials.values() if t["status"] == "completed"]
    if finishers:
        assert summary["best"]["metrics"]["val_acc"] == max(t["val_acc"] for t in finishers)
        assert summary["best"]["epoch"] == 2
    exported = run_cli("export", str(experiment), f"out={tmp_path / 'model'}")
    assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-2000:]
    if "objectives=val_acc,params" in SHAPES[shape]:  # both objectives outlived every kill: a front, picked from
        assert finishers and summary["front"], summary
        for trial in study_trials(experiment):
            if trial.state.name == "COMPLETE":
                objectives = trials[trial.user_attrs["trial_id"]]["objectives"]
                assert trial.values == [objectives["val_acc"], objectives["params"]], (trial.values, objectives)
        assert "objectives" in json.loads((tmp_path / "model" / "model.json").read_text())
    for (label, at), before in zip(kills, snapshots):  # what each resume found recorded, and kept
        recorded = {name.removeprefix("trial_"): len(text.splitlines()) for name, text in before["results"].items()}
        print(f"{shape}: killed {at:>5.1f} s into the segment, {label}: epochs recorded {recorded or 'none'}, all kept")
    print(f"{shape}: end: {[(t['trial_id'], t['status'], t['epochs_run']) for t in trials.values()]}")
