"""What `predict` and `export` print and write, without a search: predictions on stdout and errors on stderr, the
class named once, a hint for an image of the other polarity than the training images, the latency with the digits
it has, the export's weights readable as its other files, and an earlier export never replaced silently (pure logic,
the shipped MNIST sample and a tiny network; the whole export and predict on a real search: test_export_e2e.py)."""

import json
import os
import stat
import struct

import numpy as np
import pytest
from safetensors.torch import load_file
from torch import nn

from search.results.export import (
    META_FILE,
    WEIGHTS_FILE,
    NormalizedClassifier,
    latency_words,
    refuse_overwrite,
    write_weights,
)
from search.results.predict import Prediction, look_of, predict_files, training_look, write_predictions
from tests.conftest import MNIST_MINI
from trainables.data import MNIST
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.space import load_space

UMASK = os.umask(0o022)
os.umask(UMASK)  # read back: the mode a file written here gets
PREDICTIONS = [
    Prediction("a.png", 3, "3", 0.91),
    Prediction("notes.png", error="notes.png: not a readable image (UnidentifiedImageError)"),
    Prediction("b.png", 7, "7", 0.5),
]


def test_predictions_go_to_stdout_and_errors_to_stderr(capsys):
    assert write_predictions(PREDICTIONS) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["a.png: 3 (p=0.9100)", "b.png: 7 (p=0.5000)"]  # the class once, not "3 (class 3"
    assert err.splitlines() == ["error: notes.png: not a readable image (UnidentifiedImageError)"]
    assert write_predictions(PREDICTIONS[:1]) == 0


def test_json_predictions_hold_the_errors_too(capsys):
    assert write_predictions(PREDICTIONS, as_json=True) == 1
    out, err = capsys.readouterr()
    assert [p.get("error") for p in json.loads(out)] == [None, PREDICTIONS[1].error, None] and not err


def test_the_latency_has_the_digits_its_spread_leaves_it():
    assert latency_words({"latency_ms": 11.0, "latency_iqr_ms": 4.055, "batch": 1, "device": "cpu"}) == (
        "11 ms (IQR 4, batch 1, cpu)"
    )
    assert latency_words({"latency_ms": 0.35, "latency_iqr_ms": 0.0123, "batch": 1, "device": "cpu"}) == (
        "0.35 ms (IQR 0.01, batch 1, cpu)"
    )
    assert latency_words({"latency_ms": 0.0241, "latency_iqr_ms": 0.0, "batch": 1, "device": "cpu"}) == (
        "0.0241 ms (IQR 0, batch 1, cpu)"
    )


def test_the_exported_weights_are_readable_as_the_other_files(tmp_path):
    write_weights(tmp_path, nn.Linear(16, 10), {"format": 1})
    modes = {name: stat.S_IMODE(os.stat(tmp_path / name).st_mode) for name in (WEIGHTS_FILE, META_FILE)}
    assert modes[WEIGHTS_FILE] == modes[META_FILE] == 0o666 & ~UMASK, {k: oct(v) for k, v in modes.items()}
    assert set(load_file(str(tmp_path / WEIGHTS_FILE))) == {"weight", "bias"}


def test_a_class_name_other_than_its_index_gives_the_index_too():
    assert Prediction("a.png", 0, "ants", 0.91).as_line() == "a.png: ants (class 0, p=0.9100)"


# ---------------------------------------------------------------- polarity hints (search.results.predict)


def mnist_model(meta_extra: dict) -> NormalizedClassifier:
    """A tiny untrained classifier with the metadata `load_model` gives an MNIST export (plus `meta_extra`)."""
    model = NormalizedClassifier(nn.Sequential(nn.Flatten(), nn.Linear(784, 10)), [0.1307], [0.3081]).eval()
    model.class_names = [str(d) for d in range(10)]
    model.meta = {"input": {"channels": 1, "height": 28, "width": 28}, "preprocessing": {"resize": [28, 28]}}
    model.meta.update(meta_extra)
    return model


def digits_of(count: int) -> np.ndarray:
    """The shipped sample's first test digits, uint8 [N, 1, 28, 28], light on dark."""
    return MNIST.load(MNIST_MINI, train=False, limit=count)[0]


def test_the_training_split_of_mnist_is_light_on_dark(tmp_path):
    run = RunConfig(space="mlp_mnist")
    run.data.root = str(MNIST_MINI)
    look = training_look(load_space("mlp_mnist"), run, {}, {"input": {"channels": 1, "height": 28, "width": 28}})
    assert look["background"] == "dark" and look["dark_background_share"] >= 0.99, look
    assert 0.1 < look["mean"] < 0.16  # MNIST's mean pixel value, 0.13


def test_an_image_of_the_other_polarity_gets_a_hint_and_one_of_the_same_none(tmp_path):
    from PIL import Image

    digits = digits_of(2)
    as_trained, inverted = tmp_path / "white_on_black.png", tmp_path / "black_on_white.png"
    Image.fromarray(digits[0, 0]).save(as_trained)
    Image.fromarray(255 - digits[1, 0]).resize((56, 56)).save(inverted)
    model = mnist_model({"training_images": look_of(digits)})
    predictions, hints = predict_files(model, [str(as_trained), str(inverted), str(tmp_path / "missing.png")])
    assert [bool(p.error) for p in predictions] == [False, False, True]
    assert hints == [
        f"hint: {inverted}: this image is dark on light; the model was trained on light on dark images: invert it"
    ]
    idx = tmp_path / "inverted-idx"  # an IDX file of 4 inverted digits: one hint for the file
    idx.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", 4, 28, 28) + (255 - digits_of(4)).tobytes())
    assert predict_files(model, [str(idx)])[1] == [
        f"hint: {idx}: 100% of its images are dark on light; the model was trained on light on dark images: invert it"
    ]


def test_an_idx_file_of_no_images_predicts_nothing_and_hints_nothing(tmp_path):
    empty = tmp_path / "empty-idx"
    empty.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", 0, 28, 28))
    model = mnist_model({"training_images": look_of(digits_of(2))})
    assert predict_files(model, [str(empty)]) == ([], [])


def test_an_export_without_the_record_or_of_photos_gives_no_hint(tmp_path):
    from PIL import Image

    digits = digits_of(1)
    inverted = tmp_path / "black_on_white.png"
    Image.fromarray(255 - digits[0, 0]).save(inverted)
    mixed = np.concatenate([digits, 255 - digits])  # half on dark, half on light: no background to compare with
    for extra in ({}, {"training_images": look_of(mixed)}):
        predictions, hints = predict_files(mnist_model(extra), [str(inverted)])
        assert hints == [] and predictions[0].error is None
    assert look_of(mixed)["background"] == "mixed"


def test_hints_go_to_stderr_after_the_predictions(capsys):
    assert write_predictions(PREDICTIONS[:1], hints=["hint: x"]) == 0
    assert capsys.readouterr() == ("a.png: 3 (p=0.9100)\n", "hint: x\n")


# ---------------------------------------------------------------- export never replaces silently


def test_an_existing_export_is_refused_without_replace_naming_the_folder_and_the_ways_on(tmp_path):
    refuse_overwrite(tmp_path / "new", replace=False)  # nothing there: nothing to refuse
    export = tmp_path / "export"
    export.mkdir()
    (export / META_FILE).write_text("{}")
    with pytest.raises(UsageError) as refused:
        refuse_overwrite(export, replace=False)
    assert str(refused.value) == (
        f"{export}: an export is already there; export to another folder with out=PATH, or replace it with --replace"
    )
    refuse_overwrite(export, replace=True)
    (tmp_path / "empty").mkdir()
    refuse_overwrite(tmp_path / "empty", replace=True)


def test_replace_never_replaces_what_is_not_an_export(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.png").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    for path in (tmp_path / "photos", tmp_path / "notes.txt"):
        with pytest.raises(UsageError, match="replaces only an earlier export"):
            refuse_overwrite(path, replace=True)
        with pytest.raises(UsageError, match="is already there"):
            refuse_overwrite(path, replace=False)


# ---------------------------------------------------------------- labelled inputs (search.results.labelled)


def write_idx_pair(folder, count: int):
    """The sample's first `count` test digits as MNIST ships them: an images file and its labels file beside it."""
    images, labels = MNIST.load(MNIST_MINI, train=False, limit=count)
    path = folder / "t10k-images-idx3-ubyte"
    path.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", count, 28, 28) + images.tobytes())
    (folder / "t10k-labels-idx1-ubyte").write_bytes(
        b"\x00\x00\x08\x01" + struct.pack(">I", count) + labels.astype(np.uint8).tobytes()
    )
    return path, [int(label) for label in labels]


def test_a_labelled_idx_pair_gives_the_accuracy_and_a_line_per_class_not_every_image(tmp_path, capsys):
    idx, labels = write_idx_pair(tmp_path, 30)
    model = mnist_model({})
    predictions, _ = predict_files(model, [str(idx)])
    assert [p.label for p in predictions] == labels
    right = sum(p.class_index == p.label for p in predictions)
    assert write_predictions(predictions, class_names=model.class_names) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:20] == [p.as_line() for p in predictions[:20]]
    assert out[20] == "... 10 more predictions (--all prints every one, --json writes them all)"
    assert out[21] == f"accuracy: {right / 30:.4f} ({right} of 30 labelled images)"
    per_class = out[22:]
    assert len(per_class) == len(set(labels)) and all(" images  accuracy " in line for line in per_class)
    three = next(line for line in per_class if line.startswith("  class 3 "))
    threes = [p for p in predictions if p.label == 3]
    assert f"{len(threes):>5} images  accuracy {sum(p.class_index == 3 for p in threes) / len(threes):.4f}" in three

    write_predictions(predictions, every=True, class_names=model.class_names)
    assert len([line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{idx}[")]) == 30
    write_predictions(predictions, as_json=True, class_names=model.class_names)
    out, err = capsys.readouterr()
    assert [p["label"] for p in json.loads(out)] == labels and err.startswith("accuracy: ")


def test_a_folder_of_class_folders_is_labelled_by_them_and_an_unknown_class_refused(tmp_path, capsys):
    from PIL import Image

    digits, labels = MNIST.load(MNIST_MINI, train=False, limit=4)
    for number, (digit, label) in enumerate(zip(digits, labels)):
        (tmp_path / "split" / str(label)).mkdir(parents=True, exist_ok=True)
        Image.fromarray(digit[0]).save(tmp_path / "split" / str(label) / f"{number}.png")
    (tmp_path / "split" / str(labels[0]) / "notes.png").write_text("hello")
    model = mnist_model({})
    predictions, _ = predict_files(model, [str(tmp_path / "split")])
    errors = [p for p in predictions if p.error]
    assert [p.input for p in errors] == [str(tmp_path / "split" / str(labels[0]) / "notes.png")]
    assert sorted(p.label for p in predictions if not p.error) == sorted(int(label) for label in labels)
    assert write_predictions(predictions, class_names=model.class_names) == 1
    assert "accuracy: " in capsys.readouterr().out

    (tmp_path / "split" / "cats").mkdir()
    refused = predict_files(model, [str(tmp_path / "split")])[0]
    assert [p.error for p in refused] == [
        f"{tmp_path / 'split'}: folder cats names no class of the model; its classes: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"
    ]
