"""Predict with an exported model: image files (PNG/JPEG), folders of them and MNIST IDX files, each converted to the
model's recorded input; one that cannot be gets an error naming it, and the others are still predicted. Labelled
inputs (an IDX file beside its labels file, a folder of class folders: search.results.labelled) give the accuracy
and a line per class. An input of the other polarity than the training images (light on dark or dark on light, its
border telling its background) gets a hint instead of a confident wrong class."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from search.results.labelled import (
    SHOWN,
    InputError,
    accuracy_lines,
    folder_images,
    idx_labels,
    more_words,
)
from trainables.idx_files import read_idx

SAMPLE = 512  # training images measured at export: spread over the split, enough for a share to 5%
CONSISTENT = 0.9  # the share of training images whose background must agree for the split to have one


@dataclass
class Prediction:
    input: str
    class_index: int | None = None
    class_name: str | None = None
    probability: float | None = None
    error: str | None = None
    label: int | None = None  # the input's true class, when it is labelled

    def as_dict(self) -> dict:
        if self.error:
            return {"input": self.input, "error": self.error}
        return {
            "input": self.input,
            "class": self.class_index,
            "class_name": self.class_name,
            "probability": self.probability,
            **({"label": self.label} if self.label is not None else {}),
        }

    def as_line(self) -> str:
        if self.error:
            return f"error: {self.error}" if self.error.startswith(self.input) else f"{self.input}: error: {self.error}"
        index = "" if self.class_name == str(self.class_index) else f"class {self.class_index}, "
        return f"{self.input}: {self.class_name} ({index}p={self.probability:.4f})"


def write_predictions(
    predictions: list[Prediction],
    as_json: bool = False,
    hints: list[str] = (),
    every: bool = False,
    class_names: list[str] = (),
) -> int:
    """The predictions on stdout (a line each for the first SHOWN, all with `every`; or every one in a JSON list),
    an input that failed as an `error:` line on stderr (in the JSON list with --json); of labelled inputs the
    accuracy and a line per class (on stderr beside JSON); then the hints on stderr. The exit code: 1 when an input
    failed."""
    if as_json:
        print(json.dumps([p.as_dict() for p in predictions], indent=2))
    else:
        shown = 0
        for prediction in predictions:
            if prediction.error:
                print(prediction.as_line(), file=sys.stderr)
            elif every or shown < SHOWN:
                print(prediction.as_line())
                shown += 1
        hidden = sum(1 for p in predictions if not p.error) - shown
        if hidden:
            print(more_words(hidden))
    for line in accuracy_lines(predictions, list(class_names)):
        print(line, file=sys.stderr if as_json else sys.stdout)
    for hint in hints:
        print(hint, file=sys.stderr)
    return 1 if any(p.error for p in predictions) else 0


def read_inputs(path: str, channels: int, height: int, width: int, preprocessing: dict | None = None):
    """(name, uint8 [C, H, W]) for each image the file holds: one for an image file, N for an IDX file."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such file")
    head = file.read_bytes()[:4]
    if len(head) == 4 and head[:2] == b"\x00\x00":
        return read_idx_images(file, channels, height, width)
    return [(path, read_image(file, channels, height, width, preprocessing or {}))]


def labelled_inputs(path: str, model) -> tuple[list, list[int | None], list[Prediction]]:
    """An input's (items, their true classes or None, the errors of its images): an IDX file with the labels beside
    it, a folder's images (labelled by class folders) each read alone, or one image file."""
    shape, preprocessing = model.meta["input"], model.meta.get("preprocessing", {})
    size = (shape["channels"], shape["height"], shape["width"])
    if not Path(path).is_dir():
        items = read_inputs(path, *size, preprocessing)
        is_idx = not (len(items) == 1 and items[0][0] == path)
        labels = idx_labels(Path(path), len(items), len(model.class_names)) if is_idx else None
        return items, labels or [None] * len(items), []
    items, labels, errors = [], [], []
    for image, label in folder_images(Path(path), list(model.class_names)):
        try:
            items.append((image, read_image(Path(image), *size, preprocessing)))
            labels.append(label)
        except InputError as exc:
            errors.append(Prediction(input=image, error=str(exc)))
    return items, labels, errors


def read_idx_images(file: Path, channels: int, height: int, width: int) -> list[tuple[str, np.ndarray]]:
    try:
        array = read_idx(file)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if array.ndim != 3 or array.dtype != np.uint8:
        raise InputError(f"{file}: IDX holds {array.dtype} of shape {array.shape}, not uint8 images [N, H, W]")
    if array.shape[1:] != (height, width) or channels != 1:
        raise InputError(
            f"{file}: IDX images are {array.shape[1]}x{array.shape[2]} with 1 channel; "
            f"the model takes {height}x{width} with {channels}"
        )
    return [(f"{file}[{i}]", image[None]) for i, image in enumerate(array)]


def read_image(file: Path, channels: int, height: int, width: int, preprocessing: dict) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(file) as image:
            image.load()
            mode = {1: "L", 3: "RGB"}.get(channels)
            if mode is None:
                raise InputError(f"{file}: the model takes {channels} channels; only 1 or 3 can be read from images")
            converted = fit_image(image.convert(mode), height, width, preprocessing)
            array = np.asarray(converted, dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as exc:
        raise InputError(f"{file}: not a readable image ({type(exc).__name__})") from None
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


def fit_image(image, height: int, width: int, preprocessing: dict):
    """The recorded preprocessing: resize the shorter side then center-crop (image folders), or plain resize."""
    from PIL import Image

    shorter = preprocessing.get("resize_shorter_side")
    if shorter:
        scale = shorter / min(image.size)
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.BILINEAR)
        left, top = (image.width - width) // 2, (image.height - height) // 2
        return image.crop((left, top, left + width, top + height))
    return image if image.size == (width, height) else image.resize((width, height), Image.BILINEAR)


def predict_files(model, paths: list[str]) -> tuple[list[Prediction], list[str]]:
    """The predictions of every input, and a hint for each input file whose images are of the other polarity than
    the training images (none for an export without that record)."""
    predictions, hints = [], []
    for path in paths:
        try:
            items, labels, errors = labelled_inputs(path, model)
        except InputError as exc:
            predictions.append(Prediction(input=path, error=str(exc)))
            continue
        predictions.extend(errors)
        for prediction, label in zip(classify(model, items), labels):
            prediction.label = label
            predictions.append(prediction)
        if not items:  # an IDX file or a folder of no images: nothing predicted, nothing to hint at
            continue
        hints.append(polarity_hint(model.meta.get("training_images"), path, np.stack([array for _, array in items])))
    return predictions, [hint for hint in hints if hint]


@torch.no_grad()
def classify(model, items: list[tuple[str, np.ndarray]], batch_size: int = 256) -> list[Prediction]:
    predictions = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        images = torch.from_numpy(np.stack([array for _, array in chunk])).float().div_(255.0)
        probabilities = torch.softmax(model(images), dim=1)
        best, index = probabilities.max(dim=1)
        for (name, _), p, i in zip(chunk, best.tolist(), index.tolist()):
            predictions.append(Prediction(name, i, model.class_names[i], round(p, 6)))
    return predictions


def training_look(space, run, config: dict, meta: dict) -> dict | None:
    """The look of a sample of the trial's training split, read as `predict` reads an input; None for a dataset
    neither of image folders nor of arrays."""
    from trainables.data import FolderDataset, get_dataset

    dataset = get_dataset(space.dataset, run)  # a space's own data too (trainables.own_data)
    if isinstance(dataset, FolderDataset):
        paths = [path for path, _ in dataset.index(run.data.root, config, run.seed, skip=run.data.skip).train]
        shape, preprocessing = meta["input"], meta.get("preprocessing", {})
        images = []
        for path in paths[:: max(1, len(paths) // SAMPLE)][:SAMPLE]:
            with contextlib.suppress(InputError):  # an image the search skipped too
                images.append(read_image(Path(path), shape["channels"], shape["height"], shape["width"], preprocessing))
        return look_of(np.stack(images)) if images else None
    if not hasattr(dataset, "load_split"):
        return None
    images, _ = dataset.load_split(run.data.root, "train", run.data.val_fraction, run.seed)
    return look_of(images[:: max(1, len(images) // SAMPLE)][:SAMPLE])


def border_means(images: np.ndarray) -> np.ndarray:
    """The mean of each image's border, in [0, 1]: uint8 images [N, C, H, W]."""
    images = np.asarray(images, dtype=np.float64) / 255.0
    edges = [images[:, :, 0, :], images[:, :, -1, :], images[:, :, :, 0], images[:, :, :, -1]]
    return np.concatenate([edge.reshape(len(images), -1) for edge in edges], axis=1).mean(axis=1)


def look_of(images: np.ndarray) -> dict:
    """How a training split looks (uint8 images [N, C, H, W]): its mean pixel value, the share of images on a dark
    background, and its background (`dark`, `light`, or `mixed` when fewer than CONSISTENT agree)."""
    dark = float((border_means(images) < 0.5).mean())
    background = "dark" if dark >= CONSISTENT else "light" if dark <= 1 - CONSISTENT else "mixed"
    mean = float(np.asarray(images, dtype=np.float64).mean() / 255.0)
    return {"mean": round(mean, 4), "dark_background_share": round(dark, 4), "background": background}


def polarity_hint(recorded: dict | None, name: str, images: np.ndarray) -> str | None:
    """One line when most of `images` (uint8 [N, C, H, W], one input file's) are on the other background than the
    training split's; None without a record, for a mixed split, or when they agree."""
    if not recorded or recorded.get("background") not in ("dark", "light") or not len(images):
        return None
    dark = float((border_means(images) < 0.5).mean())
    trained_dark = recorded["background"] == "dark"
    if (dark if not trained_dark else 1 - dark) <= 0.5:
        return None
    theirs, ours = ("light on dark", "dark on light") if trained_dark else ("dark on light", "light on dark")
    what = "this image is" if len(images) == 1 else f"{1 - dark if trained_dark else dark:.0%} of its images are"
    return f"hint: {name}: {what} {ours}; the model was trained on {theirs} images: invert it"
