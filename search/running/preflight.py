"""Everything that can be refused or settled before Ray starts: keys that name unknown options, a trial shape that
cannot work, an experiment name already taken, data that is missing or damaged (or the shipped sample when there is
none), pretrained weights, an experiment tracker that cannot be used, and a word on how long a long search will take."""

from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

from trainables.foundation.choices import CHOICES
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.fetching import placed_since, taken_back_on_refusal
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
    enqueued = []
    if config.enqueue:  # read again when the search starts
        from search.running.proposals.study_setup import enqueued_configurations

        enqueued = enqueued_configurations(config, space)
    from search.running.tracking.mlflow_store import refuse_unusable

    refuse_unusable(config)
    dataset = get_dataset(space.dataset, config)  # a space's own: its function is called and checked
    data = config.data
    with taken_back_on_refusal():  # a later refusal takes back what they fetched, and only that
        try:
            data.skip = dataset.check(data.root, hp, data.download, data.strict, config.seed)
        except UsageError as missing:
            if not use_the_sample(config, space.dataset):
                raise missing from None
            data.skip = dataset.check(data.root, hp, False, data.strict, config.seed)
        config.model.weights = resolve_weights(config.model.weights, space, hp)
        first = typical_hyperparameters(space) | (enqueued[0] if enqueued else {}) | hp  # the first trial's, or like it
        refuse_what_cannot_train(config, space, dataset, first)
    say_when_long(config, space, dataset, hp)


def refuse_what_cannot_train(config: RunConfig, space: Space, dataset, first: dict) -> None:
    """The space's own code, with the first trial's hyperparameters `first`, on inputs of the data's shape: its model
    builder (a shipped space's is not built), its own loss or training step, its own metric (and val_auc on two
    classes only)."""
    from trainables.foundation.objectives import METRICS, objectives_of
    from trainables.model_check import check_model
    from trainables.own_step import check_training_step

    check_model(space, config.space, first, dataset.info(config.data.root, first))  # the builder, on the data's shape
    check_training_step(space, config, dataset, first)  # a space's own loss or step
    computed = {space.metric, *(objective.name for objective in objectives_of(config, space))} & set(METRICS[2:])
    if space.own_metric or computed:  # torch is imported for these alone (a plain search's checks leave it out)
        from trainables.metrics import check_metric

        check_metric(space, config, dataset, first)  # a space's own metric, val_auc on two classes only


def refuse_no_cluster(address: str) -> None:
    """A cluster that does not answer, refused before the experiment's folder is claimed."""
    if not address:
        return
    import ray

    from search.running.joining.cluster import refuse_unreachable
    from search.running.joining.connect import bootstrap_address
    from search.running.joining.kept_ray import reusable

    if not (ray.is_initialized() and reusable(address)):  # a Ray kept from a search of another address is no answer
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
    from search.running.proposals.study_setup import within_space

    capped = within_space(config, space)  # a space of fewer configurations than trials: that many
    line = long_search_line(capped, space, count, dataset.info(config.data.root, hp), local_cpu_count())
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


def fetched_since(config: RunConfig, mark: int) -> list[str]:
    """What the checks put in place since `mark` (a dry run names it; trainables.foundation.fetching records it): the
    data downloaded into data.root or the shipped sample unpacked into the cache, and pretrained weights downloaded into
    torch's hub cache. What another process put there meanwhile is not named."""
    placed = [path.resolve() for path in placed_since(mark)]
    root, weights = Path(config.data.root), config.model.weights
    fetched = []
    if any(path.is_relative_to(root.resolve()) for path in placed):
        fetched.append(f"the data, fetched into {root}")
    if weights and Path(weights).resolve() in placed:
        fetched.append(f"the pretrained weights, fetched into {Path(weights).parent}")
    return fetched


def refuse_resuming_what_cannot_train(config: RunConfig, space: Space) -> None:
    """`resume`, before Ray: the weights file every trial starts from is still there, the data the search trains on
    is still whole where its settings say (downloaded again when allowed, taken back if a check refuses), and the
    space's code (its builder, own loss or step, own metric, which may have changed since the search began) still
    runs on it, so that no trial starts only to fail."""
    from search.running.estimate import typical_hyperparameters
    from trainables.data import get_dataset

    weights = config.model.weights
    if weights and not Path(weights).is_file():
        raise UsageError(
            f"model.weights={weights}: no such file; the search's trials start from it: put it back there (weights of "
            "pretrained=true: torchvision downloads them there when such a search runs online) and resume"
        )
    dataset = get_dataset(space.dataset, config)
    hp = config.constants(space)
    with taken_back_on_refusal():
        dataset.check(config.data.root, hp, config.data.download, config.data.strict, config.seed)
        refuse_what_cannot_train(config, space, dataset, typical_hyperparameters(space) | hp)
