"""On a CUDA machine: the default command packs trials on the GPU, and every accelerator key trains a trial there (or
is refused before Ray, or fails its trial with the reason on the terminal). Skipped without CUDA, as in CI.

    source .gpu/prep.sh && python3 -m pytest -q -m gpu tests/test_gpu.py
(a GPU machine without Ray: see benchmarks/README.md)
"""

import json

import pytest
import torch

from tests.e2e_helpers import run_cli

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.e2e,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

SMALL = ["space=resnet_mnist", "data.limit=4096", "data.val_limit=500", "epochs=1", "grace=1"]


def test_the_default_shape_packs_trials_on_the_gpu_then_exports_and_predicts(tmp_path, mnist_root):
    result = run_cli("run", *SMALL, f"data.root={mnist_root}", f"storage={tmp_path}", "name=g", "trials=4")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    first = next(line for line in result.stdout.splitlines() if " at a time, " in line)
    assert "4 at a time, 1 worker x 0.25 GPU" in first and "gpus=0.25" in first, first
    exported = run_cli("export", str(tmp_path / "g"), f"out={tmp_path / 'model'}")
    assert exported.returncode == 0, exported.stderr[-2000:]
    predicted = run_cli(
        "predict", str(tmp_path / "model"), str(mnist_root / "MNIST/raw/t10k-images-idx3-ubyte"), "--json"
    )
    assert predicted.returncode == 0, predicted.stderr[-2000:]
    assert len(json.loads(predicted.stdout)) == 2000


ACCELERATOR_KEYS = {
    "bf16": ["precision=bf16"],
    "channels_last": ["channels_last=true"],
    "compile": ["compile=true"],
    "compile reduce-overhead": ["compile=true", "compile_mode=reduce-overhead"],
    "bf16 channels_last compile": ["precision=bf16", "channels_last=true", "compile=true"],
}


@pytest.mark.parametrize("label", list(ACCELERATOR_KEYS))
def test_every_accelerator_key_trains_a_trial_on_the_gpu(tmp_path, mnist_root, label):
    result = run_cli(
        "run",
        *SMALL,
        *ACCELERATOR_KEYS[label],
        "batch_size=128",
        f"data.root={mnist_root}",
        f"storage={tmp_path}",
        "name=a",
        "trials=1",
    )
    output = result.stdout + result.stderr
    if result.returncode == 2:  # refused before Ray: one line naming the keys
        assert len(result.stderr.strip().splitlines()) == 1 and "compile" in result.stderr, output
        return
    if "failed:" in result.stdout:  # its trial failed: the reason is on the terminal
        assert result.returncode == 1 and "trial " in result.stdout, output
        return
    assert result.returncode == 0, output[-3000:]
    rows = [json.loads(line) for line in next((tmp_path / "a").glob("trial_*/result.json")).read_text().splitlines()]
    assert rows[-1]["images_per_s"] > 0
    print(f"{label}: {rows[-1]['images_per_s']:.0f} img/s in the trial's first epoch")
