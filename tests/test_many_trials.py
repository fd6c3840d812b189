"""A search of many trials: the driver's per-event questions of the study (one trial, the counts, the best, the ended
ids, the epochs spent) are answered by the record's tally, kept by its own writes, never by listing every trial,
and say exactly what a full scan of the study says. Pure logic: milliseconds, no Ray."""

from __future__ import annotations

import os

import optuna
from optuna.distributions import FloatDistribution

from search.running.study.endings import EndFacts
from search.running.study.queries import StudyQueries
from search.running.study.record import StudyRecord


def _scan(record: StudyRecord) -> tuple:
    """The answers of a reader that scans the whole study."""
    reader = StudyQueries(record.study)
    reader.mode = record.mode
    return reader.counts(), reader.ended_ids(), reader.best(), reader.epochs_spent(), reader.finished()


def _answers(record: StudyRecord) -> tuple:
    return record.counts(), record.ended_ids(), record.best(), record.epochs_spent(), record.finished()


def test_the_tally_answers_as_a_full_scan_and_never_lists_the_study_per_event():
    sampler = optuna.samplers.RandomSampler(seed=0)
    record = StudyRecord.in_memory({"x": FloatDistribution(0, 1)}, "val_acc", "max", sampler, epochs=3)
    assert _answers(record) == _scan(record)  # the tally taken from an empty study
    listed = []
    get_trials = record.study.get_trials
    record.study.get_trials = lambda *a, **k: listed.append(1) or get_trials(*a, **k)
    scores = [0.5, 0.7, 0.7, 0.2, 0.9, 0.9, 0.1]  # ties: the earlier trial stands first, as the scan picks it
    for index in range(len(scores)):
        record.create(f"t{index}")
    for index in (3, 2, 6, 1, 0, 5, 4):  # ending out of order
        last = index % 3 + 1
        for epoch in range(1, last + 1):
            record.report(f"t{index}", epoch, scores[index] - 0.01 * (last - epoch))
        facts = EndFacts(last, stopped_by_scheduler=index % 3 < 2, error="boom" if index == 6 else None)
        record.write_end(f"t{index}", record.decide(f"t{index}", facts))
        assert record.frozen(f"t{index}").number == index
        answers = _answers(record)
        record.study.get_trials = get_trials
        assert answers == _scan(record)
        record.study.get_trials = lambda *a, **k: listed.append(1) or get_trials(*a, **k)
    assert listed == []  # each event's questions cost the same at any size of study
    assert record.best()[1] == "t4"  # 0.9 first reached by t4, ended after t5


def test_a_record_opened_over_an_ended_study_takes_its_tally_from_the_study():
    sampler = optuna.samplers.RandomSampler(seed=1)
    record = StudyRecord.in_memory({"x": FloatDistribution(0, 1)}, "val_acc", "min", sampler, epochs=2)
    for index in range(4):
        record.create(f"u{index}")
        record.report(f"u{index}", 1, 0.3 + index % 2)
        record.write_end(f"u{index}", record.decide(f"u{index}", EndFacts(1, stopped_by_scheduler=True)))
    reopened = StudyRecord(record.study, record.storage, record.coding, "val_acc", "min", 2, {})
    assert _answers(reopened) == _scan(reopened) and reopened.best() == (0.3, "u0")


def test_tunes_snapshot_is_written_at_most_hourly_while_the_search_runs_unless_the_user_said_otherwise(monkeypatch):
    """Tune's experiment snapshot lists every trial and no session restores it: the period is set only around Tune's
    run, and a period the user set is kept (search.running.tuner.tune_snapshot_period)."""
    from search.running.tuner import SNAPSHOT_VARIABLE, tune_snapshot_period

    monkeypatch.delenv(SNAPSHOT_VARIABLE, raising=False)
    with tune_snapshot_period():
        assert os.environ[SNAPSHOT_VARIABLE] == "3600"
    assert SNAPSHOT_VARIABLE not in os.environ
    monkeypatch.setenv(SNAPSHOT_VARIABLE, "auto")
    with tune_snapshot_period():
        assert os.environ[SNAPSHOT_VARIABLE] == "auto"
    assert os.environ[SNAPSHOT_VARIABLE] == "auto"


def test_a_continued_trial_runs_again_in_the_tally_as_in_a_full_scan_without_listing_the_study():
    """ASHA's promotion variant continues ended trials within a search: the tally follows each continuation (taken
    anew only when the continued trial held the best score) and still answers as a full scan."""
    sampler = optuna.samplers.RandomSampler(seed=2)
    record = StudyRecord.in_memory({"x": FloatDistribution(0, 1)}, "val_acc", "max", sampler, epochs=3)
    for index, score in enumerate((0.4, 0.8, 0.6)):
        record.create(f"p{index}")
        record.report(f"p{index}", 1, score)
        record.write_end(f"p{index}", record.decide(f"p{index}", EndFacts(1, stopped_by_scheduler=True)))
    _answers(record)  # the tally taken
    listed, get_trials = [], record.study.get_trials
    record.study.get_trials = lambda *a, **k: listed.append(1) or get_trials(*a, **k)
    record.continue_trial(record.frozen("p2"), promoted_at=1)  # not the best: the tally follows
    answers = _answers(record)
    assert listed == [] and record.tally is not None and answers[4] == 2
    record.study.get_trials = get_trials
    assert answers == _scan(record)
    record.continue_trial(record.frozen("p1"), promoted_at=1)  # the best: the tally is taken anew
    assert record.tally is None and _answers(record) == _scan(record) and record.best() == (0.4, "p0")
    for trial_id, score in (("p1", 0.9), ("p2", 0.7)):
        record.report(trial_id, 2, score)
        record.write_end(trial_id, record.decide(trial_id, EndFacts(2, stopped_by_scheduler=True)))
        assert _answers(record) == _scan(record)
    assert record.best() == (0.9, "p1") and record.counts()["stopped_early"] == 3
