"""Everything that can be refused or settled before Ray starts: keys that name unknown options, a trial shape that
cannot work, an experiment name already taken, data that is missing or damaged (or the shipped sample when there is
none), pretrained weights, an experiment tracker that cannot be used, and a word on how long a long search will take."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from trainables.foundation.choices import CHOICES
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.resources import local_cpu_count, plan_concurrency, settle_shape
from trainables.foundation.space import Space
from trainables.foundation.storage import exists, experiment_of, refuse_unwritable


def preflight(config: RunConfig, space: Space) -> None:
    """Everything that can be refused before Ray starts."""
    from trainables.data import get_dataset

    hp = {**space.constants, **config.fixed}
    for key, allowed in CHOICES.items():
        if hp.get(key) is not None and hp[key] not in allowed:
            raise UsageError(f"{key}={hp[key]}: allowed values are {', '.join(allowed)}")
    experiment = experiment_of(config.storage, config.name)
    if exists(experiment.location):
        raise UsageError(f"name={config.name}: {experiment.location} already exists; choose another name=")
    refuse_unwritable(config.storage)
    if not config.address:  # on a cluster, the shape and the fit check wait for the cluster's own figures
        local_node = {"CPU": local_cpu_count(), "GPU": local_gpu_count()}
        plan_concurrency([local_node], settle_shape(config, [local_node]), config.concurrency)
    dataset = get_dataset(space.dataset)
    try:
        config.data.skip = dataset.check(config.data.root, hp, config.data.download, config.data.strict, config.seed)
    except UsageError as missing:
        if not use_the_sample(config, space.dataset, missing):
            raise
        config.data.skip = dataset.check(config.data.root, hp, False, config.data.strict, config.seed)
    config.model.weights = resolve_weights(config.model.weights, space, hp)
    from search.running.mlflow_store import refuse_unusable

    refuse_unusable(config)
    say_when_long(config, space, dataset, hp)


def say_when_long(config: RunConfig, space: Space, dataset, hp: dict) -> None:
    """Before a long search on a machine without a GPU: about how long, and which keys shorten it (IDX datasets)."""
    from search.running.estimate import long_search_line
    from trainables.data import IdxDataset

    if config.address or not isinstance(dataset, IdxDataset) or local_gpu_count():
        return
    images, _ = dataset.split_files(config.data.root, train=True)
    with open(images, "rb") as stream:
        count = int(struct.unpack(">I", stream.read(8)[4:])[0] * (1 - config.data.val_fraction))
    count = min(count, config.data.limit) if config.data.limit else count
    line = long_search_line(config, space, count, dataset.info(config.data.root, hp), local_cpu_count())
    if line:
        print(line, flush=True)


SAMPLE_WORDS = {
    "mnist": "the 6,000 MNIST digits that ship with search (and 2,000 more to test on; CC BY-SA 3.0)",
    "imagefolder": "digit PNGs drawn from the MNIST sample that ships with search (40 a class in train/, 10 in val/ "
    "and test/)",
    "imagefolder_split": "digit PNGs drawn from the MNIST sample that ships with search (60 a class)",
}


def use_the_sample(config: RunConfig, dataset: str, missing: UsageError) -> bool:
    """With no data.root given and the dataset neither there nor downloadable: the sample that ships with the package,
    said in one line. A data.root the user gave is never replaced."""
    from search import samples
    from trainables.foundation.config import default_data_root

    if dataset not in SAMPLE_WORDS or config.data.root != str(Path(default_data_root()).resolve()):
        return False
    given_up = config.data.root
    config.data.root = str(
        samples.mnist_root()
        if dataset == "mnist"
        else samples.digit_folders_root(split_by_pct=dataset == "imagefolder_split")
    )
    why = re.search(r"\((download failed: [^)]{0,80}|data\.download=false)", str(missing))
    print(
        f"data: no {dataset} in {given_up}{f' ({why.group(1)})' if why else ''}; this search trains on "
        f"{SAMPLE_WORDS[dataset]}, unpacked in {config.data.root}; for a real dataset give data.root=PATH",
        flush=True,
    )
    return True


def resolve_weights(weights: str, space: Space, hp: dict) -> str:
    """The pretrained weights file every worker loads: `model.weights=`, or torchvision's download for
    `pretrained=true`; never a silent random initialization."""
    if weights:
        path = Path(weights).expanduser().resolve()
        if not path.is_file():
            raise UsageError(f"model.weights={weights}: no such file")
        return str(path)
    if not hp.get("pretrained"):
        return ""
    from trainables.models import download_pretrained

    try:
        return download_pretrained(space.architecture)
    except Exception as exc:  # offline, or no pretrained weights for this architecture
        raise UsageError(
            f"pretrained=true: give model.weights=PATH (a state_dict file), or run online for torchvision's "
            f"download ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}), or set pretrained=false"
        ) from None


def local_gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
