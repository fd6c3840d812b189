"""Experiment locations: a folder or a pyarrow.fs URI with a local working folder (file:// URIs here, no Ray)."""

from pathlib import Path

import pytest

from trainables.foundation.storage import (
    Experiment,
    as_location,
    exists,
    experiment_of,
    read_text,
    uri_join,
    uri_parent,
    write_text,
)


@pytest.mark.parametrize(
    "uri, parts, expected",
    [
        ("s3://bucket/runs", ("exp", "summary.json"), "s3://bucket/runs/exp/summary.json"),
        ("s3://bucket/runs/", ("exp",), "s3://bucket/runs/exp"),
        (
            "s3://b/runs?endpoint_override=h:9000&scheme=http",
            ("exp",),
            "s3://b/runs/exp?endpoint_override=h:9000&scheme=http",
        ),
    ],
)
def test_uri_join_keeps_the_query_at_the_end(uri, parts, expected):
    assert uri_join(uri, *parts) == expected


def test_uri_parent_and_name():
    experiment = Experiment.at("s3://bucket/runs/exp?region=eu-west-1")
    assert experiment.remote and experiment.name == "exp"
    assert uri_parent(experiment.location) == "s3://bucket/runs?region=eu-west-1"


def test_ray_paths_become_uris_of_the_same_storage():
    assert as_location("s3://bucket/runs", "bucket/runs/exp/train_1/checkpoint_epoch_0002") == (
        "s3://bucket/runs/exp/train_1/checkpoint_epoch_0002"
    )
    assert as_location("file:///tmp/runs", "/tmp/runs/exp/x") == "file:///tmp/runs/exp/x"
    assert as_location("/tmp/runs", "/tmp/runs/exp/x") == "/tmp/runs/exp/x"  # a folder: unchanged


def test_a_local_experiment_is_its_own_working_folder(tmp_path):
    experiment = experiment_of(str(tmp_path), "exp")
    assert not experiment.remote and experiment.local == tmp_path / "exp"
    assert experiment.join("summary.json") == str(tmp_path / "exp" / "summary.json")


def test_a_uri_experiment_works_in_a_stable_local_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, again = experiment_of(f"file://{tmp_path}/bucket", "exp"), Experiment.at(f"file://{tmp_path}/bucket/exp")
    assert first == again and first.local.is_relative_to(tmp_path / "cache") and first.local.name.startswith("exp-")


def test_upload_then_download_round_trip_skips_checkpoints_unless_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bucket = tmp_path / "bucket"
    experiment = experiment_of(f"file://{bucket}", "exp")
    (experiment.local / "trial_a").mkdir(parents=True)
    (experiment.local / "search.json").write_text("{}")
    (experiment.local / "trial_a" / "events.out.tfevents.1").write_text("events")
    experiment.upload(["search.json", "trial_a/events.out.tfevents.1"])
    assert (bucket / "exp" / "trial_a" / "events.out.tfevents.1").read_text() == "events"

    write_text(experiment.join("train_a", "checkpoint_epoch_0001", "model.pt"), "weights")  # as Ray Train writes
    other_machine = Experiment("file://" + str(bucket / "exp"), tmp_path / "elsewhere")
    other_machine.download()
    assert (other_machine.local / "search.json").read_text() == "{}"
    assert not (other_machine.local / "train_a").exists()  # checkpoints are fetched one at a time, when needed
    checkpoint = other_machine.local_checkpoint(f"file://{bucket}/exp/train_a/checkpoint_epoch_0001")
    assert (checkpoint / "model.pt").read_text() == "weights"
    assert checkpoint.is_relative_to(other_machine.local)


def test_exists_and_read_text_on_a_uri(tmp_path):
    location = f"file://{tmp_path}/x/marker"
    assert not exists(location)
    write_text(location, "token")
    assert exists(location) and read_text(location) == "token" and Path(tmp_path, "x", "marker").is_file()


def test_checkpoints_still_in_a_uri_storage_are_known_from_one_listing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    experiment = experiment_of(f"file://{tmp_path}/bucket", "exp")
    write_text(experiment.join("train_a", "checkpoint_epoch_0002", "model.pt"), "weights")
    exists_now = experiment.checkpoint_exists()
    assert exists_now(experiment.join("train_a", "checkpoint_epoch_0002"))
    assert not exists_now(experiment.join("train_a", "checkpoint_epoch_0001"))  # deleted by Ray (num_to_keep)


def _claim_at_once(location: str, barrier, outcomes) -> None:
    from trainables.foundation.errors import UsageError
    from trainables.foundation.storage import claim

    barrier.wait(timeout=30)  # both processes have imported: they claim at the same moment
    try:
        claim(Experiment.at(location), "same")
        outcomes.put("claimed")
    except UsageError as refusal:
        outcomes.put(str(refusal))


def test_of_two_processes_claiming_one_name_at_once_exactly_one_gets_it(tmp_path):
    """Two searches started at once with one storage and name: one gets the folder, the other a one-line refusal
    (the CLI's end of it is in test_storage_trouble.py)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    outcomes, barrier = context.Queue(), context.Barrier(2)
    both = [context.Process(target=_claim_at_once, args=(str(tmp_path / "same"), barrier, outcomes)) for _ in range(2)]
    for process in both:
        process.start()
    for process in both:
        process.join(timeout=30)
    results = sorted(outcomes.get(timeout=5) for _ in both)
    assert results == ["claimed", f"name=same: {tmp_path / 'same'} already exists; choose another name="], results
