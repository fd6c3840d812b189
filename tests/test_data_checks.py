"""Bad data is refused before Ray starts, in one line naming the file, what is wrong and what was expected."""

import shutil
import time

import pytest

from tests.e2e_helpers import run_cli
from trainables.data import MNIST
from trainables.foundation.errors import UsageError


@pytest.fixture
def mnist_copy(tmp_path, mnist_root):
    shutil.copytree(mnist_root / "MNIST", tmp_path / "MNIST")
    return tmp_path


def raw(root, name):
    return root / "MNIST" / "raw" / name


def damaged(path, change) -> None:
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(change(data)))


@pytest.mark.parametrize(
    "name, change, named",
    [
        (
            "train-images-idx3-ubyte",
            lambda d: d[: len(d) // 2],
            "train-images-idx3-ubyte: 2352008 bytes, but its header declares 6000 items (4704016 bytes): the file is "
            "truncated or corrupt",
        ),
        (
            "t10k-images-idx3-ubyte",
            lambda d: b"\x1f\x8b" + d[2:],
            "t10k-images-idx3-ubyte: not an unsigned-byte IDX file of N x 28 x 28 (header 1f8b0803",
        ),
        (
            "t10k-images-idx3-ubyte",
            lambda d: d[:11] + b"\x20" + d[12:],
            "t10k-images-idx3-ubyte: items of 32 x 28; expected an unsigned-byte IDX file of N x 28 x 28",
        ),
        ("train-labels-idx1-ubyte", lambda d: d[:-10], "train-labels-idx1-ubyte: 5998 bytes, but its header declares"),
        (
            "train-labels-idx1-ubyte",
            lambda d: d[:8] + b"\x0c" + d[9:],
            "train-labels-idx1-ubyte: a label is 12; expected labels 0..9 (mnist has 10 classes)",
        ),
    ],
)
def test_a_damaged_idx_file_is_named(mnist_copy, name, change, named):
    damaged(raw(mnist_copy, name), change)
    started = time.perf_counter()
    with pytest.raises(UsageError) as excinfo:
        MNIST.check(mnist_copy, {}, download=False, strict=False, seed=0)
    assert time.perf_counter() - started < 0.5  # headers and labels only
    assert str(excinfo.value).startswith(str(raw(mnist_copy, name))) and named in str(excinfo.value), excinfo.value


def test_labels_that_do_not_match_the_images_are_named(mnist_copy):
    labels = raw(mnist_copy, "t10k-labels-idx1-ubyte")
    damaged(labels, lambda d: d[:4] + (1999).to_bytes(4, "big") + d[8:-1])
    with pytest.raises(UsageError, match="1999 labels for the 2000 images of t10k-images-idx3-ubyte"):
        MNIST.check(mnist_copy, {}, download=False, strict=False, seed=0)


def test_the_cli_refuses_a_truncated_file_before_ray_starts(tmp_path, mnist_copy):
    damaged(raw(mnist_copy, "train-images-idx3-ubyte"), lambda d: d[:-784])
    result = run_cli("run", "space=resnet_mnist", f"data.root={mnist_copy}", f"storage={tmp_path / 'runs'}", "name=x")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {raw(mnist_copy, 'train-images-idx3-ubyte')}: 4703232 bytes, but its header declares 6000 items "
        "(4704016 bytes): the file is truncated or corrupt; download it again"
    ]
    assert not (tmp_path / "runs" / "x").exists() and "search:" not in result.stdout  # no search, no Ray


def test_an_unwritable_storage_is_refused_before_ray_starts(tmp_path, mnist_root):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run_cli("run", "space=resnet_mnist", f"data.root={mnist_root}", f"storage={blocker / 'runs'}")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: storage={blocker / 'runs'}: cannot write there: Not a directory ({blocker}); "
        "give a folder you can write to, or a URI"
    ]
