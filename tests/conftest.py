from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MNIST_MINI = (REPO / ".." / "shared" / "datasets" / "mnist-mini").resolve()


@pytest.fixture
def mnist_root() -> Path:
    if not (MNIST_MINI / "MNIST" / "raw" / "train-images-idx3-ubyte").is_file():
        pytest.skip(f"{MNIST_MINI} is missing (see ../shared/README.md)")
    return MNIST_MINI
