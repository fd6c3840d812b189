"""Pure logic of running on an existing cluster: the address, the code shipped, the paths every node must see."""

from pathlib import Path

import pytest

from search.commands import parse_run
from search.running.joining.cluster import (
    project_runtime_env,
    resolve_address,
    unseen_paths_message,
)
from trainables.foundation.errors import UsageError


@pytest.mark.parametrize(
    "key, environ, expected",
    [
        ("", {}, ""),  # start a local Ray instance
        ("", {"RAY_ADDRESS": "10.0.0.5:6379"}, "10.0.0.5:6379"),
        ("auto", {"RAY_ADDRESS": "10.0.0.5:6379"}, "auto"),  # the key wins
        ("local", {"RAY_ADDRESS": "10.0.0.5:6379"}, ""),  # explicitly local, whatever the environment says
    ],
)
def test_address_comes_from_the_key_then_ray_address(key, environ, expected):
    assert resolve_address(key, environ) == expected


def test_run_reads_ray_address_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6380")
    config, _ = parse_run(["space=resnet_mnist"])
    assert config.address == "127.0.0.1:6380"


def test_the_shipped_code_is_the_three_project_packages():
    env = project_runtime_env()
    assert [Path(m).name for m in env["py_modules"]] == ["search", "trainables", "spaces"]
    assert all((Path(m) / "__init__.py").is_file() for m in env["py_modules"])
    assert set(env) == {"py_modules"}  # nothing else is imposed on the cluster's workers


PATHS = {"storage": "/home/me/runs", "data.root": "/data/mnist"}


def test_every_node_seeing_every_path_passes():
    answers = {"10.0.0.1 aa": {"storage": True, "data.root": True}, "10.0.0.2 bb": {"storage": True, "data.root": True}}
    assert unseen_paths_message(answers, PATHS) is None


def test_a_node_that_cannot_see_local_storage_is_named_with_the_remedy():
    answers = {
        "10.0.0.1 aa": {"storage": True, "data.root": True},
        "10.0.0.2 bb": {"storage": False, "data.root": True},
    }
    message = unseen_paths_message(answers, PATHS)
    assert message.startswith("storage=/home/me/runs: 1 of 2 nodes (10.0.0.2 bb) cannot see files written here")
    assert "a folder every node mounts" in message and "\n" not in message


def test_missing_data_on_a_node_names_the_key():
    answers = {
        "10.0.0.1 aa": {"storage": True, "data.root": True},
        "10.0.0.2 bb": {"storage": True, "data.root": False},
    }
    assert unseen_paths_message(answers, PATHS).startswith("data.root=/data/mnist: not found on 1 of 2 nodes")


def test_a_refused_cluster_check_is_a_usage_error():
    from search.running.joining.cluster import check_every_node_sees

    with pytest.raises(UsageError):
        check_every_node_sees({"n": {"storage": False}}, {"storage": "/x"})


def test_a_storage_uri_is_kept_as_a_uri_not_taken_for_a_local_folder(tmp_path):
    config, _ = parse_run(["space=resnet_mnist", f"storage=file://{tmp_path}/runs"])
    assert config.storage == f"file://{tmp_path}/runs"


def test_a_storage_uri_pyarrow_cannot_open_is_refused_in_one_line():
    with pytest.raises(
        UsageError, match=r"^storage=nosuch://bucket/prefix: pyarrow cannot open it \(.*s3://bucket/prefix"
    ):
        parse_run(["space=resnet_mnist", "storage=nosuch://bucket/prefix"])


def test_a_node_that_cannot_read_a_storage_uri_is_named():
    answers = {
        "10.0.0.1 aa": {"storage": True, "data.root": True},
        "10.0.0.2 bb": {"storage": False, "data.root": True},
    }
    message = unseen_paths_message(answers, {**PATHS, "storage": "s3://bucket/runs"})
    assert message.startswith("storage=s3://bucket/runs: 1 of 2 nodes (10.0.0.2 bb) cannot read files written there")


def test_an_address_where_no_cluster_answers_is_refused_in_one_line():
    from search.results.tensorboard import free_port
    from search.running.joining.cluster import refuse_unreachable

    port = free_port()  # nothing listens there
    with pytest.raises(UsageError, match=rf"^address=127.0.0.1:{port}: no Ray cluster answers at 127.0.0.1:{port}"):
        refuse_unreachable(f"127.0.0.1:{port}", f"127.0.0.1:{port}", timeout_s=2)


@pytest.mark.parametrize(
    "key, environ, named", [("ray://head:10001", {}, "address"), ("", {"RAY_ADDRESS": "ray://h"}, "RAY_ADDRESS")]
)
def test_a_ray_client_address_is_refused_in_one_line_naming_the_ray_job_instead(key, environ, named):
    with pytest.raises(
        UsageError, match=rf"^{named}=ray://\S+: Ray Client is not supported .* submit the search as a Ray job"
    ):
        resolve_address(key, environ)


def test_from_the_cli_a_ray_client_address_is_refused_before_anything_starts():
    with pytest.raises(UsageError, match=r"^address=ray://head:10001: Ray Client is not supported"):
        parse_run(["space=resnet_mnist", "address=ray://head:10001"])


class HandsOut:
    """A socket as `free_port` uses it, bound by the system to each of `ports` in turn (set by the test)."""

    ports = iter(())

    def __init__(self, *args):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def bind(self, address):
        self.port = next(HandsOut.ports)

    def getsockname(self):
        return ("127.0.0.1", self.port)


def test_a_free_port_is_never_one_ray_takes_by_default(monkeypatch):
    from search.results import tensorboard
    from search.results.tensorboard import RAY_DEFAULT_PORTS, free_port

    with monkeypatch.context() as patched:
        patched.setattr(HandsOut, "ports", iter([52365, 6379, 8265, 10001, 40123]))
        patched.setattr(tensorboard.socket, "socket", HandsOut)
        assert free_port() == 40123
    port = free_port()
    assert port not in RAY_DEFAULT_PORTS and 0 < port < 65536


def test_the_ports_kept_free_are_rays_own_defaults():
    from ray._private import ray_constants

    from search.results.tensorboard import RAY_DEFAULT_PORTS

    defaults = {
        ray_constants.DEFAULT_PORT,
        ray_constants.DEFAULT_DASHBOARD_PORT,
        ray_constants.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT,
    }
    assert defaults <= RAY_DEFAULT_PORTS


def test_a_local_ray_instance_keeps_bounded_history_unless_the_user_set_it():
    from search.running.joining.cluster import GCS_HISTORY_CAPS, bound_gcs_history

    environ = {"RAY_task_events_max_num_task_in_gcs": "500"}
    bound_gcs_history(environ)
    assert environ["RAY_task_events_max_num_task_in_gcs"] == "500"
    assert all(
        environ[key] == value for key, value in GCS_HISTORY_CAPS.items() if key != "RAY_task_events_max_num_task_in_gcs"
    )
    assert all(int(value) >= 1000 for value in GCS_HISTORY_CAPS.values())
