"""The live progress view, rendered from stand-in trials (pure logic; Ray is imported, never started)."""

from types import SimpleNamespace

from search.running.callbacks import ProgressView, TrialOutcomes


def trial(trial_id, status, epoch, value, images_per_s=480.0, diverged=False):
    last = {"epoch": epoch, "val_acc": value, "images_per_s": images_per_s, "diverged": diverged} if epoch else {}
    analysis = {"val_acc": {"max": value}} if value is not None else {}
    return SimpleNamespace(
        trial_id=trial_id, status=status, last_result=last, metric_analysis=analysis, path="/x", config={}
    )


def test_view_counts_best_and_estimate_fit_100_columns():
    view = ProgressView(TrialOutcomes(epochs=4, metric="val_acc", mode="max"), total_trials=6, concurrency=2)
    trials = [
        trial("aaaa0001", "TERMINATED", 4, 0.97),
        trial("aaaa0002", "TERMINATED", 1, 0.40),
        trial("aaaa0003", "ERROR", 1, 0.10),
        trial("aaaa0004", "RUNNING", 2, 0.95, images_per_s=512),
        trial("aaaa0005", "RUNNING", 1, 0.80),
        trial("aaaa0006", "PENDING", 0, None),
    ]
    lines = view.render(trials, elapsed=300, latest={"aaaa0005": {"epoch": 2, "val_acc": 0.99, "images_per_s": 300}})
    assert all(len(line) <= 100 for line in lines)
    assert len(lines) == 2  # the epoch reported now, then the status; running trials are not repeated
    assert lines[0].split() == ["aaaa0005", "epoch", "2/4", "val_acc", "0.9900", "300", "img/s"]
    status = lines[-1]
    assert "2 running, 2/6 done, 1 early-stopped, 1 failed" in status
    assert "best val_acc 0.9900 aaaa0005" in status
    assert "~5m00s left" in status  # 3 trials ended in 300 s, 3 to go


def test_no_estimate_before_a_trial_ended():
    view = ProgressView(TrialOutcomes(epochs=3, metric="val_acc", mode="max"), total_trials=2, concurrency=1)
    lines = view.render([trial("b1", "RUNNING", 1, 0.5), trial("b2", "PENDING", 0, None)], elapsed=20)
    assert "left" not in lines[-1] and "0/2 done" in lines[-1]


def test_long_status_wraps_instead_of_overflowing():
    view = ProgressView(TrialOutcomes(epochs=4, metric="val_acc", mode="max"), total_trials=600, concurrency=2)
    trials = [trial("aaaa0001", "TERMINATED", 4, 0.97), trial("aaaa0003", "ERROR", 1, 0.10)]
    lines = view.render(trials, elapsed=30000)
    assert all(len(line) <= 100 for line in lines) and lines[-1].strip() == "best val_acc 0.9700 aaaa0001"


def test_a_trial_still_starting_shows_as_starting_not_running():
    view = ProgressView(TrialOutcomes(epochs=3, metric="val_acc", mode="max"), total_trials=4, concurrency=1)
    lines = view.render([trial("c1", "RUNNING", 2, 0.5), trial("c2", "RUNNING", 0, None)], elapsed=20)
    assert len(lines) == 1 and "1 running, 1 starting, 0/4 done" in lines[0]


def test_a_trial_end_prints_the_event_and_the_status_once():
    view = ProgressView(TrialOutcomes(epochs=3, metric="val_acc", mode="max"), total_trials=3, concurrency=2)
    ended = trial("d1", "TERMINATED", 3, 0.9)
    lines = view.render(
        [ended, trial("d2", "RUNNING", 2, 0.5)], elapsed=40, event="trial d1 finished: completed", ended=ended
    )
    assert lines[0] == "[ 0m40s] trial d1 finished: completed"
    assert len(lines) == 2 and "1 running, 1/3 done" in lines[1] and "best val_acc 0.9000 d1" in lines[1]


def test_the_estimate_counts_down_between_trial_ends():
    view = ProgressView(TrialOutcomes(epochs=3, metric="val_acc", mode="max"), total_trials=4, concurrency=1)
    trials = [trial("e1", "TERMINATED", 3, 0.9), trial("e2", "RUNNING", 1, 0.5)]
    assert "~6m00s left" in view.render(trials, elapsed=120)[-1]  # 1 trial ended in 2 min, 3 to go
    assert "~4m20s left" in view.render(trials, elapsed=220)[-1]  # the same estimate, 100 s later
    assert "~0m00s left" in view.render(trials, elapsed=900)[-1]  # overdue: never below zero
    trials.append(trial("e3", "TERMINATED", 1, 0.4))
    assert "~15m00s left" in view.render(trials, elapsed=900)[-1]  # another ended: 2 in 15 min, 2 to go


def test_a_resumed_search_counts_what_earlier_sessions_ended_and_their_best():
    earlier = {"completed": 2, "stopped_early": 1, "failed": 0, "best": (0.98, "bbbb0001")}
    view = ProgressView(TrialOutcomes(epochs=4, metric="val_acc", mode="max"), 6, 2, earlier)
    lines = view.render([trial("aaaa0004", "RUNNING", 2, 0.95)], elapsed=60)
    assert "1 running, 3/6 done, 1 early-stopped, 0 failed | best val_acc 0.9800 bbbb0001" in lines[-1]
