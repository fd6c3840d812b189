"""Four searches from Python in one process, for the end-to-end tests that read them (tests/conftest.py's
`python_searches`): README.md's `search.api` example as it is, then a space of three configurations, a fully pinned
search of two repeats and a search under ASHA's promotion variant, each on the Ray instance the first started (one
start for the four)."""

import importlib.util
import os
import re
import subprocess
import sys

from tests.conftest import MNIST_MINI, REPO
from tests.e2e_helpers import VAL_LIMIT
from trainables.foundation.warm import PRELOAD_ENV

SMALL = {"limit": 256, "val_limit": 64}
# mlp_mnist with hidden left to search (128, 256 or 512): a space of three configurations
THREE = dict(lr=0.001, layers=1, dropout=0.1, batch_size=64)
# every searched key pinned, lr outside its range (kept, with a warning): two repeats of one configuration
PINNED = dict(lr=0.02, hidden=128, layers=1, dropout=0.1, batch_size=64)

# ASHA's promotion variant, one trial at a time (tests/test_promotion_e2e.py replays its rule on the values met),
# tracked in MLflow where it is installed (the `test` extra: the promotion test skips without it, the others run)
TRACKING = "mlflow" if importlib.util.find_spec("mlflow") else "none"
PROMOTE = dict(trials=6, epochs=4, grace=1, concurrency=1, seed=3, asha="promote", tracking=TRACKING)
PROMOTE_DATA = {"limit": 256, "val_limit": VAL_LIMIT}
PROMOTION = "THE PROMOTION SEARCH"  # printed before it: its output is what follows

# Run after the README's example in its process: the next searches reuse the Ray instance the first started (no
# second start), and the first left no trial's actor or placement group behind for them.
NEXT_SEARCHES = f"""
import ray
from search.commands import print_result
from ray.util import placement_group_table
from ray.util.state import list_actors

def session():
    return ray.get_runtime_context().get_node_id(), ray._private.worker.global_worker.node.get_session_dir_path()


first = session()
here = ray.get_runtime_context().gcs_address
alive = sorted(actor.class_name for actor in list_actors(here, filters=[("state", "=", "ALIVE")]))
print("LEFT", alive, sorted({{group["state"] for group in placement_group_table().values()}}))
search.api.run("mlp_mnist", trials=5, epochs=1, name="three", data={SMALL!r}, **{THREE!r})
one = search.api.run("mlp_mnist", trials=2, epochs=1, name="one", data={SMALL!r}, **{PINNED!r})
print_result(one.summary, one.experiment)  # the table `run` prints after a search, with the repeats' spread
print({PROMOTION!r})
search.api.run("mlp_mnist", name="promote", data={PROMOTE_DATA!r}, **{PROMOTE!r})
print("AGAIN", session() == first, search.api.shutdown(), ray.is_initialized())
"""


def python_searches(tmp_path_factory) -> dict:
    """Run README.md's example and NEXT_SEARCHES in one Python process, in a working folder of their own: its runs/
    holds notebook/, three/, one/ and promote/. Ray's door to warm workers preloads torch, as a user sets it in the
    environment (the example's code runs as README.md has it)."""
    readme = (REPO / "README.md").read_text()
    example = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "search.api" in block)
    root = tmp_path_factory.mktemp("python")
    cache = root / "cache"  # the default data.root holds the sample's MNIST: found there, never downloaded
    (cache / "search" / "datasets").mkdir(parents=True)
    (cache / "search" / "datasets" / "MNIST").symlink_to(MNIST_MINI / "MNIST")
    cwd = root / "cwd"
    cwd.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPO), PRELOAD_ENV: "torch"}
    result = subprocess.run(
        [sys.executable, "-c", example + NEXT_SEARCHES], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {"cwd": cwd, "runs": cwd / "runs", "stdout": result.stdout, "stderr": result.stderr}
