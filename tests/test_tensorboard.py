"""A trial's TensorBoard events as the search driver writes them, read back with TensorBoard's own loader (no Ray,
no search): in a search of several objectives, every objective is an HParams metric."""

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
