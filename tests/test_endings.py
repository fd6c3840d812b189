"""How a trial ended: one rule (search.running.study.endings), written into the study first, and every other account
following it. Real studies (a journal file or memory), stand-in Tune trials; Ray is imported, never started."""

import json
from types import SimpleNamespace

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from search.running.ends.callbacks import FollowsEnds, TrialEnds
from search.running.ends.decider import Decider
from search.running.ends.reconcile import continue_stopped_by_budget, reconcile
from search.running.study.coding import SpaceCoding, contains
from search.running.study.endings import EndFacts, Ending, ending_of
from search.running.study.queries import trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.objectives import Objective
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles

SPACE = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}


@pytest.mark.parametrize(
    "facts, expected",
    [
        ({"epochs_run": 3}, Ending("completed")),
        ({"epochs_run": 1}, Ending("stopped_early", "stopped by ASHA at epoch 1")),
        (
            {"epochs_run": 2, "budget": "time"},
            Ending("stopped_by_budget", "stopped by the time budget after epoch 2"),
        ),
        (
            {"epochs_run": 0, "budget": "time"},
            Ending("stopped_by_budget", "stopped by the time budget before its first epoch"),
        ),
        (
            {"epochs_run": 3, "budget": "time"},
            Ending("completed"),
        ),  # its last epoch came in before the budget ran out
        ({"epochs_run": 2, "error": "RuntimeError: boom", "budget": "time"}, Ending("failed", "RuntimeError: boom")),
        ({"epochs_run": 1, "divergence": "NonFiniteLoss: x"}, Ending("failed", "NonFiniteLoss: x")),
        ({"epochs_run": 0}, Ending("failed", "it ended before its first epoch")),
    ],
)
def test_one_rule_names_how_a_trial_ended(facts, expected):
    assert ending_of(epochs=3, **facts) == expected


def record_in(folder, epochs=3) -> StudyRecord:
    return StudyRecord.in_folder(
        folder, SpaceCoding(dict(SPACE)), [Objective("val_acc", "max")], epochs, {"lr_schedule": "none"}
    )


def tune_trial(trial_id, epoch, path="/nowhere", **last):
    return SimpleNamespace(
        trial_id=f"tune-{trial_id}",
        config={TRIAL_KEY: trial_id, "lr": 0.01},
        last_result={"epoch": epoch, **last},
        path=path,
        error_file=None,
        status="RUNNING",
        metric_analysis={},
    )


class Raising(FollowsEnds):
    what = "a follower that raises once"

    def __init__(self):
        self.calls = 0

    def trial_ended(self, trials, trial_id, ending, tune_trial=None):
        self.calls += 1
        if self.calls == 1:
            raise OSError(28, "No space left on device")


class Listening(FollowsEnds):
    def __init__(self):
        self.heard = []

    def trial_ended(self, trials, trial_id, ending, tune_trial=None):
        self.heard.append((trial_id, ending))


def test_a_callback_that_raises_once_leaves_a_completed_trial_completed(tmp_path, capsys):
    """Tune runs `on_trial_error` when a callback raised at a trial's end: the study already holds the trial as
    completed, so neither it, nor end.json, nor what the followers heard, changes; the failure is named once."""
    record = record_in(tmp_path)
    raising, listening = Raising(), Listening()
    ends = TrialEnds(Decider(record, str(tmp_path), [raising, listening]), 3)
    for trial_id in ("a", "b"):
        record.create(trial_id)
        for epoch in (1, 2, 3):
            record.report(trial_id, epoch, 0.5 + epoch / 10)
    ends.on_trial_complete(0, [], tune_trial("a", 3))  # the first follower raises here: guarded
    ends.on_trial_error(0, [], tune_trial("a", 3))  # what Tune does next
    ends.on_trial_complete(0, [], tune_trial("b", 3))  # it raises no more
    assert record.frozen("a").state == TrialState.COMPLETE and record.ending("a") == Ending("completed")
    assert TrialFiles(str(tmp_path), "a").ending()["status"] == "completed"
    assert listening.heard == [("a", Ending("completed")), ("b", Ending("completed"))]
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "a follower that raises once failed (OSError: [Errno 28] No space" in warnings[0]


def test_the_budget_ends_every_running_trial_with_the_epochs_its_files_hold(tmp_path):
    """Tune stops the trials without a callback when the budget runs out: the study takes the epochs their files
    hold (more than Tune heard of) and ends them so; a trial proposed but not started is stopped before epoch 1."""
    record = record_in(tmp_path)
    listening = Listening()
    ends = TrialEnds(Decider(record, str(tmp_path), [listening]), 3)
    record.create("trained"), record.create("waiting")
    record.report("trained", 1, 0.6)
    files = TrialFiles(str(tmp_path), "trained")
    files.append(files.append([], {"epoch": 1, "val_acc": 0.6}), {"epoch": 2, "val_acc": 0.7})
    ends.out_of_budget()
    assert record.frozen("trained").intermediate_values == {1: 0.6, 2: 0.7}
    assert record.ending("trained") == Ending("stopped_by_budget", "stopped by the time budget after epoch 2")
    assert record.frozen("trained").state == TrialState.PRUNED and record.frozen("trained").user_attrs["score"] == 0.7
    assert record.ending("waiting").reason == "stopped by the time budget before its first epoch"
    assert files.ending()["status"] == "stopped_by_budget" and files.final_ending() is None  # not final
    assert [trial_id for trial_id, _ in listening.heard] == ["trained", "waiting"]


def test_a_later_session_continues_a_trial_the_budget_stopped_under_its_own_id(tmp_path):
    record = record_in(tmp_path)
    record.create("t")
    for epoch in (1, 2):
        record.report("t", epoch, 0.5 + epoch / 10)
    Decider.without_files(record).end("t", EndFacts(0, written=ending_of(2, 3, budget="time")))
    TrialFiles(str(tmp_path), "t").write_ending("stopped_by_budget", "stopped by the time budget after epoch 2")
    assert record.finished() == 1

    reopened = record_in(tmp_path)
    unended = reconcile(Decider(reopened, str(tmp_path))) + continue_stopped_by_budget(reopened)
    assert [trial_id_of(t) for t in unended] == ["t"] and unended[0].intermediate_values == {1: 0.6, 2: 0.7}
    assert len(reopened.proposed()) == 1 and reopened.finished() == 0  # the continuation stands for the trial
    again = record_in(tmp_path)  # a kill now: the budget's end.json is older than the continuation
    assert [trial_id_of(t) for t in reconcile(Decider(again, str(tmp_path)))] == ["t"]
    again.report("t", 3, 0.9)
    Decider.without_files(again).end("t", EndFacts(0, written=ending_of(3, 3)))
    assert again.ending("t") == Ending("completed") and again.counts()["completed"] == 1
    assert [t.state for t in again.study.trials] == [TrialState.PRUNED, TrialState.COMPLETE]  # the old one stays


def test_only_the_writer_clears_the_journals_lock_and_a_cut_tail(tmp_path):
    """A reader opening the journal (optuna-dashboard, `report`) while a writer appends must not cut the line being
    written, nor remove the writer's lock; the driver holding the experiment's lock clears both."""
    from search.running.study.journal import journal_storage

    record_in(tmp_path).create("a")
    journal, lock = tmp_path / "study.log", tmp_path / "study.log.lock"
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"op_code": 5, "wor')  # an append in progress
    lock.write_text("held")
    journal_storage(journal)
    assert journal.read_bytes().endswith(b'"wor') and lock.exists()
    journal_storage(journal, writer=True)
    assert journal.read_bytes() == whole and not lock.exists()


def test_the_study_names_its_metric_for_optuna_dashboards_axes(tmp_path):
    record_in(tmp_path)
    assert record_in(tmp_path).study.metric_names == ["val_acc"]


@pytest.mark.parametrize(
    "distribution, inside, outside",
    [
        (optuna.distributions.FloatDistribution(0.1, 1.0, step=0.1), [0.1, 0.3, 1.0], [0.35, 1.1, "a", True]),
        (optuna.distributions.IntDistribution(1, 9, step=2), [1, 5, 9], [2, 11, 3.5]),
        (optuna.distributions.CategoricalDistribution([32, 64, "x"]), [32, "x"], [48, True, "y"]),
    ],
)
def test_a_given_value_is_checked_against_its_distribution_with_optunas_public_api(distribution, inside, outside):
    assert all(contains(distribution, value) for value in inside)
    assert not any(contains(distribution, value) for value in outside)


def test_end_json_follows_the_study(tmp_path):
    record = record_in(tmp_path)
    ends = TrialEnds(Decider(record, str(tmp_path), []), 3)
    record.create("n")  # reports nothing finite: nothing to rank it by, whatever stopped it
    ends.on_trial_complete(0, [], tune_trial("n", 1))
    assert json.loads((tmp_path / "trial_n" / "end.json").read_text())["error"] == "no finite metric was reported"
    assert record.ending("n").status == "failed"


class FullOnce(JournalFileBackend):
    """Optuna's journal file, whose disk is full for one append once armed."""

    armed = False

    def append_logs(self, logs):
        if self.armed:
            self.armed = False
            raise OSError(28, "No space left on device")
        super().append_logs(logs)


def test_a_study_write_that_fails_stops_the_search_and_resume_ends_the_trial_as_it_should_have(tmp_path):
    """ASHA stopped trial t at its rung (the decision written); the write of its end fails (a full disk): nothing
    follows (no end.json, no follower), the trial is still RUNNING for every reader, the search stops, and nothing
    more is written. `resume` carries the written decision out: the trial, run again, ends stopped_early."""
    from search.running.asha.study_asha import StudyASHA
    from search.running.stopping import SessionStop
    from search.running.study.record import StudyWriteFailed

    backend = FullOnce(str(tmp_path / "study.log"))
    study = optuna.create_study(storage=JournalStorage(backend), study_name="search", direction="maximize")
    record = StudyRecord(study, study._storage, SpaceCoding(dict(SPACE)), "val_acc", "max", 3, {"lr_schedule": "none"})
    listening = Listening()
    ends = TrialEnds(Decider(record, str(tmp_path), [listening]), 3, lambda trial_id: True)
    record.create("t")
    record.note_rung("t", 1, "stop")  # as the scheduler writes it, before Tune acts
    record.report("t", 1, 0.2)
    backend.armed = True
    ends.on_trial_complete(0, [], tune_trial("t", 1))
    assert isinstance(record.failure, StudyWriteFailed) and record.failure.exit_code == 1
    assert "the end of trial t: OSError: [Errno 28] No space left on device" in str(record.failure)
    assert SessionStop(failure=lambda: record.failure).stop_all()
    assert not (tmp_path / "trial_t" / "end.json").exists() and listening.heard == []
    with pytest.raises(StudyWriteFailed):
        record.report("t", 2, 0.3)  # nothing more is written
    reader = optuna.load_study(
        study_name="search", storage=JournalStorage(JournalFileBackend(str(tmp_path / "study.log")))
    )
    assert [t.state for t in reader.trials] == [TrialState.RUNNING] and reader.trials[0].intermediate_values == {1: 0.2}

    resumed = record_in(tmp_path)
    decider = Decider(resumed, str(tmp_path), [])
    assert [trial_id_of(t) for t in reconcile(decider)] == ["t"]
    scheduler = StudyASHA(time_attr="epoch", max_t=3, grace_period=1, reduction_factor=2, history=resumed.proposed())
    scheduler.set_search_properties("val_acc", "max")
    assert scheduler.owed_stops == {"t": 1}
    assert scheduler.on_trial_result(None, tune_trial("t", 1), {"epoch": 1, "val_acc": 0.2}) == "STOP"
    TrialEnds(decider, 3, scheduler.stopped_by_me).on_trial_complete(0, [], tune_trial("t", 1))
    assert resumed.ending("t") == Ending("stopped_early", "stopped by ASHA at epoch 1")


def test_a_failed_trials_error_file_that_cannot_be_written_leaves_its_end_heard(tmp_path):
    """The error file is a copy of what Tune writes with its snapshot: a write that fails is logged, and the study,
    `end.json` and every follower still hold the end."""
    record, listening = record_in(tmp_path), Listening()
    ends = TrialEnds(Decider(record, str(tmp_path), [listening]), 3)
    record.create("broken")
    (tmp_path / "trial_broken" / "error.txt").mkdir(parents=True)  # where the file goes: a folder, not writable
    broken = tune_trial("broken", 1)
    broken.error_file = str(tmp_path / "staged-error.txt")
    (tmp_path / "staged-error.txt").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    ends.on_trial_error(0, [], broken)
    assert record.ending("broken").status == "failed" and TrialFiles(str(tmp_path), "broken").ending() is not None
    assert [trial_id for trial_id, _ in listening.heard] == ["broken"]


class Reading(FollowsEnds):
    """A follower that reads the ended trial's statistics, as the live view reads a running trial's."""

    def __init__(self):
        self.seen = {}

    def trial_ended(self, trials, trial_id, ending, tune_trial=None):
        self.seen[trial_id] = dict(tune_trial.run_metadata.metric_analysis)


def test_a_trial_tune_ended_leaves_none_of_tunes_statistics_of_its_metrics_in_the_driver(tmp_path):
    """Tune keeps ~75 KB of statistics of each ended trial's metrics for the whole search; once the decider and its
    followers had the end (completed, failed, or its end.json not writable) they are dropped (trainables.ray_private);
    a running trial's are kept: the live view reads them."""
    from ray.tune.trainable.metadata import _TrainingRunMetadata

    record, reading = record_in(tmp_path), Reading()
    ends = TrialEnds(Decider(record, str(tmp_path), [reading]), 3)
    trials = {}
    for trial_id in ("a", "broken", "b"):
        record.create(trial_id)
        record.report(trial_id, 1, 0.6)
        trials[trial_id] = tune_trial(trial_id, 1, val_acc=0.6)
        trials[trial_id].run_metadata = _TrainingRunMetadata()
        trials[trial_id].run_metadata.update_metric("val_acc", 0.6, step=1)
    trials["broken"].error_file = str(tmp_path / "staged-error.txt")
    (tmp_path / "staged-error.txt").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    (tmp_path / "trial_a" / "end.json").mkdir(parents=True)  # end.json not writable: the decider raises
    ends.on_trial_complete(0, list(trials.values()), trials["a"])
    ends.on_trial_error(0, list(trials.values()), trials["broken"])
    assert record.ending("a") is not None and record.ending("broken").status == "failed"
    assert record.ending("b") is None  # still running
    assert reading.seen["broken"]["val_acc"]["last"] == 0.6  # what followers read is still there when they run
    for ended in ("a", "broken"):
        assert trials[ended].run_metadata.metric_analysis == {} and trials[ended].run_metadata.metric_n_steps == {}
    assert trials["b"].run_metadata.metric_analysis["val_acc"]["last"] == 0.6
