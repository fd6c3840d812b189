"""Everything that can be refused or settled before Ray starts: keys that name unknown options, a trial shape that
cannot work, an experiment name already taken, data that is missing or damaged (or the shipped sample when there is
none), pretrained weights, an experiment tracker that cannot be used, and a word on how long a long search will take."""

from __future__ import annotations

import contextlib
import io
import shutil
import struct
from pathlib import Path

from trainables.foundation.choices import CHOICES
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.resources import local_cpu_count, local_gpu_count, plan_concurrency, settle_shape
from trainables.foundation.space import Space
from trainables.foundation.storage import exists, experiment_of
from trainables.foundation.write_probe import refuse_unwritable


def preflight(config: RunConfig, space: Space) -> None:
    """Everything that can be refused before Ray starts. The checks that write nothing come first; then the two that
    may write, each only what it fetched whole: the data (downloaded into data.root, or the shipped sample unpacked
    into the cache) and the pretrained weights (torch's hub cache). A refused run leaves no folder behind."""
    from search.running.estimate import typical_hyperparameters
    from trainables.data import get_dataset
    from trainables.own_step import check_training_step

    hp = config.constants(space)
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
    refuse_no_cluster(config.address)
    if config.model.weights:  # a file given: checked here, pretrained weights are downloaded after the data
        config.model.weights = resolve_weights(config.model.weights, space, hp)
    if config.enqueue:  # read again when the search starts
        from search.running.proposals.study_setup import enqueued_configurations

        enqueued_configurations(config, space)
    from search.running.tracking.mlflow_store import refuse_unusable

    refuse_unusable(config)
    dataset = get_dataset(space.dataset, config)  # a space's own: its function is called and checked
    pretrained, data = bool(hp.get("pretrained")) and not config.model.weights, config.data
    with taken_back_on_refusal(fetch_targets(config, dataset, pretrained)):  # a later refusal takes it back
        try:
            data.skip = dataset.check(data.root, hp, data.download, data.strict, config.seed)
        except UsageError as missing:
            if not use_the_sample(config, space.dataset):
                raise missing from None
            data.skip = dataset.check(data.root, hp, False, data.strict, config.seed)
        config.model.weights = resolve_weights(config.model.weights, space, hp)
        check_training_step(space, config, dataset, typical_hyperparameters(space) | hp)  # a space's own loss or step
    say_when_long(config, space, dataset, hp)


def refuse_no_cluster(address: str) -> None:
    """A cluster that does not answer, refused before the experiment's folder is claimed."""
    if not address:
        return
    import ray

    from search.running.joining.cluster import refuse_unreachable
    from search.running.joining.connect import bootstrap_address

    if not ray.is_initialized():
        refuse_unreachable(address, bootstrap_address(address))


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
    "mnist": "the MNIST sample that ships with search (8,000 digits; CC BY-SA 3.0)",
    "imagefolder": "digit PNGs from the shipped MNIST sample (40 a class in train/, 10 in val/ and test/)",
    "imagefolder_split": "digit PNGs from the shipped MNIST sample (60 a class)",
}


def use_the_sample(config: RunConfig, dataset: str) -> bool:
    """With no data.root given and the dataset neither there nor downloadable: the sample that ships with the package,
    said in one short line. A data.root the user gave is never replaced."""
    from search import samples
    from trainables.foundation.config import default_data_root

    if dataset not in SAMPLE_WORDS or config.data.root != str(Path(default_data_root()).resolve()):
        return False
    home = str(Path.home())
    given_up = "~" + config.data.root[len(home) :] if config.data.root.startswith(home + "/") else config.data.root
    if dataset != "mnist":
        why = f"no image folders in {given_up}"
    elif config.data.download:
        why = f"no MNIST in {given_up} and none could be downloaded (offline?)"
    else:
        why = f"no MNIST in {given_up} (data.download=false)"
    print(f"data: {why}; training on {SAMPLE_WORDS[dataset]}; for real data give data.root=PATH", flush=True)
    split = dataset == "imagefolder_split"
    root = samples.mnist_root() if dataset == "mnist" else samples.digit_folders_root(split_by_pct=split)
    config.data.root = str(root)
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
        with contextlib.redirect_stdout(io.StringIO()):  # torch's own 'Downloading: ...' line: the refusal says it
            return download_pretrained(space.architecture)
    except Exception as exc:  # offline, or no pretrained weights for this architecture
        raise UsageError(
            f"pretrained=true: give model.weights=PATH (a state_dict file), or run online for torchvision's "
            f"download ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}), or set pretrained=false"
        ) from None


def fetched_since(config: RunConfig, space: Space, started: float) -> list[str]:
    """What the checks wrote since `started` (a dry run names it): the data downloaded into data.root or the shipped
    sample unpacked into the cache, and pretrained weights downloaded into torch's hub cache."""
    from search.samples import samples_root
    from trainables.data import IdxDataset, get_dataset

    def new(path: Path) -> bool:  # the kernel's file times run up to a tick behind time.time()
        return path.exists() and path.stat().st_ctime >= started - 0.05

    dataset, root = get_dataset(space.dataset, config), Path(config.data.root)
    marker = dataset.split_files(root, train=True)[0] if isinstance(dataset, IdxDataset) else root
    fetched = []
    if (isinstance(dataset, IdxDataset) or root.is_relative_to(samples_root())) and new(marker):
        fetched.append(f"the data, fetched into {root}")
    if config.model.weights and new(Path(config.model.weights)):
        fetched.append(f"the pretrained weights, fetched into {Path(config.model.weights).parent}")
    return fetched


def refuse_missing_data(config: RunConfig, space: Space) -> None:
    """`resume`, before Ray: the data the search trains on is still whole where its settings say (downloaded again
    when allowed, taken back if the check refuses), so that no trial starts only to fail on it."""
    from trainables.data import get_dataset

    dataset = get_dataset(space.dataset, config)
    hp = config.constants(space)
    with taken_back_on_refusal(fetch_targets(config, dataset, pretrained=False)):  # no weights are fetched here
        dataset.check(config.data.root, hp, config.data.download, config.data.strict, config.seed)


def first_missing(path: Path) -> Path | None:
    """The shallowest folder on the way to `path` (itself included) that does not exist yet: what creating `path`
    would create first; None when `path` exists."""
    path = Path(path).expanduser().absolute()
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    return missing[-1] if missing else None


@contextlib.contextmanager
def taken_back_on_refusal(paths: list[Path]):
    """Run the checks inside; when one refuses (UsageError), remove what they fetched into those of `paths` that were
    missing, then the folders made on the way to them that nothing else is in: a refused run leaves no folder behind,
    the caches included, and never takes what another process put beside it meanwhile (a search started at once)."""
    created = [(Path(path).expanduser().absolute(), missing) for path in paths if (missing := first_missing(path))]
    try:
        yield
    except UsageError:
        for path, missing in created:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists():
                path.unlink(missing_ok=True)
            folder = path.parent
            while folder != missing.parent:  # up to the first folder that was missing, each only when empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
                folder = folder.parent
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
