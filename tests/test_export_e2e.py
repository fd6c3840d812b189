"""Export, predict and `load_model` on the shared end-to-end search's best checkpoint: the folder is whole, the
program restores in plain PyTorch, and what cannot be exported or predicted is refused naming why."""

import json
import subprocess
import sys

import pytest
import torch

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import VAL_LIMIT
from trainables.data import MNIST
from trainables.foundation.space import load_space
from trainables.models import model_for
from trainables.training import Split, load_model_weights

pytestmark = pytest.mark.e2e
MODEL_NAME = "e2e-resnet"  # the export registered in the search's MLflow store


@pytest.fixture(scope="module")
def exported(search):
    from tests.e2e_helpers import run_cli

    result = run_cli("export", str(search["experiment"]), f"tracking.register={MODEL_NAME}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified: val_acc=" in result.stdout
    assert f"registered: MLflow model {MODEL_NAME} version 1 at " in result.stdout
    return search["experiment"] / "export"


def test_export_folder_is_complete(exported, search):
    assert sorted(p.name for p in exported.iterdir()) == ["model.json", "model.pt2", "model.safetensors"]
    assert len({path.stat().st_mode for path in exported.iterdir()}) == 1  # the weights too: not 0600
    meta = json.loads((exported / "model.json").read_text())
    best = search["summary"]["best"]
    assert meta["trial_id"] == best["trial_id"] and meta["epoch"] == best["epoch"]
    assert meta["metric"] == {"name": "val_acc", "mode": "max", "value": best["metrics"]["val_acc"]}
    assert meta["architecture"] == "resnet18"
    assert meta["architecture_args"] == {"in_channels": 1, "num_classes": 10, "stem": best["config"]["stem"]}
    assert meta["input"]["channels"] == 1 and meta["input"]["height"] == 28
    assert meta["normalization"] == {"mean": [0.1307], "std": [0.3081]}
    assert meta["class_names"] == [str(d) for d in range(10)]
    assert meta["training_images"]["background"] == "dark"  # MNIST: light digits on dark, for predict's hint
    assert meta["hyperparameters"] == best["config"]
    assert meta["versions"]["torch"] == torch.__version__
    assert meta["verified"]["val_acc"] == pytest.approx(best["metrics"]["val_acc"], abs=1.5 / VAL_LIMIT)
    assert not list(exported.parent.glob(".export*")), "no staging folder may be left behind"


def test_the_registered_model_loads_with_mlflow_and_pytorch_and_matches_the_checkpoint(exported, search, tmp_path):
    """The MLflow model version `export tracking.register=` made, fetched with MLflow and its model.pt2 loaded with
    torch, in a fresh process that never imports this project; compared with the checkpoint's predictions."""
    images, labels = MNIST.load(MNIST_MINI, train=False, limit=VAL_LIMIT)
    np_file = tmp_path / "val.pt"
    torch.save(torch.from_numpy(images.copy()), np_file)
    store = f"sqlite:///{search['experiment'] / 'mlflow' / 'mlflow.db'}"
    code = (
        "import os, sys, mlflow, torch\n"
        f"mlflow.set_tracking_uri({store!r})\n"
        f"folder = mlflow.artifacts.download_artifacts('models:/{MODEL_NAME}/1', dst_path={str(tmp_path / 'dl')!r})\n"
        "program = torch.export.load(os.path.join(folder, 'model.pt2')).module()\n"
        f"images = torch.load({str(np_file)!r}, weights_only=True).float() / 255\n"
        "with torch.no_grad(): predictions = program(images).argmax(1)\n"
        f"torch.save(predictions, {str(tmp_path / 'pred.pt')!r})\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('search', 'trainables', 'spaces')]\n"
    )
    subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, check=True, timeout=300)
    from_program = torch.load(tmp_path / "pred.pt", weights_only=True)

    best = search["summary"]["best"]
    model = model_for(load_space("resnet_mnist"), best["config"], MNIST.info(MNIST_MINI, {})).eval()
    load_model_weights(search["experiment"] / best["checkpoint"], model)
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
    inverted = tmp_path / "black_on_white.png"  # a digit drawn on paper: the other polarity than MNIST's
    Image.fromarray(255 - images[1, 0]).save(inverted)
    not_image = tmp_path / "notes.png"
    not_image.write_text("hello")
    corrupt_idx = tmp_path / "corrupt-idx"
    corrupt_idx.write_bytes(b"\x00\x00\x08\x03\x00\x00\x00\x09" + b"\x00" * 10)
    idx = MNIST_MINI / "MNIST" / "raw" / "t10k-images-idx3-ubyte"
    args = [
        str(exported),
        *pngs,
        str(rgb),
        str(inverted),
        str(not_image),
        str(tmp_path / "missing.png"),
        str(corrupt_idx),
        str(idx),
    ]

    result = run_cli("predict", *args, "--json")
    assert result.returncode == 1, result.stderr  # some inputs failed, the rest were predicted
    predictions = json.loads(result.stdout)
    by_input = {p["input"]: p for p in predictions}
    assert len(predictions) == 3 + 2 + 3 + 2000
    hints = [line for line in result.stderr.splitlines() if line.startswith("hint: ")]
    assert hints == [
        f"hint: {inverted}: this image is dark on light; the model was trained on light on dark images: invert it"
    ]
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


def test_a_second_export_to_the_same_folder_is_refused_and_leaves_the_first(exported, search):
    from tests.e2e_helpers import run_cli

    before = (exported / "model.json").read_bytes()
    written_at = (exported / "model.json").stat().st_mtime_ns
    result = run_cli("export", str(search["experiment"]))
    assert result.returncode == 2 and result.stderr.strip() == (
        f"error: {exported.resolve()}: an export is already there; export to another folder with out=PATH, or "
        "replace it with --replace"
    )
    assert (exported / "model.json").read_bytes() == before
    replaced = run_cli("export", str(search["experiment"]), "--replace")  # asked: the export is made anew
    assert replaced.returncode == 0, replaced.stdout[-2000:] + replaced.stderr[-2000:]
    assert (exported / "model.json").stat().st_mtime_ns != written_at  # written anew, the same model again
    assert json.loads((exported / "model.json").read_text())["input"] == json.loads(before)["input"]
    assert (exported / "model.pt2").is_file() and (exported / "model.safetensors").is_file()


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
    run = f"train_{best_id}"  # the summary records checkpoints relative to the experiment: its folder beside it
    (tmp_path / run).symlink_to(search["experiment"] / run)
    result = run_cli("export", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "export verification failed" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", run]


# ---------------------------------------------------------------- TensorBoard and report
