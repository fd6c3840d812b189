"""Tune's state files made whole and consistent before a restore (search.running.tune_state): files like those a
kill during Tune's in-place copies leaves, no Ray instance."""

import json
import pickle

import pytest

from search.running.tune_state import (
    TUNER_COPY,
    TUNER_FILE,
    KeepExperimentState,
    keep_tuner_copy,
    prepare_restore,
    set_aside_sessions_after,
)
from trainables.foundation.trial_files import tune_knows

OLD, NEW = "2026-01-01_00-00-00", "2026-01-02_00-00-00"
# trial ids as Tune makes them: a reader looks for them in the state as text


def experiment_state(statuses: dict[str, str]) -> str:
    trials = [[json.dumps({"trial_id": trial, "status": status}), {}] for trial, status in statuses.items()]
    return json.dumps({"trial_data": trials, "runner_data": {}})


def generator_state(counter: int, live: set[str]) -> bytes:
    limiter = {"max_concurrent": 2, "live_trials": live, "num_unfinished_live_trials": len(live)}
    return pickle.dumps({"counter": counter, "total_samples": 8, "finished": False, "experiment": None,
                         "name:ConcurrencyLimiter": limiter})  # fmt: skip


def loaded(path) -> dict:
    return pickle.loads(path.read_bytes())


class FreshSearcher:
    def save(self, path: str) -> None:
        with open(path, "wb") as file:
            pickle.dump({"fresh": True}, file)


@pytest.fixture
def folder(tmp_path):
    """Two sessions: the older named 3 trials; the newer 4, one still running."""
    (tmp_path / f"experiment_state-{OLD}.json").write_text(experiment_state({"aa11aa11": "TERMINATED", "bb22bb22": "RUNNING", "cc33cc33": "PENDING"}))
    (tmp_path / f"search_gen_state-{OLD}.json").write_bytes(generator_state(3, {"bb22bb22", "cc33cc33"}))
    (tmp_path / f"searcher-state-{OLD}.pkl").write_bytes(pickle.dumps({"study": "old"}))
    (tmp_path / f"experiment_state-{NEW}.json").write_text(experiment_state({"aa11aa11": "TERMINATED", "bb22bb22": "TERMINATED", "cc33cc33": "ERROR", "dd44dd44": "RUNNING"}))
    (tmp_path / f"search_gen_state-{NEW}.json").write_bytes(generator_state(4, {"cc33cc33", "dd44dd44"}))
    (tmp_path / f"searcher-state-{NEW}.pkl").write_bytes(pickle.dumps({"study": "new"}))
    return tmp_path


def test_whole_and_consistent_files_are_left_as_they_are(folder):
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert prepare_restore(folder, FreshSearcher) == (4, NEW)
    assert {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()} == before


def test_a_cut_newest_search_state_is_set_aside_and_the_older_one_counts_every_named_trial(folder):
    """CI, 2026-11-24: the newest search_gen_state cut to 0 bytes made Tune's restore fail and start afresh."""
    (folder / f"search_gen_state-{NEW}.json").write_bytes(b"")
    assert prepare_restore(folder, FreshSearcher) == (4, NEW)
    assert (folder / ".search" / f"damaged-search_gen_state-{NEW}.json").is_file()
    state = loaded(folder / f"search_gen_state-{OLD}.json")
    assert state["counter"] == 4 and state["finished"] is False
    assert state["name:ConcurrencyLimiter"]["live_trials"] == {"cc33cc33", "dd44dd44"}  # ERROR is resumed; TERMINATED is not


def test_a_cut_newest_experiment_state_lowers_a_newer_count_to_the_trials_tune_restores(folder):
    """Restoring the older state with the newer count would leave a trial never made: `resume` said interrupted."""
    (folder / f"experiment_state-{NEW}.json").write_text('{"trial_da')
    assert prepare_restore(folder, FreshSearcher) == (3, OLD)
    state = loaded(folder / f"search_gen_state-{NEW}.json")
    assert state["counter"] == 3 and state["name:ConcurrencyLimiter"]["live_trials"] == {"bb22bb22", "cc33cc33"}


def test_a_trial_only_its_files_know_is_counted_as_made(folder):
    (folder / f"experiment_state-{NEW}.json").write_bytes(b"")
    (folder / "trial_dd44dd44").mkdir()
    (folder / "trial_dd44dd44" / "result.json").write_text('{"epoch": 1, "val_acc": 0.5}\n')
    assert prepare_restore(folder, FreshSearcher) == (3, OLD)
    assert loaded(folder / f"search_gen_state-{NEW}.json")["counter"] == 4


def test_without_a_whole_searcher_state_a_fresh_one_is_written(folder):
    for session in (OLD, NEW):
        (folder / f"searcher-state-{session}.pkl").write_bytes(b"\x80\x05")
    prepare_restore(folder, FreshSearcher)
    assert loaded(folder / f"searcher-state-{NEW}.pkl") == {"fresh": True}


def test_a_cut_tuner_file_is_put_back_from_the_copy_kept_at_the_start(folder):
    (folder / TUNER_FILE).write_bytes(pickle.dumps({"tuner": 1}))
    keep_tuner_copy(folder)
    (folder / TUNER_FILE).write_bytes(pickle.dumps({"tuner": 1})[:7])
    keep_tuner_copy(folder)  # a cut one never replaces the copy
    prepare_restore(folder, FreshSearcher)
    assert pickle.loads((folder / TUNER_FILE).read_bytes()) == {"tuner": 1}
    assert (folder / TUNER_COPY).read_bytes() == (folder / TUNER_FILE).read_bytes()


def test_the_files_of_a_session_that_failed_to_restore_are_moved_out_of_tunes_way(folder):
    KeepExperimentState(folder).on_step_end(iteration=1, trials=[])  # its kept copy would be put back otherwise
    set_aside_sessions_after(folder, OLD, "unrestored")
    assert prepare_restore(folder, FreshSearcher) == (3, OLD)
    assert sorted(path.name for path in folder.glob("*state-*")) == [
        f"experiment_state-{OLD}.json", f"search_gen_state-{OLD}.json", f"searcher-state-{OLD}.pkl"]
    assert (folder / ".search" / f"unrestored-experiment_state-{NEW}.json").is_file()


def test_a_cut_experiment_state_is_put_back_from_the_whole_copy_kept_beside_it(folder):
    """Without it, the trials only the cut state named would be known to their files alone, never run again."""
    KeepExperimentState(folder).on_step_end(iteration=1, trials=[])
    newest = folder / f"experiment_state-{NEW}.json"
    whole = newest.read_text()
    newest.write_text(whole[:50])
    assert prepare_restore(folder, FreshSearcher) == (4, NEW)
    assert newest.read_text() == whole
    assert (folder / ".search" / f"damaged-experiment_state-{NEW}.json").read_text() == whole[:50]


def test_the_kept_copy_follows_tunes_newest_state_and_never_takes_a_half_copied_one(folder):
    keeper, newest = KeepExperimentState(folder), folder / f"experiment_state-{NEW}.json"
    keeper.on_step_end(iteration=1, trials=[])
    kept = folder / ".search" / newest.name
    assert kept.read_text() == newest.read_text()
    newest.write_text(experiment_state({"aa11aa11": "TERMINATED"})[:30])  # Tune is copying it
    keeper.on_step_end(iteration=2, trials=[])
    assert len(json.loads(kept.read_text())["trial_data"]) == 4  # still the whole one
    newest.write_text(experiment_state({"aa11aa11": "TERMINATED"}))
    keeper.on_step_end(iteration=3, trials=[])
    assert len(json.loads(kept.read_text())["trial_data"]) == 1


def test_a_trial_waits_for_the_kept_copy_to_name_it_not_for_tunes_own(folder):
    """Tune's own file can be cut after naming the trial; the kept copy cannot. Without any copy (a search started
    before copies were kept), Tune's own is read."""
    assert tune_knows(str(folder), "dd44dd44")
    (folder / ".search").mkdir()
    (folder / ".search" / f"experiment_state-{OLD}.json").write_text(experiment_state({"aa11aa11": "TERMINATED"}))
    assert tune_knows(str(folder), "aa11aa11") and not tune_knows(str(folder), "dd44dd44")
    KeepExperimentState(folder).on_step_end(iteration=1, trials=[])
    assert tune_knows(str(folder), "dd44dd44")
