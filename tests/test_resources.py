import pytest

from trainables.foundation.config import parse_overrides
from trainables.foundation.errors import UsageError
from trainables.foundation.resources import (
    TrialShape,
    check_shape,
    choose_shape,
    plan_concurrency,
    settle_shape,
    trials_that_fit,
)


def test_two_workers_fit_once_on_two_cores():
    assert plan_concurrency([{"CPU": 2}], TrialShape(2, 1, 0), 0) == 1


def test_default_concurrency_is_what_fits():
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 0) == 4
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 3) == 3
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 10) == 4


def test_workers_spread_over_nodes_but_not_split():
    nodes = [{"CPU": 1.5}, {"CPU": 1.5}]
    assert trials_that_fit(nodes, TrialShape(2, 1, 0)) == 1
    assert trials_that_fit(nodes, TrialShape(1, 2, 0)) == 0


def test_gpus_limit_the_fit():
    assert trials_that_fit([{"CPU": 16, "GPU": 2}], TrialShape(2, 1, 1)) == 1
    assert trials_that_fit([{"CPU": 16}], TrialShape(1, 1, 1)) == 0


def test_never_fitting_shape_is_refused_with_numbers():
    with pytest.raises(UsageError) as excinfo:
        plan_concurrency([{"CPU": 2}], TrialShape(16, 1, 0), 0)
    message = str(excinfo.value)
    assert "workers=16" in message and "16 CPUs" in message and "2 CPUs" in message


@pytest.mark.parametrize(
    "nodes, trials, expected",
    [
        ([{"CPU": 2}], 8, TrialShape(1, 1, 0)),  # 2 cores: one-worker trials, two at a time
        ([{"CPU": 2}], 1, TrialShape(1, 2, 0)),  # one trial takes both cores
        ([{"CPU": 4}], 8, TrialShape(1, 1, 0)),
        ([{"CPU": 32}], 8, TrialShape(2, 8, 0)),  # enough cores for a DDP trial
        ([{"CPU": 16, "GPU": 1}], 8, TrialShape(1, 4, 0.25)),  # one GPU: four packed one-worker trials
        ([{"CPU": 16, "GPU": 8}], 8, TrialShape(2, 2, 1)),  # several GPUs: DDP trials, a GPU per rank
        ([{"CPU": 8, "GPU": 1}, {"CPU": 8, "GPU": 1}], 8, TrialShape(2, 8, 1)),  # one GPU a node, two nodes
    ],
)
def test_the_default_shape_fits_the_cluster(nodes, trials, expected):
    assert choose_shape(nodes, trials) == expected
    assert plan_concurrency(nodes, expected, 0) >= 1


@pytest.mark.parametrize(
    "nodes, trials, concurrency, expected",
    [
        ([{"CPU": 2}], 8, 1, TrialShape(1, 2, 0)),  # one trial at a time takes both cores
        ([{"CPU": 2}], 8, 2, TrialShape(1, 1, 0)),
        ([{"CPU": 32}], 8, 1, TrialShape(2, 16, 0)),  # one DDP trial at a time: all the cores to its two workers
        ([{"CPU": 16, "GPU": 1}], 8, 1, TrialShape(1, 16, 0.25)),  # one trial on the GPU: every core for its data
        ([{"CPU": 16, "GPU": 1}], 8, 2, TrialShape(1, 8, 0.25)),
        ([{"CPU": 16, "GPU": 8}], 8, 1, TrialShape(2, 8, 1)),
    ],
)
def test_trials_run_one_at_a_time_share_the_cores_among_fewer_workers(nodes, trials, concurrency, expected):
    assert choose_shape(nodes, trials, concurrency=concurrency) == expected
    assert plan_concurrency(nodes, expected, concurrency) == concurrency


def test_keys_the_user_gives_always_win():
    assert choose_shape([{"CPU": 16, "GPU": 1}], 8, workers=1, gpus=1) == TrialShape(1, 16, 1)
    assert choose_shape([{"CPU": 16, "GPU": 1}], 8, gpus=0) == TrialShape(2, 4, 0)
    assert choose_shape([{"CPU": 2}], 8, workers=2) == TrialShape(2, 1, 0)
    assert choose_shape([{"CPU": 2}], 8, cpus=0.5) == TrialShape(1, 0.5, 0)


@pytest.mark.parametrize(
    "shape, named",
    [
        (TrialShape(2, 1, 0.5), "workers=2 gpus=0.5: ranks of one DDP trial would share a GPU, which NCCL refuses"),
        (TrialShape(1, 1, 2), "gpus=2: no node has 2 GPUs (the most on one node: 1)"),
        (TrialShape(1, 1, 1.5), "gpus=1.5: a worker takes a share of one GPU (below 1) or whole GPUs"),
    ],
)
def test_a_shape_that_cannot_work_on_one_gpu_is_refused_naming_one_that_fits(shape, named):
    with pytest.raises(UsageError) as excinfo:
        check_shape([{"CPU": 16, "GPU": 1}], shape, 8)
    assert str(excinfo.value).startswith(named)
    assert str(excinfo.value).endswith("a shape that fits: workers=1 cpus=4 gpus=0.25")


def test_settle_shape_gives_one_trial_at_a_time_every_core():
    config = parse_overrides(["space=resnet_mnist", "concurrency=1"])
    assert settle_shape(config, [{"CPU": 2}]) == TrialShape(1, 2, 0) and config.cpus == 2.0


def test_settle_shape_fills_only_what_was_left_to_auto():
    config = parse_overrides(["space=resnet_mnist", "cpus=2"])
    shape = settle_shape(config, [{"CPU": 2}])
    assert (config.workers, config.cpus, config.gpus) == (1, 2.0, 0.0) == (shape.workers, shape.cpus_per_worker, 0.0)


def test_the_compile_combination_that_crashes_inductor_on_a_gpu_is_refused_in_one_line():
    combination = ["space=resnet_mnist", "compile=true", "precision=bf16", "channels_last=true"]
    with pytest.raises(UsageError) as excinfo:
        settle_shape(parse_overrides(combination), [{"CPU": 16, "GPU": 1}])
    assert str(excinfo.value).startswith("compile=true with precision=bf16 and channels_last=true on a GPU: ")
    assert "\n" not in str(excinfo.value)
    settle_shape(parse_overrides(combination), [{"CPU": 2}])  # on CPU cores it trains (tests/test_spaces_e2e.py)
    settle_shape(parse_overrides(combination[:-1]), [{"CPU": 16, "GPU": 1}])  # two of the three train on a GPU


def test_a_gpu_share_given_on_a_two_gpu_node_packs_one_worker_trials_instead_of_a_ddp_pair():
    """Every key you give wins: gpus=0.5 on 2 GPUs is two one-worker trials per GPU, not a refused DDP pair."""
    two_gpus = [{"CPU": 16.0, "GPU": 2.0, "memory": 64e9}]
    shape = choose_shape(two_gpus, trials=8, gpus=0.5)
    assert (shape.workers, shape.gpus_per_worker) == (1, 0.5)
    check_shape(two_gpus, shape, 8)  # fits: no refusal naming a workers= the user never gave
    assert choose_shape(two_gpus, trials=8).workers == 2  # left to auto: DDP over the two GPUs, as before


def test_the_local_gpu_count_is_torchs_where_a_gpu_may_be_and_0_without_torch_elsewhere(tmp_path):
    """Where one of the GPU device files exists, torch counts (as before); where none does, 0 and torch stays
    unimported (checked in a fresh interpreter: this one has torch already)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import sys; from trainables.foundation.resources import local_gpu_count; "
        f"print(local_gpu_count(('{tmp_path / 'absent'}',)), 'torch' in sys.modules); "
        f"print(local_gpu_count(('{tmp_path}',)), 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    import torch

    expected = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert result.stdout.split("\n")[:2] == ["0 False", f"{expected} True"], result.stdout


def test_the_search_commands_checks_leave_torch_unimported(tmp_path):
    """`run`'s checks before Ray starts (the shape from this machine's GPUs, the data, the plan) import no torch for
    a search too short to time: the search's own process never trains, and torch's import is 1.4 s of its start.
    Nor do `resume`'s checks of the experiment such a run leaves."""
    import subprocess
    import sys

    from tests.conftest import MNIST_MINI, REPO

    code = (
        "import sys; from search.commands import parse_run; from search.running.preflight import preflight; "
        f"config, space = parse_run(['space=resnet_mnist', 'data.root={MNIST_MINI}', 'data.limit=256', "
        f"'storage={tmp_path}', 'trials=1', 'epochs=1']); "
        "preflight(config, space); print('torch' in sys.modules); "
        "import json, pathlib; from search.resuming import checked; "
        "from trainables.foundation.storage import Experiment; "
        f"old = pathlib.Path('{tmp_path}') / 'old'; old.mkdir(); "
        "(old / 'search.json').write_text(json.dumps({'run': config.to_dict()})); "
        "checked(Experiment.at(str(old)), {'trials': '3'}); print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-2:] == ["False", "False"], result.stdout
