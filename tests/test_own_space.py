"""A space's own data and own loss or training step (trainables.own_data, own_step, own_refs): what a dataset function
returns is checked once, before Ray starts, and anything wrong is refused in one line naming the function; what
passes is fed as the built-in arrays are. No Ray: the CLI's `main` in this process, a dry run at most."""

import numpy as np
import pytest
import torch

from search.__main__ import main
from trainables.foundation.errors import UsageError
from trainables.own_data import OwnData, OwnDataset, checked
from trainables.own_refs import own_function
from trainables.training import train_one_epoch

SPACE = """
from optuna.distributions import FloatDistribution
from torch import nn

from spaces import Space


def net(in_channels, num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * 4 * 4, num_classes))


def broken(in_channels, num_classes):
    raise ValueError("no such layer")


def text(in_channels, num_classes):
    return "a net"


SPACE = Space(
    name="own",
    description="a space of its own",
    architecture=ARCHITECTURE,
    model_args=MODEL_ARGS,
    dataset="DATASET",
    loss="LOSS",
    train_step="STEP",
    hyperparameters={"lr": FloatDistribution(0.01, 0.1, log=True)},
    constants={"batch_size": 8},
)
"""

DATA = """
import numpy as np
import torch
import torch.nn.functional as F

from spaces import OwnData


def data(root, seed):
    images = np.random.default_rng(seed).integers(0, 256, (40, 1, 4, 4), dtype=np.uint8)
    labels = np.arange(40) % 3
    BREAK
    return OwnData(train=(images, labels), class_names=["a", "b", "c"])


def loss(logits, labels):
    LOSS


def step(model, images, labels):
    return F.cross_entropy(model(images), labels)
"""


def own_space(
    tmp_path,
    dataset="my_data.py:data",
    loss="",
    step="",
    brk="pass",
    loss_body="return logits.mean()",
    architecture='__file__ + ":net"',
    model_args="None",
):
    """A space file and, beside it, its data file (named relative to the space's folder); returns the space file."""
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    (folder / "my_data.py").write_text(DATA.replace("BREAK", brk).replace("LOSS", loss_body))
    space = folder / "my_space.py"
    text = SPACE.replace("DATASET", dataset).replace("LOSS", loss).replace("STEP", step)
    space.write_text(text.replace("ARCHITECTURE", architecture).replace("MODEL_ARGS", model_args))
    return space


def dry_run(capsys, tmp_path, space, *args) -> tuple[int, str]:
    storage = tmp_path / "runs"
    code = main(["run", f"space={space}", f"storage={storage}", "trials=2", "epochs=1", *args, "--dry-run"])
    _, err = capsys.readouterr()
    assert not storage.exists(), "nothing may be written for refused input"
    return code, err.strip()


def test_an_own_space_with_its_data_and_loss_plans(capsys, tmp_path):
    code, err = dry_run(capsys, tmp_path, own_space(tmp_path, loss="my_data.py:loss"))
    assert code == 0, err


@pytest.mark.parametrize(
    "dataset, brk, fragment",
    [
        ("my_data.py:data", "images = images[:, 0, 0]", "train images have shape (40, 4); expected [N, C, H, W]"),
        ("my_data.py:data", "labels = labels + 1", "train labels run from 1 to 3; expected 0..2"),
        ("my_data.py:data", "labels = labels - 1", "train labels run from -1 to 1; expected 0..2"),
        ("my_data.py:data", "labels = labels[:-1]", "train has 40 images but labels of shape (39,); expected one"),
        ("my_data.py:data", "images = images / 1.0", "train images are float64 from 0 to 255; expected uint8"),
        ("my_data.py:data", "images = images[:, :0]", "train images are 0x4x4; expected at least one channel"),
        ("my_data.py:data", "images = images[:, :, :0, :0] / 255", "train images are 1x0x0; expected at least one"),
        (
            "my_data.py:data",
            "images = torch.rand(40, 1, 4, 4, requires_grad=True)",
            "train images are a tensor that requires grad; return it .detach()ed",
        ),
        (
            "my_data.py:data",
            "labels = labels[:3]; images = images[:3]",
            "train has 3 images, all held out for "
            "validation (data.val_fraction=0.1, at least one a class), so none are left to train on",
        ),
        ("my_data.py:data", "labels = labels / 2", "train labels are float64; expected integers 0..2"),
        ("my_data.py:data", "return {'train': (images, labels)}", "returned a dict; expected OwnData(train="),
        ("my_data.py:data", "raise OSError('no digits here')", "data(root, seed) raised OSError: no digits here"),
        ("my_data.py:nope", "pass", "my_data.py defines no nope; it defines data, loss, step"),
        ("nowhere.py:data", "pass", "no such file"),
        ("my_data.py:data", "import nothing_of", "raised ModuleNotFoundError: No module named 'nothing_of'"),
    ],
)
def test_bad_own_data_is_refused_in_one_line_naming_the_function(capsys, tmp_path, dataset, brk, fragment):
    code, err = dry_run(capsys, tmp_path, own_space(tmp_path, dataset=dataset, brk=brk))
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"error: dataset={dataset}: "), err
    assert fragment in err


ARGS = "lambda hp, data: {'in_channels': data.in_channels, 'num_classes': data.num_classes"


@pytest.mark.parametrize(
    "change, refused",
    [
        (
            {"architecture": '"my_data.py:nett"'},
            "{folder}/my_data.py:nett: {folder}/my_data.py defines no nett; it defines data, loss, step",
        ),
        ({"architecture": '"nett.py:net"'}, "{folder}/nett.py:net: no such file {folder}/nett.py"),
        (
            {"model_args": ARGS + ", 'widht': 3}"},
            "{space}:net: net() takes no widht (given by model_args); it takes in_channels, num_classes",
        ),
        (
            {"model_args": ARGS[: -len(", 'num_classes': data.num_classes")] + "}"},
            "{space}:net: net() needs num_classes, which model_args does not give (it gives in_channels)",
        ),
        (
            {"brk": "images = images[:, :, :3]"},
            "{space}:net: on 2 examples of the data's shape 1x3x4 it raised RuntimeError: ",
        ),
        ({"architecture": '"mlp"'}, "mlp: on 2 examples of the data's shape 1x4x4 it raised RuntimeError: "),
        (
            {"architecture": '"my_data.py:data"'},
            "{folder}/my_data.py:data: data() takes no in_channels, num_classes (given by model_args); it takes "
            "root, seed",
        ),
        (
            {"architecture": '__file__ + ":broken"'},
            "{space}:broken: building it with in_channels=1, num_classes=3 raised ValueError: no such layer",
        ),
        ({"architecture": '__file__ + ":text"'}, "{space}:text: returned a str; expected an nn.Module"),
        (
            {"model_args": "lambda hp, data: {'in_channels': data.in_channels, 'num_classes': 5}"},
            "{space}:net: on 2 examples of the data's shape 1x4x4 it returned shape (2, 5); expected logits of shape "
            "(2, 3) (one per class)",
        ),
    ],
)
def test_a_model_builder_that_cannot_build_for_the_data_is_refused_in_one_line_before_ray(
    capsys, tmp_path, change, refused
):
    """The builder is found (a relative file from the space's folder), given only arguments it takes, built and run
    on 2 examples of the data's shape in the dry run already: each mistake in one line naming it."""
    space = own_space(tmp_path, **change)
    code, err = dry_run(capsys, tmp_path, space)
    assert code == 2, err
    expected = "error: architecture=" + refused.format(folder=space.parent, space=space)
    assert len(err.splitlines()) == 1 and err.startswith(expected), (err, expected)


@pytest.mark.parametrize("shape", ["(40, 1, 2, 8)", "(40, 1, 16)"])
def test_data_of_any_height_and_width_or_sequences_plan_with_a_model_to_match(capsys, tmp_path, shape):
    space = own_space(tmp_path, brk=f"images = images.reshape{shape}", loss="my_data.py:loss")
    code = main(["run", f"space={space}", f"storage={tmp_path / 'runs'}", "trials=2", "epochs=1", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    read_as = "gives [N, 1, 16]: read as sequences of 1 channels and length 16 (images give [N, C, H, W]"
    assert (read_as in out) == (shape == "(40, 1, 16)"), out  # three axes are never taken for images silently


@pytest.mark.parametrize(
    "loss_body, fragment",
    [
        ("return F.cross_entropy(logits, labels, reduction='none')", "returned a tensor of shape (2,); expected"),
        ("return 1.0", "returned float; expected the batch's loss as a scalar tensor"),
        ("return torch.tensor(1.0)", "its loss does not depend on the model's parameters"),
        ("return logits.mean() * float('nan')", "expected a finite loss"),
        ("return F.nll_loss(logits, labels[:1])", "on 2 images of the data's shape it raised ValueError"),
    ],
)
def test_a_bad_own_loss_is_refused_in_one_line_before_ray(capsys, tmp_path, loss_body, fragment):
    space = own_space(tmp_path, loss="my_data.py:loss", loss_body=loss_body)
    code, err = dry_run(capsys, tmp_path, space)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: loss=my_data.py:loss: "), err
    assert fragment in err


def test_a_loss_and_a_train_step_together_are_refused(capsys, tmp_path):
    space = own_space(tmp_path, loss="my_data.py:loss", step="my_data.py:step")
    code, err = dry_run(capsys, tmp_path, space)
    assert code == 2 and "loss= and train_step= are both given; give one" in err, err


def test_a_missing_train_step_names_what_the_file_defines(capsys, tmp_path):
    code, err = dry_run(capsys, tmp_path, own_space(tmp_path, step="my_data.py:stepp"))
    assert code == 2
    assert err == "error: train_step=my_data.py:stepp: my_data.py defines no stepp; it defines data, loss, step"


def test_a_data_file_that_fails_to_load_is_named(capsys, tmp_path):
    space = own_space(tmp_path)
    (space.parent / "my_data.py").write_text("import numpy as np\n1 / 0\n")
    code, err = dry_run(capsys, tmp_path, space)
    assert code == 2
    assert err == "error: dataset=my_data.py:data: the module failed to load: ZeroDivisionError: division by zero"


def test_a_relative_file_is_read_from_the_space_folder_whatever_the_working_directory(tmp_path, monkeypatch):
    space = own_space(tmp_path)
    monkeypatch.chdir(tmp_path)  # not the space's folder: a trial's process runs in its own
    assert own_function("dataset", "my_data.py:data", str(space)).__name__ == "data"
    with pytest.raises(UsageError, match="no such file"):
        own_function("dataset", "my_data.py:data", "")


def split(n: int, size: int = 4, channels: int = 1, classes: int = 3, dtype=np.uint8):
    images = np.random.default_rng(0).integers(0, 256, (n, channels, size, size)).astype(dtype)
    return images if dtype == np.uint8 else images / 255.0, np.arange(n) % classes


class Run:
    """What OwnDataset reads of a RunConfig."""

    def __init__(self, space: str, seed: int = 0):
        self.space, self.seed = space, seed


def test_own_splits_are_fed_as_the_built_in_ones(tmp_path):
    """No val: held out of train per class with the seed (as MNIST's); `limit` takes the first; float images in 0..1
    become the 0..255 scale the feed divides; the normalization is measured on the training images."""
    (tmp_path / "d.py").write_text(
        "import numpy as np\nfrom spaces import OwnData\n"
        "def data(root, seed):\n"
        "    rng = np.random.default_rng(1)\n"
        "    return OwnData(train=(rng.random((60, 3, 5, 5)), np.arange(60) % 4),\n"
        "                   class_names='abcd' and list('abcd'))\n"
    )
    dataset = OwnDataset("d.py:data", Run(str(tmp_path / "space.py"), seed=3))
    info = dataset.info(str(tmp_path), {})
    assert (info.in_channels, info.image_size, info.num_classes, info.class_names) == (3, 5, 4, tuple("abcd"))
    assert len(info.mean) == 3 and all(0.4 < m < 0.6 for m in info.mean) and all(0.2 < s < 0.4 for s in info.std)
    train_images, train_labels = dataset.load_split(str(tmp_path), "train", 0.25, 3)
    val_images, val_labels = dataset.load_split(str(tmp_path), "val", 0.25, 3)
    assert (len(train_labels), len(val_labels)) == (44, 16) and sorted(np.bincount(val_labels)) == [4, 4, 4, 4]
    assert train_images.dtype == np.float32 and 0 <= train_images.min() and 250 < train_images.max() <= 255.0
    assert train_labels.dtype == np.int64
    assert len(dataset.load_split(str(tmp_path), "train", 0.25, 3, limit=10)[1]) == 10
    assert not dataset.has_test_split(str(tmp_path))


def test_given_splits_are_kept_and_must_agree_in_shape():
    loaded = checked("f.py:d", OwnData(train=split(20), val=split(6), test=split(8), class_names=["x", "y", "z"]))
    assert {name: len(labels) for name, (_, labels) in loaded.splits.items()} == {"train": 20, "val": 6, "test": 8}
    with pytest.raises(UsageError, match=r"^dataset=f.py:d: test images are 1x5x5; train's are 1x4x4$"):
        checked("f.py:d", OwnData(train=split(20), test=split(8, size=5), class_names=["x", "y", "z"]))
    with pytest.raises(UsageError, match=r"^dataset=f.py:d: std is \(0.5, 0.5\); expected 1 value"):
        checked("f.py:d", OwnData(train=split(20), class_names=["x", "y", "z"], std=(0.5, 0.5)))
    with pytest.raises(UsageError, match=r"^dataset=f.py:d: class_names is 'xyz'; expected a list of names"):
        checked("f.py:d", OwnData(train=split(20), class_names="xyz"))


@pytest.mark.parametrize(
    "given, refused",
    [
        ({"mean": (float("nan"),)}, r"mean is \(nan,\); expected 1 value\(s\), one per channel, each finite$"),
        ({"std": (float("inf"),)}, r"std is \(inf,\); expected 1 value\(s\), one per channel, each finite and > 0$"),
        ({"mean": [float("-inf")]}, r"mean is \(-inf,\); expected 1 value"),
        ({"std": "wide"}, r"std is 'wide'; expected 1 number\(s\), one per channel$"),
    ],
)
def test_a_normalization_that_is_not_finite_is_refused(given, refused):
    with pytest.raises(UsageError, match=r"^dataset=f.py:d: " + refused):
        checked("f.py:d", OwnData(train=split(20), class_names=["x", "y", "z"], **given))


def test_images_of_any_height_and_width_and_sequences_are_accepted_with_their_shape():
    wide = checked(
        "f.py:d", OwnData(train=(np.zeros((6, 2, 3, 5), np.uint8), np.arange(6) % 2), class_names=["a", "b"])
    )
    assert (wide.info.shape, wide.info.in_channels, wide.info.mean) == ((2, 3, 5), 2, (0.0, 0.0))
    sequences = OwnData(train=(np.random.default_rng(0).random((6, 3, 40)), np.arange(6) % 2), class_names=["a", "b"])
    info = checked("f.py:d", sequences).info
    assert (info.shape, len(info.mean)) == ((3, 40), 3) and all(0.4 < m < 0.6 for m in info.mean)
    with pytest.raises(UsageError, match=r"^dataset=f.py:d: test images are 3x41; train's are 3x40$"):
        checked("f.py:d", OwnData(train=sequences.train, test=(np.zeros((2, 3, 41)), [0, 1]), class_names=["a", "b"]))


def test_a_sequence_split_is_fed_normalized_per_channel():
    from trainables.training import Split

    images = np.stack([np.full((4, 5), 51.0), np.full((4, 5), 102.0)], axis=1).astype(np.float32)  # [N=4, C=2, L=5]
    split_ = Split.from_arrays(images, np.arange(4), (0.2, 0.4), (0.5, 0.5), torch.device("cpu"))
    batch, labels = split_.batch(torch.arange(4))
    assert batch.shape == (4, 2, 5) and torch.allclose(batch, torch.zeros(4, 2, 5)) and labels.tolist() == [0, 1, 2, 3]


def test_shifts_and_rotations_of_sequences_are_refused_not_ignored():
    from trainables.data_info import DataInfo
    from trainables.foundation.space import Space
    from trainables.model_check import refuse_image_moves

    space = Space(name="s", description="d", architecture="mlp", dataset="f.py:d", hyperparameters={})
    sequences = DataInfo(("a", "b"), 3, 40, (0.5,) * 3, (0.25,) * 3, sizes=(40,))
    with pytest.raises(
        UsageError, match=r"^shift=2: shifts and rotations move images \[N, C, H, W\], and this data is"
    ):
        refuse_image_moves(space, {"shift": 2}, sequences)
    refuse_image_moves(space, {"shift": 0, "rotate": 0.0}, sequences)
    refuse_image_moves(space, {"shift": 2}, DataInfo(("a", "b"), 1, 8, (0.5,), (0.5,), sizes=(8, 6)))


def test_an_export_records_the_shape_it_takes():
    from search.results.export import NormalizedClassifier, input_shape
    from trainables.data_info import DataInfo

    wide = DataInfo(("a", "b"), 1, 8, (0.5,), (0.5,), sizes=(8, 6))
    assert {k: v for k, v in input_shape(wide).items() if k != "program_input"} == {
        "channels": 1,
        "height": 8,
        "width": 6,
    }
    sequences = DataInfo(("a", "b"), 3, 40, (0.5,) * 3, (0.25,) * 3, sizes=(40,))
    assert input_shape(sequences)["length"] == 40 and "height" not in input_shape(sequences)
    classifier = NormalizedClassifier(torch.nn.Flatten(), sequences.mean, sequences.std)
    assert torch.equal(classifier(torch.full((1, 3, 40), 0.5)), torch.zeros(1, 120))


def test_an_epoch_trains_on_the_own_step_and_reports_its_loss():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images, labels = torch.randn(8, 1, 4, 4), torch.arange(8) % 3
    before = model[1].weight.detach().clone()
    stats = train_one_epoch(
        model, optimizer, [(images, labels)], torch.device("cpu"), step=lambda m, x, y: m(x).sum() * 0 + 7.0
    )
    assert stats["loss_sum"].item() / stats["count"] == pytest.approx(7.0)
    assert torch.equal(model[1].weight, before)  # a loss with zero gradient moves nothing: the step was the own one


def test_own_data_is_sharded_across_ddp_ranks_as_the_built_in_data(tmp_path):
    """Two ranks of a DDP trial on a space's own data: disjoint training shards of equal length that together cover
    the split but for the remainder, each rank's validation shard disjoint, every image validated once."""
    from trainables.feeds import MemoryFeed
    from trainables.foundation.config import RunConfig

    (tmp_path / "d.py").write_text(
        "import numpy as np\nfrom spaces import OwnData\n"
        "def data(root, seed):\n"
        "    images = np.arange(61 * 4, dtype=np.uint8).reshape(61, 1, 2, 2)\n"
        "    return OwnData(train=(images, np.arange(61) % 2), class_names=['a', 'b'])\n"
    )
    run = RunConfig.from_dict({**RunConfig().to_dict(), "space": str(tmp_path / "space.py")})
    dataset = OwnDataset("d.py:data", run)
    feeds = [MemoryFeed(dataset, run, {"batch_size": 8}, rank, 2, torch.device("cpu")) for rank in (0, 1)]
    train = [torch.cat([images[:, 0, 0, 0] for images, _ in feed.train_batches(1)]) for feed in feeds]
    val = [torch.cat([images[:, 0, 0, 0] for images, _ in feed.val_batches()]) for feed in feeds]
    train_count = len(feeds[0].splits["train"])
    assert len(train[0]) == len(train[1]) == train_count // 2
    assert not set(train[0].tolist()) & set(train[1].tolist())
    assert not set(val[0].tolist()) & set(val[1].tolist())
    assert len(val[0]) + len(val[1]) == len(feeds[0].splits["val"])


def test_a_relative_model_builder_is_read_from_the_space_folder_whatever_the_working_directory(tmp_path, monkeypatch):
    from trainables.foundation.space import load_space

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "net.py").write_text(
        "from torch import nn\ndef net(in_channels, num_classes):\n    return nn.Flatten()\n"
    )
    (folder / "sp.py").write_text(
        "from optuna.distributions import FloatDistribution\nfrom spaces import Space\n"
        "SPACE = Space(name='sp', description='d', architecture='net.py:net', dataset='mnist',\n"
        "              hyperparameters={'lr': FloatDistribution(1e-3, 1e-1, log=True)})\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_space(str(folder / "sp.py")).architecture == f"{folder / 'net.py'}:net"
    (folder / "net.py").rename(elsewhere / "net.py")  # only in the working folder: still looked for beside the space
    assert load_space(str(folder / "sp.py")).architecture == f"{folder / 'net.py'}:net"
