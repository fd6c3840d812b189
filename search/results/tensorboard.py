"""TensorBoard: per-trial event files written by the search driver (`trial_<id>/events.out.tfevents.*`, one run
per trial, with an HParams summary comparing every trial), and a server for one experiment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from trainables.foundation.errors import UsageError

SCALARS = ("train_loss", "val_loss", "val_acc", "lr", "images_per_s", "epoch_s")
COST_SCALARS = ("params", "macs", "latency_ms", "latency_iqr_ms")  # a multi-objective search's, when reported
EVENT_FILES = "events.out.tfevents.*"
END_TAGS = ("_hparams_/", "hparams/")  # a trial's end: the HParams summary (torch's tags) and its outcome's scalars


class TrialEventWriter:
    """One trial's event file: scalars per epoch, then the HParams summary when the trial ends."""

    def __init__(self, folder: Path, figures: tuple[str, ...] = ()):
        """`figures`: scalars beside SCALARS, the search's metric when it is another (val_f1, a space's own)."""
        from torch.utils.tensorboard import SummaryWriter

        earlier = set(Path(folder).glob(EVENT_FILES))  # a promoted trial's runs before this one, each its own file
        self.writer = SummaryWriter(log_dir=str(folder))  # its file made here: the one not there before
        self.file = next(iter(set(Path(folder).glob(EVENT_FILES)) - earlier), None)  # None: not made yet
        self.scalars = tuple(dict.fromkeys(SCALARS + COST_SCALARS + tuple(figures)))

    def epoch(self, result: dict) -> None:
        step = int(result["epoch"])
        for key in self.scalars:
            value = result.get(key)
            if isinstance(value, (int, float)):
                self.writer.add_scalar(key, value, global_step=step)
        self.writer.flush()

    def end(self, config: dict, outcome: dict) -> None:
        """`outcome`: best metric, epochs run, status and stopped_early flag of the finished trial, and in a search of
        several objectives `objectives`, the value of each (search.running.study.record's), each an HParams metric."""
        from torch.utils.tensorboard.summary import hparams

        numbers = {**outcome, **(outcome.get("objectives") or {})}
        metric_dict = {
            f"hparams/{k}": v for k, v in numbers.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        # HParams take numbers, strings and booleans; anything else is shown as text
        hparam_dict = {k: v if isinstance(v, (bool, int, float, str)) else str(v) for k, v in config.items()}
        hparam_dict.update(status=outcome["status"], stopped_early=bool(outcome["stopped_early"]))
        for summary in hparams(hparam_dict, metric_dict):  # the experiment, the session's start and its end
            self.writer._get_file_writer().add_summary(summary)
        for key, value in metric_dict.items():
            self.writer.add_scalar(key, value)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()

    def keep_only_this_end(self) -> None:
        """TensorBoard takes a run's first HParams summary it reads, the files in name order: a trial that ends again
        (a paused one promoted, before or after a `resume`) keeps its last end only, each earlier file of it
        rewritten without its HParams summary and `hparams/` scalars (its epochs kept; the same name, so that an
        upload replaces it; os.replace: never half-written). Called once this writer is closed. A TensorBoard already
        running keeps the end it read first: restarted, it shows the last."""
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
        from tensorboard.summary.writer.record_writer import RecordWriter

        if self.file is None:  # which file holds this end is unknown: none is rewritten
            return
        for path in sorted(set(self.file.parent.glob(EVENT_FILES)) - {self.file}):
            events = list(LegacyEventFileLoader(str(path)).Load())  # as written, not migrated to tensors
            ended = [value for event in events for value in event.summary.value if value.tag.startswith(END_TAGS)]
            if not ended:
                continue
            partial = path.with_name(".rewrite.partial")  # no `tfevents` in its name: TensorBoard never reads it
            try:
                with open(partial, "wb") as stream:
                    records = RecordWriter(stream)
                    for event in filter(None, map(without_end, events)):
                        records.write(event.SerializeToString())
                os.replace(partial, path)
            finally:
                partial.unlink(missing_ok=True)


def without_end(event):
    """An earlier run's event without the end's values (None: a summary left with none); any other event (the file's
    version) as it is."""
    values = [value for value in event.summary.value if not value.tag.startswith(END_TAGS)]
    if event.HasField("summary") and len(values) < len(event.summary.value):
        if not values:
            return None
        del event.summary.value[:]
        event.summary.value.extend(values)
    return event


def written_epochs(folder: Path) -> set[int]:
    """The epochs whose scalars the trial's event files already hold (a resumed trial's are not written twice)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    events = (event for path in sorted(Path(folder).glob(EVENT_FILES)) for event in EventFileLoader(str(path)).Load())
    return {int(event.step) for event in events if any(value.tag == SCALARS[0] for value in event.summary.value)}


# Ray's default ports on a node (GCS, dashboard, Ray Client server, dashboard agent's HTTP server): the system hands out
# ports in a range holding 52365, and a viewer that took it would make `ray.init` refuse to start.
RAY_DEFAULT_PORTS = frozenset({6379, 8265, 10001, 52365})


def free_port(host: str = "127.0.0.1") -> int:
    """A port the system hands out on `host` (nothing listens on it now) that Ray gives none of its components."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
        if port not in RAY_DEFAULT_PORTS:
            return port


def viewer_port(port: int, host: str = "127.0.0.1") -> int:
    """The port a viewer serves on: `port`, or any free one for 0; refused in one line when it is taken."""
    if port == 0:
        return free_port(host)
    # A port a stopped server's connections keep in TIME-WAIT is free: the probe, like the servers (wsgiref,
    # TensorBoard's), binds with SO_REUSEADDR.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            raise UsageError(
                f"port={port}: already in use on {host}; choose another port= (or port=0 for any free one)"
            ) from None
    return port


def start_server(experiment: Path, port: int, host: str = "127.0.0.1") -> tuple[subprocess.Popen, str]:
    """Start TensorBoard for `experiment` on host:port and wait until it answers; returns (process, url)."""
    if not experiment.is_dir():
        raise UsageError(f"{experiment}: no such folder")
    if not any(experiment.glob(f"**/{EVENT_FILES}")):
        raise UsageError(f"{experiment}: holds no TensorBoard event files (is it an experiment folder of `run`?)")
    port = viewer_port(port, host)
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(experiment), "--host", host]
    command += ["--port", str(port), "--reload_interval", "5"]
    # TensorBoard's own messages go to a file: an undrained pipe would fill up and stall the server.
    log = tempfile.NamedTemporaryFile("w+", prefix="search-tensorboard-", suffix=".log", delete=False)
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://{host}:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = Path(log.name).read_text().strip()[-300:]
            raise UsageError(f"TensorBoard exited with code {server.returncode}: {output}")
        try:
            with urllib.request.urlopen(url + "data/environment", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.3)
    stop_server(server)
    raise UsageError(f"TensorBoard did not answer on {url} within 120s")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
