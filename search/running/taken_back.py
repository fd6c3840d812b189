"""What the checks before Ray fetched, taken back when a later check refuses the run, so that a refused run leaves no
folder behind, the caches included: the data downloaded into data.root, the shipped sample unpacked into the cache,
pretrained weights downloaded into torch's hub cache. Only folders that did not exist before the checks are removed."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from trainables.foundation.errors import UsageError


def first_missing(path: Path) -> Path | None:
    """The shallowest folder on the way to `path` (itself included) that does not exist yet: what creating `path`
    would create first; None when `path` exists."""
    path = Path(path).expanduser().absolute()
    if path.exists():
        return None
    missing = path
    while not missing.parent.exists():
        missing = missing.parent
    return missing


@contextlib.contextmanager
def taken_back_on_refusal(paths: list[Path]):
    """Run the checks inside; when one refuses (UsageError), remove whichever of `paths`' missing folders now exist."""
    created = [missing for missing in map(first_missing, paths) if missing is not None]
    try:
        yield
    except UsageError:
        for folder in created:
            if folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.exists():
                folder.unlink(missing_ok=True)
        raise


def fetch_targets(config, dataset, pretrained: bool) -> list[Path]:
    """Where the checks of a run may fetch into: its dataset's folder under data.root, the shipped samples' folders,
    and torch's hub cache where pretrained weights may be downloaded (only then is torch imported)."""
    from search import samples
    from trainables.data import IdxDataset

    targets = [samples.samples_root() / name for name in samples.SAMPLE_FOLDERS]
    if isinstance(dataset, IdxDataset):
        targets.append(dataset.raw_dir(config.data.root))
    if not pretrained:
        return targets
    import torch

    targets.append(Path(torch.hub.get_dir()) / "checkpoints")
    return targets
