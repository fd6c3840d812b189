import numpy as np
import pytest
import torch

from trainables.data import MNIST
from trainables.idx_files import read_idx
from trainables.training import Split, evaluate, shard_indices


def test_mnist_mini_decodes(mnist_root):
    images, labels = MNIST.load(mnist_root, train=True)
    assert images.shape == (6000, 1, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (6000,) and set(np.unique(labels)) == set(range(10))
    val_images, _ = MNIST.load(mnist_root, train=False, limit=100)
    assert val_images.shape == (100, 1, 28, 28)


def test_corrupt_idx_header_names_the_file(tmp_path):
    bad = tmp_path / "bad-idx"
    bad.write_bytes(b"\x01\x02\x03\x04" + b"\x00" * 20)
    with pytest.raises(ValueError, match="bad-idx: not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short-idx"
    short.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05\x01")
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(short)


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_training_shards_are_disjoint_and_equal(world_size):
    shards = [shard_indices(103, rank, world_size, seed=7) for rank in range(world_size)]
    assert len({len(s) for s in shards}) == 1
    joined = torch.cat(shards)
    assert len(joined) == len(set(joined.tolist()))


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_evaluation_shards_cover_every_sample_once(world_size):
    shards = [shard_indices(103, rank, world_size, seed=None) for rank in range(world_size)]
    assert sorted(torch.cat(shards).tolist()) == list(range(103))


def test_sharded_evaluation_sums_to_the_whole():
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 255, (50, 1, 8, 8), dtype=torch.uint8, generator=generator).numpy()
    labels = torch.randint(0, 3, (50,), generator=generator).numpy()
    split = Split.from_arrays(images, labels, (0.5,), (0.5,), torch.device("cpu"))
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3))
    cpu = torch.device("cpu")
    whole = evaluate(model, split.batches(torch.arange(50), 512), cpu)
    parts = [evaluate(model, split.batches(shard_indices(50, r, 2, None), 7), cpu) for r in range(2)]
    assert sum(p["correct"] for p in parts) == whole["correct"]
    assert torch.isclose(sum(p["loss_sum"] for p in parts), whole["loss_sum"])


def test_validation_is_held_out_of_the_training_files_stratified_and_seeded():
    from trainables.idx_files import holdout

    labels = np.repeat(np.arange(10), 100)
    train, val = holdout(labels, 0.1, seed=3)
    assert len(val) == 100 and np.bincount(labels[val]).tolist() == [10] * 10  # stratified
    assert set(train.tolist()).isdisjoint(val.tolist()) and len(train) + len(val) == 1000
    again_train, again_val = holdout(labels, 0.1, seed=3)
    assert (again_val == val).all() and not (holdout(labels, 0.1, seed=4)[1] == val).all()


def test_the_search_splits_of_mnist_mini(mnist_root):
    train_images, _ = MNIST.load_split(mnist_root, "train", 0.1, seed=0)
    val_images, val_labels = MNIST.load_split(mnist_root, "val", 0.1, seed=0)
    test_images, _ = MNIST.load_split(mnist_root, "test", 0.1, seed=0)
    assert (len(train_images), len(val_images), len(test_images)) == (5400, 600, 2000)
    assert set(np.unique(val_labels)) == set(range(10))
    whole, _ = MNIST.load(mnist_root, train=True)
    assert len({bytes(i) for i in whole}) == len({bytes(i) for i in train_images} | {bytes(i) for i in val_images})
