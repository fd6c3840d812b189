"""A real search on a real local Ray instance, through the CLI, as a user runs it."""

import json
import re

import pytest
import torch

from search.running.driver_words import next_commands_words
from tests.conftest import MNIST_MINI
from tests.e2e_helpers import VAL_LIMIT, event_data, ray_processes_of, session_dir_of
from trainables.data import MNIST
from trainables.foundation.space import load_space
from trainables.foundation.warm import TRIAL_MODULES
from trainables.models import model_for
from trainables.training import Split, evaluate, load_model_weights, shard_indices

pytestmark = pytest.mark.e2e


def test_summary_has_every_trial(search):
    summary = search["summary"]
    assert summary["space"] == "resnet_mnist" and summary["metric"] == "val_acc" and summary["mode"] == "max"
    assert len(summary["trials"]) == 6
    for trial in summary["trials"]:
        assert trial["status"] in ("completed", "stopped_early"), trial
        assert {"trial_id", "config", "epochs_run", "val_acc"} <= set(trial)
        assert set(trial["config"]) >= {"lr", "momentum", "weight_decay", "batch_size"}
    finished = [t["status"] == "completed" for t in summary["trials"]]
    assert finished == sorted(finished, reverse=True)  # OneCycle anneals: trials that finished it come first
    for status in ("completed", "stopped_early"):
        values = [t["val_acc"] for t in summary["trials"] if t["status"] == status]
        assert values == sorted(values, reverse=True)


def test_the_study_holds_the_values_that_trained_as_plain_optuna_reads_them(search):
    """optuna-dashboard and `optuna.load_study` show batch_size 128, never a position: every trial's params in the
    study equal its configuration in summary.json, and the study's value for it is summary.json's."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(search["experiment"] / "study.log")))
    study = {t.user_attrs["trial_id"]: t for t in optuna.load_study(study_name="search", storage=storage).trials}
    for trial in search["summary"]["trials"]:
        frozen = study[trial["trial_id"]]
        assert "batch_size" in frozen.params, frozen.params
        assert frozen.params == {name: trial["config"][name] for name in frozen.params}, (frozen.params, trial)
        assert frozen.value == pytest.approx(trial["val_acc"]), (frozen.value, trial)


def test_every_epoch_reports_the_required_metrics(search):
    for trial in search["summary"]["trials"]:
        lines = (search["experiment"] / f"trial_{trial['trial_id']}" / "result.json").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["epoch"] for r in rows] == list(range(1, trial["epochs_run"] + 1))
        for row in rows:
            for key in ("epoch", "train_loss", "val_loss", "val_acc", "lr", "images_per_s", "epoch_s"):
                assert isinstance(row[key], (int, float)), (key, row)
            assert row["val_samples"] == VAL_LIMIT and row["train_samples"] == 256


def test_a_trial_reports_how_warm_it_started_and_a_slots_later_trials_start_warm(search):
    """The shared search runs one-worker trials 2 at a time in reused trial processes: a process's first trial found
    torch not yet imported (nothing preloaded) and reports when Ray started its process; every later trial in that
    process found all of its modules imported (Tune's reuse_actors). A first trial imports them in one of its node's
    import turns (trainables.foundation.import_turns), a later one takes none."""
    firsts = []
    for trial in search["summary"]["trials"]:
        rows = (search["experiment"] / f"trial_{trial['trial_id']}" / "result.json").read_text().splitlines()
        firsts.append(json.loads(rows[0]))
    by_place = {row["trial_of_process"] for row in firsts}
    assert 1 in by_place and max(by_place) >= 2, by_place  # 6 trials, 2 at a time: some process ran several
    for row in firsts:
        if row["trial_of_process"] == 1:
            assert row["torch_found"] == 0 and row["warm_imports"] < len(TRIAL_MODULES), row
            assert row["process_s"] > 0 and row["import_turn_held"] == 1, row  # its imports in one of the node's turns
        else:
            assert row["warm_imports"] == len(TRIAL_MODULES) and row["torch_found"] == 1, row
            assert "process_s" not in row and row["import_turn_held"] == 0 == row["import_turn_s"], row  # warm


def test_rung_cycles_anneal_the_learning_rate_at_every_rung(search):
    """rung_cycles=true with grace=1, epochs=4: ASHA (the default's promotion variant, one objective) judges at epochs
    1 and 3, and the schedule ends a cycle there."""
    assert "ASHA (promotion variant) from epoch 1 of 4 (lr cycles end at epoch 1, 3)," in search["output"]
    for trial in search["summary"]["trials"]:
        lines = (search["experiment"] / f"trial_{trial['trial_id']}" / "result.json").read_text().splitlines()
        lr_after = {row["epoch"]: row["lr"] / trial["config"]["lr"] for row in map(json.loads, lines)}
        # after epochs 1 and 3 a new OneCycle has begun (it starts at lr / 25); after epoch 2 it is under way
        assert lr_after[1] == pytest.approx(1 / 25) and lr_after.get(3, 1 / 25) == pytest.approx(1 / 25), lr_after
        assert lr_after.get(2, 1) > 1.01 / 25, lr_after


def test_asha_stopped_a_trial_early(search):
    stopped = [t for t in search["summary"]["trials"] if t["status"] == "stopped_early"]
    assert stopped and all(t["epochs_run"] < 4 for t in stopped)


def test_best_is_the_final_epoch_of_the_best_trial_that_finished_its_schedule(search):
    summary, experiment = search["summary"], search["experiment"]
    best = summary["best"]
    assert best["trial_id"] == summary["trials"][0]["trial_id"]
    assert best["config"]["lr_schedule"] == "onecycle"  # it anneals: a trial stands by its final epoch
    rows = [
        json.loads(line) for line in (experiment / f"trial_{best['trial_id']}" / "result.json").read_text().splitlines()
    ]
    assert best["epoch"] == rows[-1]["epoch"] == 4 and best["metrics"]["val_acc"] == rows[-1]["val_acc"]
    assert best["metrics"]["val_acc"] == max(t["val_acc"] for t in summary["trials"] if t["status"] == "completed")
    assert best["checkpoint"] == f"train_{best['trial_id']}/checkpoint_epoch_{best['epoch']:04d}"  # relative
    assert (experiment / best["checkpoint"]).is_dir()
    assert f"best checkpoint: {experiment / best['checkpoint']}" in search["output"]
    assert next_commands_words(str(experiment)) in search["output"]  # the last lines: what to run on it next


def test_best_checkpoint_reproduces_reported_val_acc(search):
    best = search["summary"]["best"]
    space = load_space("resnet_mnist")
    model = model_for(space, best["config"], MNIST.info(MNIST_MINI, {}))
    load_model_weights(search["experiment"] / best["checkpoint"], model)  # torch.load(weights_only=True)
    run = search["summary"]["run"]
    images, labels = MNIST.load_split(MNIST_MINI, "val", run["data"]["val_fraction"], run["seed"], limit=VAL_LIMIT)
    split = Split.from_arrays(images, labels, MNIST.mean, MNIST.std, torch.device("cpu"))
    torch.set_num_threads(1)
    cpu = torch.device("cpu")
    workers = search["summary"]["run"]["workers"]  # the shape chosen for this machine
    shards = [
        evaluate(model, split.batches(shard_indices(len(split), rank, workers, None), 512), cpu)
        for rank in range(workers)
    ]
    accuracy = sum(s["correct"] for s in shards).item() / len(split)
    assert accuracy == pytest.approx(best["metrics"]["val_acc"], abs=1.5 / len(split))


def test_the_best_checkpoint_is_tested_once_on_the_test_files_the_search_never_saw(search):
    best = search["summary"]["best"]
    model = model_for(load_space("resnet_mnist"), best["config"], MNIST.info(MNIST_MINI, {}))
    load_model_weights(search["experiment"] / best["checkpoint"], model)
    images, labels = MNIST.load(MNIST_MINI, train=False)  # t10k: 2,000 digits
    split = Split.from_arrays(images, labels, MNIST.mean, MNIST.std, torch.device("cpu"))
    stats = evaluate(model, split.batches(torch.arange(len(split)), 512), torch.device("cpu"))
    assert best["test_samples"] == 2000
    assert best["test_acc"] == pytest.approx(stats["correct"].item() / 2000, abs=1.5 / 2000)
    assert f"test_acc={best['test_acc']:.4f} (2000 test images the search never saw)" in search["output"]
    assert best["metrics"]["val_samples"] == VAL_LIMIT  # validation: held out of the training files, capped


def test_cli_shut_its_ray_instance_down(search):
    session = session_dir_of(search["experiment"])
    assert ray_processes_of(session) == []


def test_tensorboard_events_once_per_trial_with_scalars_and_hparams(search):
    experiment, summary = search["experiment"], search["summary"]
    for trial in summary["trials"]:
        trial_dir = experiment / f"trial_{trial['trial_id']}"
        rows = [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines()]
        runs = len({row["resumed_from"] for row in rows})  # a trial ASHA's promotion variant resumed ran again
        files = list(trial_dir.glob("events.out.tfevents.*"))
        assert len(files) == runs, f"one event file per run of the trial, not per worker: {files}"
        accumulator, hparams = event_data(trial_dir)
        for key in ("train_loss", "val_loss", "val_acc", "lr", "images_per_s", "epoch_s"):
            events = accumulator.Scalars(key)
            assert [e.step for e in events] == [r["epoch"] for r in rows]
            assert [e.value for e in events] == pytest.approx([r[key] for r in rows], rel=1e-6)
        assert accumulator.Scalars("hparams/best_val_acc")[-1].value == pytest.approx(trial["val_acc"], rel=1e-6)
        assert accumulator.Scalars("hparams/epochs_run")[-1].value == trial["epochs_run"]
        assert hparams["status"] == trial["status"]
        assert hparams["stopped_early"] == (trial["status"] == "stopped_early")
        assert hparams["lr"] == pytest.approx(trial["config"]["lr"]) and hparams["optimizer"] == "sgd"


def test_tensorboard_server_serves_the_scalars_on_loopback(search, tmp_path):
    import urllib.parse
    import urllib.request

    from search.results.tensorboard import free_port
    from tests.e2e_helpers import descendants, kill_pids, start_search, wait_for_line

    port = free_port()
    log = tmp_path / "tb.log"
    process = start_search(log, str(search["experiment"]), f"port={port}", command="tensorboard")
    try:
        wait_for_line(log, rf"at http://127\.0\.0\.1:{port}/", process, timeout=120)
        best = search["summary"]["best"]
        query = urllib.parse.urlencode({"run": f"trial_{best['trial_id']}", "tag": "val_acc"})
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?{query}", timeout=30
        ) as reply:
            points = json.loads(reply.read())
        assert max(value for _, _, value in points) == pytest.approx(best["metrics"]["val_acc"], rel=1e-6)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs", timeout=30) as reply:
            runs = json.loads(reply.read())
        assert {f"trial_{t['trial_id']}" for t in search["summary"]["trials"]} <= set(runs)
        server_pids = descendants(process.pid)
        process.send_signal(__import__("signal").SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            kill_pids([*descendants(process.pid), process.pid])
    kill_pids(server_pids)


def test_tensorboard_refuses_a_taken_port_and_an_empty_folder(search, tmp_path):
    import socket

    from tests.e2e_helpers import run_cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("tensorboard", str(search["experiment"]), f"port={port}")
    assert result.returncode == 2 and f"port={port}: already in use" in result.stderr
    empty = run_cli("tensorboard", str(tmp_path))
    assert empty.returncode == 2 and "holds no TensorBoard event files" in empty.stderr


def test_report_table_savings_and_plots(search):
    from PIL import Image

    from tests.e2e_helpers import run_cli

    experiment, summary = search["experiment"], search["summary"]
    result = run_cli("report", str(experiment))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    table = lines[1 : 1 + len(summary["trials"])]
    for line, trial in zip(table, summary["trials"]):
        trial_id, status, epochs, value = line.split()[:4]
        assert (trial_id, status, int(epochs)) == (trial["trial_id"], trial["status"], trial["epochs_run"])
        assert float(value) == pytest.approx(trial["val_acc"], abs=5e-5)
    run = sum(t["epochs_run"] for t in summary["trials"])
    assert f"early stopping: {run} epochs run of {4 * len(summary['trials'])}" in result.stdout
    for name in ("optimization_history.png", "learning_curves.png", "importance.png"):
        path = experiment / "report" / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as image:
            image.verify()
    assert '<img src="learning_curves.png"' in (experiment / "report" / "index.html").read_text()


def test_the_study_holds_every_trial_with_every_epoch_its_end_and_the_summarys_score(search):
    """The study (what Optuna and optuna-dashboard open) is the search's record: every epoch of every trial as an
    intermediate value, the epoch at which ASHA stopped a trial included (Tune hands that one to the searcher only
    at the trial's end), and each trial scored as the summary and TensorBoard score it."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    experiment, summary = search["experiment"], search["summary"]
    storage = JournalStorage(JournalFileBackend(str(experiment / "study.log")))
    study = {t.user_attrs["trial_id"]: t for t in optuna.load_study(study_name="search", storage=storage).trials}
    assert set(study) == {t["trial_id"] for t in summary["trials"]}
    states = {"completed": "COMPLETE", "stopped_early": "PRUNED"}
    for trial in summary["trials"]:
        frozen = study[trial["trial_id"]]
        rows = [json.loads(line) for line in (experiment / f"trial_{trial['trial_id']}" / "result.json").open()]
        assert frozen.intermediate_values == {row["epoch"]: row["val_acc"] for row in rows}
        assert frozen.state.name == states[trial["status"]]
        assert frozen.user_attrs["score"] == trial["val_acc"]
        assert frozen.value == trial["val_acc"]  # a stopped trial's too: its standing epoch's, not its last's
        assert frozen.params["lr"] == trial["config"]["lr"]


def test_the_terminal_clock_counts_from_the_commands_start(search):
    """The first lines come as Ray starts, on the command's clock; the live view's lines go on counting from there
    (not from 0 when Tune starts)."""
    clocks = re.findall(r"^\[ ?(\d+)m(\d\d)s\] (.*)$", search["output"], re.M)
    assert [words for _, _, words in clocks[:2]] == [
        "search: starting a local Ray instance (about 20 s)",
        "search: Ray is up; the trials start",
    ], clocks[:3]
    seconds = [int(minutes) * 60 + int(secs) for minutes, secs, _ in clocks]
    assert seconds == sorted(seconds) and seconds[1] > seconds[0], seconds
