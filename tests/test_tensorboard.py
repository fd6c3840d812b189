"""A trial's TensorBoard events as the search driver writes them, read back with TensorBoard's own loader (no Ray,
no search): in a search of several objectives, every objective is an HParams metric."""

from pytest import approx
from tensorboard.plugins.hparams import plugin_data_pb2

from search.results.tensorboard import TrialEventWriter
from tests.e2e_helpers import event_data


def test_every_objective_is_an_hparams_metric(tmp_path):
    writer = TrialEventWriter(tmp_path)
    writer.epoch({"epoch": 1, "val_acc": 0.9, "params": 9000, "latency_ms": 0.024})
    outcome = {"best_val_acc": 0.9, "epochs_run": 1, "status": "completed", "stopped_early": False}
    writer.end({"lr": 0.1, "hidden": 32}, {**outcome, "objectives": {"val_acc": 0.9, "params": 9000}})
    writer.close()
    accumulator, hparams = event_data(tmp_path)
    assert hparams == {"lr": 0.1, "hidden": 32, "status": "completed", "stopped_early": 0.0}
    metrics = set()
    for content in accumulator.PluginTagToContent("hparams").values():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("experiment"):
            metrics |= {info.name.tag for info in data.experiment.metric_infos}
    assert metrics == {"hparams/best_val_acc", "hparams/epochs_run", "hparams/val_acc", "hparams/params"}
    assert accumulator.Scalars("hparams/params")[-1].value == 9000


def test_a_trial_that_ends_again_shows_its_last_end_and_every_epoch(tmp_path, monkeypatch):
    """A paused trial ends (stopped early at its rung), then, promoted, runs on in a file of its own and ends again:
    TensorBoard, which keeps the first HParams summary it reads, shows the last end; every epoch stays once."""
    import itertools
    import time

    from search.results.tensorboard import EVENT_FILES

    seconds = itertools.count(1_800_000_000, 60)  # each writer's file named a minute after the last: in name order
    monkeypatch.setattr(time, "time", lambda: next(seconds))

    ends = [({1: 0.5}, "stopped_early", 1), ({2: 0.7, 3: 0.8}, "completed", 3)]
    files = []
    for epochs, status, last in ends:
        writer = TrialEventWriter(tmp_path)
        for epoch, value in epochs.items():
            writer.epoch({"epoch": epoch, "val_acc": value})
        outcome = {"best_val_acc": max(epochs.values()), "epochs_run": last, "status": status}
        writer.end({"lr": 0.1}, {**outcome, "stopped_early": status == "stopped_early"})
        writer.close()
        files.append(writer.file)
        _, hparams = event_data(tmp_path)
        assert hparams["status"] == "stopped_early"  # before: the first end read, the pause's
        writer.keep_only_this_end()
        accumulator, hparams = event_data(tmp_path)
        assert hparams["status"] == status and [e.value for e in accumulator.Scalars("hparams/epochs_run")] == [last]
    assert sorted(tmp_path.glob(EVENT_FILES)) == sorted(files) and not list(tmp_path.glob(".*"))  # names kept
    assert [(e.step, e.value) for e in accumulator.Scalars("val_acc")] == [(1, 0.5), (2, approx(0.7)), (3, approx(0.8))]
