import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
import os  # noqa: E402

from search import samples  # noqa: E402

# The 6,000 + 2,000 MNIST digits that ship with the package (unpacked once into the cache); $MNIST_MINI: the same
# digits kept elsewhere (the GPU machine's .gpu/mnist-mini)
MNIST_MINI = Path(os.environ.get("MNIST_MINI") or samples.mnist_root()).resolve()


@pytest.fixture
def mnist_root() -> Path:
    return MNIST_MINI


@pytest.fixture(scope="session")
def search(tmp_path_factory) -> dict:
    """The shared end-to-end search (tests/e2e_helpers.main_search), run once for the files that read it."""
    from tests.e2e_helpers import main_search

    return main_search(tmp_path_factory)


@pytest.fixture(scope="session")
def python_searches(tmp_path_factory) -> dict:
    """README.md's example and three more searches from Python in one process (tests/python_searches.py), run once."""
    from tests.python_searches import python_searches

    return python_searches(tmp_path_factory)


@pytest.fixture
def s3_bucket(tmp_path, monkeypatch):
    """A real S3 endpoint on 127.0.0.1 (moto's server, a separate process) with an empty bucket; AWS_* variables in
    the environment point pyarrow at it (this process, the CLI, and Ray nodes started afterwards). Stopped by pid."""
    from search.results.tensorboard import free_port

    port = free_port()
    log = open(tmp_path / "s3.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        while not port_answers(port):
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "s3.log").read_text()
            time.sleep(0.2)
        for key, value in {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }.items():
            monkeypatch.setenv(key, value)
        import boto3  # comes with moto

        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}").create_bucket(Bucket="bucket")
        yield "s3://bucket"
    finally:
        server.terminate()
        server.wait(timeout=30)


def port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
