"""Labelled inputs for `predict`, and what it says of them. An MNIST IDX images file whose labels file lies beside it
(`t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, as MNIST ships them) and a folder of class folders
(`<folder>/<class>/<image>`, as an image-folder dataset's split) carry each image's true class: `predict` then gives
the accuracy and a line per class, the figures a reader of 2,000 predictions wants, instead of 2,000 lines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from trainables.idx_files import read_idx
from trainables.image_folders import IMAGE_SUFFIXES

SHOWN = 20  # the per-image lines printed without --all (or --json, which writes every one)


class InputError(ValueError):
    """An input that cannot be turned into the model's input; the message names it."""


def idx_labels_file(images: Path) -> Path | None:
    """The labels file MNIST's naming puts beside an IDX images file, if it is there."""
    if "images-idx3" not in images.name:
        return None
    labels = images.with_name(images.name.replace("images-idx3", "labels-idx1"))
    return labels if labels.is_file() else None


def idx_labels(images: Path, count: int, classes: int) -> list[int] | None:
    """The true classes of an IDX images file's `count` images from its labels file; None without one."""
    path = idx_labels_file(images)
    if path is None:
        return None
    try:
        labels = read_idx(path)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if labels.ndim != 1 or len(labels) != count:
        raise InputError(f"{path}: holds labels of shape {labels.shape}, not {count} labels for {images}")
    if len(labels) and not 0 <= int(labels.min()) <= int(labels.max()) < classes:
        raise InputError(f"{path}: labels {int(labels.min())}..{int(labels.max())}; the model has {classes} classes")
    return [int(label) for label in np.asarray(labels)]


def folder_images(folder: Path, class_names: list[str]) -> list[tuple[str, int | None]]:
    """(image path, true class or None) of a folder: of its class folders, each named as one of the model's
    classes; or, without subfolders, of its own images (unlabelled)."""
    classes = sorted(path for path in folder.iterdir() if path.is_dir())
    if not classes:
        return [(str(path), None) for path in sorted(folder.iterdir()) if is_image(path)]
    unknown = [path.name for path in classes if path.name not in class_names]
    if unknown:
        raise InputError(
            f"{folder}: folder {unknown[0]} names no class of the model; its classes: {', '.join(class_names)}"
        )
    return [
        (str(path), class_names.index(label.name))
        for label in classes
        for path in sorted(label.rglob("*"))
        if is_image(path)
    ]


def is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES and path.is_file()


def accuracy_lines(predictions: list, class_names: list[str]) -> list[str]:
    """For the predictions whose true class is known: the accuracy, then per class its images, its accuracy and the
    class it was most often taken for. Nothing without labelled predictions."""
    labelled = [p for p in predictions if p.label is not None and p.error is None]
    if not labelled:
        return []
    right = sum(p.class_index == p.label for p in labelled)
    lines = [f"accuracy: {right / len(labelled):.4f} ({right} of {len(labelled)} labelled images)"]
    width = max(len(name) for name in class_names)
    for index, name in enumerate(class_names):
        of_class = [p for p in labelled if p.label == index]
        if not of_class:
            continue
        correct = sum(p.class_index == index for p in of_class)
        mistaken = Counter(p.class_name for p in of_class if p.class_index != index).most_common(1)
        taken = f", most often taken for {mistaken[0][0]} ({mistaken[0][1]})" if mistaken else ""
        lines.append(
            f"  class {name:<{width}}  {len(of_class):>5} images  accuracy {correct / len(of_class):.4f}{taken}"
        )
    return lines


def more_words(hidden: int) -> str:
    return f"... {hidden} more predictions (--all prints every one, --json writes them all)"
