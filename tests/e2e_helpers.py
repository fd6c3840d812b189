"""Shared pieces of the end-to-end tests: run the real CLI, find and stop only the processes it started."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import MNIST_MINI, REPO

VAL_LIMIT = 400


def run_search(log_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m search run ...`, with everything it prints in a log file (`env`: variables added)."""
    with open(log_path, "w") as log:
        return subprocess.run(
            [sys.executable, "-m", "search", "run", *args],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=900,
            env={**os.environ, **(env or {})},
        )


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m search ...` (`env`: variables added to its environment)."""
    return subprocess.run(
        [sys.executable, "-m", "search", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def ray_processes_of(session_dir: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if session_dir in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def session_dir_of(experiment: Path) -> str:
    for line in (experiment / "search.log").read_text().splitlines():
        if "started a local Ray instance, session" in line:
            return line.rsplit(" ", 1)[-1]
    raise AssertionError("search.log does not name the Ray session")


@contextlib.contextmanager
def another_ray_instance():
    """A second Ray instance on this machine, as when a user runs two searches; only its own processes are stopped."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "dashboard_host": "127.0.0.1"})
    try:
        yield cluster
    finally:
        cluster.shutdown()


def main_search(tmp_path_factory) -> dict:
    """The shared search of the end-to-end tests: 6 trials, 4 epochs, ASHA grace 1, the shape chosen for this
    machine (on 2 cores: one-worker trials in reused trial processes, 2 at a time), tracked in MLflow. Another
    Ray instance runs on the machine meanwhile: Ray's State API would then look up the wrong one, and the search
    hung after its first early-stopped trial (its workers' placement group was never freed)."""
    storage = tmp_path_factory.mktemp("runs")
    log = storage / "cli.log"
    with another_ray_instance() as bystander:
        result = run_search(
            log,
            "space=resnet_mnist",
            f"data.root={MNIST_MINI}",
            f"storage={storage}",
            "name=e2e",
            "trials=6",
            "epochs=4",
            "grace=1",
            "data.limit=256",
            f"data.val_limit={VAL_LIMIT}",
            "seed=1",
            "rung_cycles=true",
            "tracking=mlflow",
        )
        assert not bystander.head_node.dead_processes(), "the search stopped another Ray instance's processes"
    output = log.read_text()
    assert result.returncode == 0, output[-4000:]
    experiment = storage / "e2e"
    return {
        "experiment": experiment,
        "output": output,
        "summary": json.loads((experiment / "summary.json").read_text()),
    }


def start_search(log_path: Path, *args: str, command: str = "run", env: dict | None = None) -> subprocess.Popen:
    """Start `python -m search <command> ...` in the background, its output going to a log file."""
    log = open(log_path, "w")
    return subprocess.Popen(
        [sys.executable, "-m", "search", command, *args],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_like_a_terminal,
        env=env,
    )


def _like_a_terminal() -> None:
    """Ctrl-C reaches the command as in a terminal, even when this test runs in a background job (which
    starts its children with SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_line(
    log_path: Path, pattern: str, process: subprocess.Popen, timeout: float = 300, poll_s: float = 0.2
) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(pattern, log_path.read_text())
        if match:
            return match
        if process.poll() is not None:
            raise AssertionError(
                f"search ended (rc {process.returncode}) before {pattern!r}:\n{log_path.read_text()[-3000:]}"
            )
        time.sleep(poll_s)
    raise AssertionError(f"no {pattern!r} within {timeout}s:\n{log_path.read_text()[-3000:]}")


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, grandchildren, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def process_title(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_pids(pids: list[int], timeout: float = 30) -> None:
    """SIGKILL exactly these pids (processes this test started) and wait until they are gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in pids):
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def result_rows(experiment: Path, trial_id: str) -> list[dict]:
    """A trial's result.json rows, one per epoch it reported."""
    return [json.loads(line) for line in (experiment / f"trial_{trial_id}" / "result.json").read_text().splitlines()]


def uri_text(uri: str) -> str:
    """A file's text read through pyarrow (e.g. from the test's S3 endpoint), not through this project's code."""
    return uri_bytes(uri).decode()


def uri_bytes(uri: str) -> bytes:
    import pyarrow.fs

    fs, path = pyarrow.fs.FileSystem.from_uri(uri)
    with fs.open_input_stream(path) as stream:
        return stream.read()


def uri_files(uri: str) -> list[str]:
    """Every file under a URI, relative to it."""
    import pyarrow.fs

    fs, path = pyarrow.fs.FileSystem.from_uri(uri)
    infos = fs.get_file_info(pyarrow.fs.FileSelector(path, recursive=True))
    return [info.path.removeprefix(path + "/") for info in infos if info.type == pyarrow.fs.FileType.File]


def event_data(trial_dir: Path):
    """A trial's TensorBoard events (an EventAccumulator) and its HParams session's values."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    accumulator = EventAccumulator(str(trial_dir))
    accumulator.Reload()
    hparams = {}
    for content in accumulator.PluginTagToContent("hparams").values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            for key, value in data.session_start_info.hparams.items():
                hparams[key] = value.string_value or value.number_value
    return accumulator, hparams


# resnet_mnist ranked by a metric of its own that is val_acc, but that a trial's process (a Ray actor: a Train worker,
# or the trial process of a one-worker trial) computes a second time only once the file `hold` beside it is gone: a
# run in fresh processes is held before its second epoch's report (a process kept for another trial would be held
# at that trial's first: remove `hold` before one can be). The driver's calls (preflight's, the test split's) never
# wait. A kill or a broken folder then lands between a run's first reported epoch and its next, however far the
# driver's lines lag behind (the next epoch was once reported first).
GATED_SPACE = """
import dataclasses

from spaces.resnet_mnist import SPACE as RESNET_MNIST

SPACE = dataclasses.replace(RESNET_MNIST, name="gated_mnist", metric="gate.py:gated_acc")
"""
GATE = """
import time
from pathlib import Path

import ray

HOLD = Path(__file__).with_name("hold")
epochs = 0


def gated_acc(logits, labels):
    global epochs
    epochs += 1
    in_a_trial = ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
    while epochs > 1 and in_a_trial and HOLD.exists():
        time.sleep(0.05)
    return float((logits.argmax(1) == labels).float().mean())
"""


def gated_space(tmp_path) -> tuple[str, Path]:
    """`space=` of GATED_SPACE, written under tmp_path, and its `hold` file (there)."""
    space = tmp_path / "space" / "gated_mnist.py"
    space.parent.mkdir()
    space.write_text(GATED_SPACE)
    (space.parent / "gate.py").write_text(GATE)
    (space.parent / "hold").touch()
    return f"space={space}", space.parent / "hold"
