"""A shape that cannot work on the cluster is refused before any trial runs. (Trials that fit train side by side:
test_storage_trouble.py.)"""

import time

import pytest

from tests.e2e_helpers import run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def head_with_one_gpu():
    """A Ray head that declares one GPU (as `ray start --head --num-gpus=1`), shared by the refusals below (none of
    them starts a trial on it); only its processes are stopped."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 4, "num_gpus": 1, "dashboard_host": "127.0.0.1"}
    )
    try:
        yield cluster
    finally:
        cluster.shutdown()


@pytest.mark.parametrize(
    "keys, named",
    [
        (["workers=2", "gpus=0.5"], "error: workers=2 gpus=0.5: ranks of one DDP trial would share a GPU"),
        (
            ["workers=2", "gpus=1"],
            "error: workers=2 x (4 CPU and 1 GPU): one trial needs 8 CPUs and 2 GPUs but the "
            "cluster has 4 CPUs and 1 GPUs on 1 node",
        ),
        (["workers=1", "gpus=2"], "error: gpus=2: no node has 2 GPUs (the most on one node: 1)"),
    ],
)
def test_a_shape_one_gpu_cannot_run_is_refused_within_seconds(tmp_path, mnist_root, head_with_one_gpu, keys, named):
    started = time.monotonic()
    result = run_cli(
        "run",
        "space=resnet_mnist",
        f"data.root={mnist_root}",
        f"storage={tmp_path}",
        "name=gpu",
        f"address={head_with_one_gpu.address}",
        *keys,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert lines[-1].startswith(named) and "a shape that fits: workers=1 cpus=1 gpus=0.25" in lines[-1], lines[-1]
    assert not (tmp_path / "gpu").exists()  # nothing that looks like an experiment
    assert elapsed < 30, f"refused after {elapsed:.0f} s"
