"""A real search on a real local Ray instance, through the CLI, as a user runs it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import VAL_LIMIT, main_search, ray_processes_of, run_search, session_dir_of
from trainables.data import MNIST
from trainables.foundation.space import load_space
from trainables.models import model_for
from trainables.training import Split, evaluate, load_model_weights, shard_indices

pytestmark = pytest.mark.e2e

@pytest.fixture(scope="module")
def search(tmp_path_factory):
    return main_search(tmp_path_factory)


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


def test_every_epoch_reports_the_required_metrics(search):
    for trial in search["summary"]["trials"]:
        lines = (search["experiment"] / f"trial_{trial['trial_id']}" / "result.json").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["epoch"] for r in rows] == list(range(1, trial["epochs_run"] + 1))
        for row in rows:
            for key in ("epoch", "train_loss", "val_loss", "val_acc", "lr", "images_per_s", "epoch_s"):
                assert isinstance(row[key], (int, float)), (key, row)
            assert row["val_samples"] == VAL_LIMIT and row["train_samples"] == 256


def test_asha_stopped_a_trial_early(search):
    stopped = [t for t in search["summary"]["trials"] if t["status"] == "stopped_early"]
    assert stopped and all(t["epochs_run"] < 4 for t in stopped)


def test_best_is_the_final_epoch_of_the_best_trial_that_finished_its_schedule(search):
    summary, experiment = search["summary"], search["experiment"]
    best = summary["best"]
    assert best["trial_id"] == summary["trials"][0]["trial_id"]
    assert best["config"]["lr_schedule"] == "onecycle"  # it anneals: a trial stands by its final epoch
    rows = [json.loads(line) for line in (experiment / f"trial_{best['trial_id']}" / "result.json").read_text().splitlines()]
    assert best["epoch"] == rows[-1]["epoch"] == 4 and best["metrics"]["val_acc"] == rows[-1]["val_acc"]
    assert best["metrics"]["val_acc"] == max(t["val_acc"] for t in summary["trials"] if t["status"] == "completed")
    assert Path(best["checkpoint"]).is_dir()
    assert Path(best["checkpoint"]).name == f"checkpoint_epoch_{best['epoch']:04d}"
    assert "best checkpoint: " + best["checkpoint"] in search["output"]


def test_best_checkpoint_reproduces_reported_val_acc(search):
    best = search["summary"]["best"]
    space = load_space("resnet_mnist")
    model = model_for(space, best["config"], MNIST.info(MNIST_MINI, {}))
    load_model_weights(best["checkpoint"], model)  # torch.load(weights_only=True)
    run = search["summary"]["run"]
    images, labels = MNIST.load_split(MNIST_MINI, "val", run["data"]["val_fraction"], run["seed"], limit=VAL_LIMIT)
    split = Split.from_arrays(images, labels, MNIST.mean, MNIST.std, torch.device("cpu"))
    torch.set_num_threads(1)
    cpu = torch.device("cpu")
    workers = search["summary"]["run"]["workers"]  # the shape chosen for this machine
    shards = [evaluate(model, split.batches(shard_indices(len(split), rank, workers, None), 512), cpu)
              for rank in range(workers)]  # fmt: skip
    accuracy = sum(s["correct"] for s in shards).item() / len(split)
    assert accuracy == pytest.approx(best["metrics"]["val_acc"], abs=1.5 / len(split))


def test_the_best_checkpoint_is_tested_once_on_the_test_files_the_search_never_saw(search):
    best = search["summary"]["best"]
    model = model_for(load_space("resnet_mnist"), best["config"], MNIST.info(MNIST_MINI, {}))
    load_model_weights(best["checkpoint"], model)
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


def test_diverging_trials_fail_with_reason_and_the_search_goes_on(tmp_path, mnist_root):
    result = run_search(
        tmp_path / "cli.log", "space=resnet_mnist", f"data.root={mnist_root}", f"storage={tmp_path}", "name=nan",
        "trials=2", "epochs=2", "workers=2", "data.limit=128", "data.val_limit=100", "lr=10000",
    )
    output = (tmp_path / "cli.log").read_text()
    assert result.returncode == 1, output[-3000:]
    assert "error: no trial produced a checkpoint: every trial failed" in output
    summary = json.loads((tmp_path / "nan" / "summary.json").read_text())
    assert summary["best"] is None
    assert [t["status"] for t in summary["trials"]] == ["failed", "failed"]
    assert all(t["error"].startswith("NonFiniteLoss: training diverged: the loss became non-finite at epoch")
               and "lr=1e+04" in t["error"] for t in summary["trials"])  # named, with the hyperparameters
    assert "trial failed; the first, trial" in output and "NonFiniteLoss: training diverged" in output.splitlines()[-1]
    assert all(t["config"]["lr"] == 10000 for t in summary["trials"])
    for trial in summary["trials"]:  # failed trials are in TensorBoard's HParams too
        _, hparams = event_data(tmp_path / "nan" / f"trial_{trial['trial_id']}")
        assert hparams["status"] == "failed"


@pytest.fixture(scope="module")
def exported(search):
    from tests.e2e_helpers import run_cli

    result = run_cli("export", str(search["experiment"]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified: val_acc=" in result.stdout
    return search["experiment"] / "export"


def test_export_folder_is_complete(exported, search):
    assert sorted(p.name for p in exported.iterdir()) == ["model.json", "model.pt2", "model.safetensors"]
    meta = json.loads((exported / "model.json").read_text())
    best = search["summary"]["best"]
    assert meta["trial_id"] == best["trial_id"] and meta["epoch"] == best["epoch"]
    assert meta["metric"] == {"name": "val_acc", "mode": "max", "value": best["metrics"]["val_acc"]}
    assert meta["architecture"] == "resnet18"
    assert meta["architecture_args"] == {"in_channels": 1, "num_classes": 10, "stem": best["config"]["stem"]}
    assert meta["input"]["channels"] == 1 and meta["input"]["height"] == 28
    assert meta["normalization"] == {"mean": [0.1307], "std": [0.3081]}
    assert meta["class_names"] == [str(d) for d in range(10)]
    assert meta["hyperparameters"] == best["config"]
    assert meta["versions"]["torch"] == torch.__version__
    assert meta["verified"]["val_acc"] == pytest.approx(best["metrics"]["val_acc"], abs=1.5 / VAL_LIMIT)
    assert not list(exported.parent.glob(".export*")), "no staging folder may be left behind"


def test_program_loads_in_plain_pytorch_and_matches_the_checkpoint(exported, search, tmp_path):
    """model.pt2 in a fresh process that never imports this project; compared with the checkpoint's predictions."""
    images, labels = MNIST.load(MNIST_MINI, train=False, limit=VAL_LIMIT)
    np_file = tmp_path / "val.pt"
    torch.save(torch.from_numpy(images.copy()), np_file)
    code = (
        "import sys, torch\n"
        f"program = torch.export.load({str(exported / 'model.pt2')!r}).module()\n"
        f"images = torch.load({str(np_file)!r}, weights_only=True).float() / 255\n"
        "with torch.no_grad(): predictions = program(images).argmax(1)\n"
        f"torch.save(predictions, {str(tmp_path / 'pred.pt')!r})\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('search', 'trainables', 'spaces')]\n"
    )
    subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, check=True, timeout=300)
    from_program = torch.load(tmp_path / "pred.pt", weights_only=True)

    best = search["summary"]["best"]
    model = model_for(load_space("resnet_mnist"), best["config"], MNIST.info(MNIST_MINI, {})).eval()
    load_model_weights(best["checkpoint"], model)
    split = Split.from_arrays(images, labels, MNIST.mean, MNIST.std, torch.device("cpu"))
    with torch.no_grad():
        from_checkpoint = model(split.batch(torch.arange(len(split)))[0]).argmax(1)
    assert (from_program == from_checkpoint).float().mean().item() >= 1 - 1.5 / VAL_LIMIT


def test_predict_images_and_idx_with_bad_inputs(exported, tmp_path):
    from PIL import Image

    from tests.e2e_helpers import run_cli

    images, labels = MNIST.load(MNIST_MINI, train=False, limit=3)
    pngs = []
    for i in range(3):
        path = tmp_path / f"digit{i}.png"
        Image.fromarray(images[i, 0]).resize((56, 56)).save(path)  # another size: converted
        pngs.append(str(path))
    rgb = tmp_path / "rgb.jpg"
    Image.fromarray(images[0, 0]).convert("RGB").save(rgb)
    not_image = tmp_path / "notes.png"
    not_image.write_text("hello")
    corrupt_idx = tmp_path / "corrupt-idx"
    corrupt_idx.write_bytes(b"\x00\x00\x08\x03\x00\x00\x00\x09" + b"\x00" * 10)
    idx = MNIST_MINI / "MNIST" / "raw" / "t10k-images-idx3-ubyte"
    args = [str(exported), *pngs, str(rgb), str(not_image), str(tmp_path / "missing.png"), str(corrupt_idx), str(idx)]

    result = run_cli("predict", *args, "--json")
    assert result.returncode == 1, result.stderr  # some inputs failed, the rest were predicted
    predictions = json.loads(result.stdout)
    by_input = {p["input"]: p for p in predictions}
    assert len(predictions) == 3 + 1 + 3 + 2000
    for path in pngs + [str(rgb)]:
        assert 0 <= by_input[path]["class"] <= 9 and 0 < by_input[path]["probability"] <= 1
    assert "not a readable image" in by_input[str(not_image)]["error"]
    assert "no such file" in by_input[str(tmp_path / "missing.png")]["error"]
    assert "corrupt-idx" in by_input[str(corrupt_idx)]["error"]
    idx_predictions = [p for p in predictions if p["input"].startswith(f"{idx}[")]
    assert len(idx_predictions) == 2000
    accuracy = sum(p["class"] == int(label) for p, label in zip(idx_predictions, MNIST.load(MNIST_MINI, False)[1]))
    assert accuracy / 2000 > 0.1

    text = run_cli("predict", str(exported), pngs[0])
    assert text.returncode == 0 and text.stdout.startswith(f"{pngs[0]}: ") and "p=" in text.stdout


def test_load_model_api_restores_an_eval_module(exported):
    import search

    model = search.load_model(exported)
    assert not model.training
    images, _ = MNIST.load(MNIST_MINI, train=False, limit=4)
    with torch.no_grad():
        logits = model(torch.from_numpy(images.copy()).float() / 255)
    assert logits.shape == (4, 10) and model.class_names[0] == "0"


def test_export_refuses_what_is_not_an_experiment(tmp_path):
    from tests.e2e_helpers import run_cli

    result = run_cli("export", str(tmp_path))
    assert result.returncode == 2 and "not a finished experiment" in result.stderr


def test_export_that_fails_verification_exits_1_and_leaves_no_folder(search, tmp_path):
    """A summary whose reported value disagrees with the checkpoint: export must refuse, writing nothing."""
    from tests.e2e_helpers import run_cli

    summary = json.loads(json.dumps(search["summary"]))
    best_id = summary["best"]["trial_id"]
    for trial in summary["trials"]:
        if trial["trial_id"] == best_id:
            trial["val_acc"] = 0.999 if trial["val_acc"] < 0.9 else 0.001
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    result = run_cli("export", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "export verification failed" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


# ---------------------------------------------------------------- TensorBoard and report


def event_data(trial_dir: Path):
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


def test_tensorboard_events_once_per_trial_with_scalars_and_hparams(search):
    experiment, summary = search["experiment"], search["summary"]
    for trial in summary["trials"]:
        trial_dir = experiment / f"trial_{trial['trial_id']}"
        assert len(list(trial_dir.glob("events.out.tfevents.*"))) == 1, "one event file per trial, not per worker"
        accumulator, hparams = event_data(trial_dir)
        rows = [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines()]
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
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?{query}", timeout=30) as reply:
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
    assert "<img src=\"learning_curves.png\"" in (experiment / "report" / "index.html").read_text()
