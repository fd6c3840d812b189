"""The live progress view, rendered from stand-in Tune trials over a real study in memory (pure logic; Ray is
imported, never started). How trials ended and the best ended score come from the study; the clock counts from the
command's start."""

import io
import subprocess
import sys
import time
from types import SimpleNamespace

import optuna

from search.running import clock
from search.running.clock import MOST_BEFORE_MAIN_S, clock_prefix, command_began, process_age_s, start_clock
from search.running.ends.decider import Decider
from search.running.live_view import ProgressView, event_words
from search.running.status_line import CLEAR
from search.running.study.endings import EndFacts, Ending, ending_of
from search.running.study.record import StudyRecord

SPACE = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}


def record_with(ends: dict, epochs: int = 4) -> StudyRecord:
    """A study whose trials ended as `ends` says: {trial id: (epochs run, val_acc, how it ended)}."""
    record = StudyRecord.in_memory(SPACE, "val_acc", "max", optuna.samplers.RandomSampler(seed=0), epochs)
    for trial_id, (epochs_run, value, ending) in ends.items():
        record.create(trial_id)
        for epoch in range(1, epochs_run + 1):
            record.report(trial_id, epoch, value)
        Decider.without_files(record).end(trial_id, EndFacts(0, written=ending))
    return record


def trial(trial_id, status, epoch, value, images_per_s=480.0):
    last = {"epoch": epoch, "val_acc": value, "images_per_s": images_per_s} if epoch else {}
    analysis = {"val_acc": {"max": value}} if value is not None else {}
    return SimpleNamespace(
        trial_id=trial_id, status=status, last_result=last, metric_analysis=analysis, path="/x", config={}
    )


def view_of(record, total, budget_s=0.0):
    return ProgressView(record, epochs=record.epochs, total_trials=total, budget_s=budget_s)


ENDS = {
    "aaaa0001": (4, 0.97, ending_of(4, 4)),
    "aaaa0002": (1, 0.40, ending_of(1, 4)),
    "aaaa0003": (1, 0.10, ending_of(1, 4, error="RuntimeError: boom")),
}


def test_view_counts_best_and_estimate_fit_100_columns():
    view = view_of(record_with({}), total=6)
    view.record = record_with(ENDS)  # three trials ended since the view started
    trials = [
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
    lines = view_of(record_with({}), 2).render([trial("b1", "RUNNING", 1, 0.5), trial("b2", "PENDING", 0, None)], 20)
    assert "left" not in lines[-1] and "0/2 done" in lines[-1]


def test_long_status_wraps_instead_of_overflowing():
    lines = view_of(record_with(ENDS), total=600, budget_s=36000).render([], elapsed=30000)
    assert all(len(line) <= 100 for line in lines) and lines[-1].strip() == "best val_acc 0.9700 aaaa0001"


def test_a_trial_still_starting_shows_as_starting_not_running():
    lines = view_of(record_with({}), 4).render([trial("c1", "RUNNING", 2, 0.5), trial("c2", "RUNNING", 0, None)], 20)
    assert len(lines) == 1 and "1 running, 1 starting, 0/4 done" in lines[0]


def test_a_trial_end_prints_the_event_from_the_study_and_the_status_once():
    record = record_with({"d1": (3, 0.9, ending_of(3, 3))}, epochs=3)
    view = view_of(record, 3)
    ended = trial("d1", "RUNNING", 3, 0.9)  # Tune marks it TERMINATED after the callbacks
    lines = view.render([ended, trial("d2", "RUNNING", 2, 0.5)], 40, event_words("d1", record.ending("d1")))
    assert lines[0] == "[ 0m40s] trial d1 finished: completed"
    assert len(lines) == 2 and "1 running, 1/3 done" in lines[1] and "best val_acc 0.9000 d1" in lines[1]


def test_under_the_promotion_variant_a_trial_stopped_at_a_rung_is_paused_until_the_search_ends(capsys):
    """asha=promote: a trial ASHA stops at a rung may go on (promoted, before or after a `resume`), so
    the view says paused, not finished, and counts it paused; a terminal's last status line, once the session ended,
    early-stopped."""
    record = record_with({"e1": (1, 0.5, ending_of(1, 4)), "e2": (4, 0.9, ending_of(4, 4))})
    view = ProgressView(record, epochs=4, total_trials=3, pauses=True)
    view.trial_ended([], "e1", record.ending("e1"))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("] trial e1 paused after epoch 1 (ASHA's rung: it goes on if promoted)")
    assert "] 0 running, 2/3 done, 1 paused, 0 failed | best val_acc 0.9000 e2" in lines[1] and len(lines) == 2
    view.trial_ended([], "e2", record.ending("e2"))
    assert "trial e2 finished: completed" in capsys.readouterr().out
    *_, (words, _, _) = view._parts([], 60, None, {}, final=True)
    assert "2/3 done, 1 early-stopped, 0 failed" in words
    assert event_words("e1", record.ending("e1")) == "trial e1 finished: stopped_early"  # stopping ASHA: as before


def test_a_trial_the_budget_stopped_says_so_and_the_time_budget_left_shows():
    record = record_with({"f1": (2, 0.8, ending_of(2, 4, budget="time"))})
    assert (
        event_words("f1", record.ending("f1")) == "trial f1 finished: stopped_by_budget (stopped by the time "
        "budget after epoch 2)"
    )
    status = " ".join(view_of(record, 4, budget_s=90).render([], elapsed=30))
    assert "1/4 done, 0 early-stopped, 1 budget-stopped, 0 failed" in status and "budget 1m00s left" in status


def test_a_failed_trial_names_its_cause_and_its_error_file_where_the_experiment_lives():
    """Tune names a trial's folder on a URI without its scheme (`bucket/runs/w/trial_g1`): the line names the URI."""
    failed = Ending("failed", "RuntimeError: boom")
    assert event_words("g1", failed) == "trial g1 failed: RuntimeError: boom"
    on_s3 = SimpleNamespace(error_file="/tmp/staging/trial_g1/error.txt", path="bucket/runs/w/trial_g1")
    assert event_words("g1", failed, on_s3, "s3://bucket/runs?endpoint_override=127.0.0.1:9000") == (
        "trial g1 failed: RuntimeError: boom\n  see s3://bucket/runs/w/trial_g1/error.txt?endpoint_override=127.0.0.1:9000"
    )
    local = SimpleNamespace(error_file="/runs/w/trial_g1/error.txt", path="/runs/w/trial_g1")
    assert event_words("g1", failed, local, "/runs").endswith("\n  see /runs/w/trial_g1/error.txt")


def test_the_live_view_names_error_files_where_the_experiment_lives_now_not_where_run_was_told(tmp_path):
    """A resumed experiment that moved (or a URI's downloaded copy): its settings keep the storage `run` was given."""
    from search.commands import parse_run
    from search.running.tuner import followers_of
    from trainables.foundation.storage import Experiment

    config, _ = parse_run(["space=mlp_mnist", f"storage={tmp_path / 'given'}", "name=w"])
    moved = Experiment.at(str(tmp_path / "moved" / "w"))
    views = [f for f in followers_of(config, moved, record_with({}), None, []) if isinstance(f, ProgressView)]
    failed = SimpleNamespace(error_file="error.txt", path=str(tmp_path / "moved" / "w" / "trial_g1"))
    assert [view.storage for view in views] == [str(tmp_path / "moved")]
    assert event_words("g1", Ending("failed", "boom"), failed, views[0].storage).endswith("/moved/w/trial_g1/error.txt")


def test_the_estimate_counts_down_between_trial_ends():
    view = view_of(record_with({}), 4)
    view.record = record_with({"e1": (4, 0.9, ending_of(4, 4))})
    trials = [trial("e2", "RUNNING", 1, 0.5)]
    assert "~6m00s left" in view.render(trials, elapsed=120)[-1]  # 1 trial ended in 2 min, 3 to go
    assert "~4m20s left" in view.render(trials, elapsed=220)[-1]  # the same estimate, 100 s later
    assert "~0m00s left" in view.render(trials, elapsed=900)[-1]  # overdue: never below zero
    view.record = record_with({"e1": (4, 0.9, ending_of(4, 4)), "e3": (1, 0.4, ending_of(1, 4))})
    assert "~15m00s left" in view.render(trials, elapsed=900)[-1]  # another ended: 2 in 15 min, 2 to go


def test_a_resumed_search_counts_what_earlier_sessions_ended_and_their_best():
    earlier = {
        "bbbb0001": (4, 0.98, ending_of(4, 4)),
        "bbbb0002": (4, 0.90, ending_of(4, 4)),
        "bbbb0003": (1, 0.30, ending_of(1, 4)),
    }
    lines = view_of(record_with(earlier), 6).render([trial("aaaa0004", "RUNNING", 2, 0.95)], elapsed=60)
    assert "1 running, 3/6 done, 1 early-stopped, 0 failed | best val_acc 0.9800 bbbb0001" in lines[-1]
    assert "left" not in lines[-1]  # nothing ended since the view started


def test_the_estimate_starts_when_the_first_epoch_began_not_when_ray_started():
    view = view_of(record_with({}), 4)
    trials = [trial("h1", "RUNNING", 1, 0.5)]
    view.render(trials, elapsed=25, latest={"h1": {"epoch": 1, "val_acc": 0.5, "epoch_s": 5.0}})  # began at 20 s
    view.record = record_with({"h0": (4, 0.9, ending_of(4, 4))})
    assert "~5m00s left" in view.render(trials, elapsed=120)[-1]  # 1 trial in the 100 s since, 3 to go


def test_a_recovered_epoch_does_not_start_the_estimate():
    view = view_of(record_with({}), 4)
    trials = [trial("h1", "RUNNING", 1, 0.5)]
    view.render(trials, elapsed=25, latest={"h1": {"epoch": 1, "epoch_s": 5.0, "recovered": True}})
    view.render(trials, elapsed=40, latest={"h1": {"epoch": 2, "epoch_s": 10.0}})  # trained here: began at 30 s
    view.record = record_with({"h0": (4, 0.9, ending_of(4, 4))})
    assert "~4m30s left" in view.render(trials, elapsed=120)[-1]


def test_once_the_time_budget_is_spent_no_time_is_left_to_estimate():
    view = view_of(record_with({}), 6, budget_s=600)
    view.record = record_with({"k1": (4, 0.9, ending_of(4, 4))})
    trials = [trial("k2", "RUNNING", 2, 0.5)]
    status = " ".join(view.render(trials, elapsed=200))
    assert "budget 6m40s left | ~6m40s left" in status  # 5 trials x 200 s to go, but the budget stops them first
    status = " ".join(view.render(trials, elapsed=601))
    assert "time budget spent: the trials stop" in status and "~" not in status and "m left" not in status


# ---------------------------------------------------------------- the clock counts from the command's start


def test_the_clock_counts_from_the_commands_start_and_the_budget_from_tunes():
    """Ray took 24 s to start: the first status says 0m54s 30 s into Tune, while the time budget (which starts with
    the first trial) still has 60 of its 90 s."""
    view = ProgressView(record_with({}), epochs=4, total_trials=4, budget_s=90, began=time.monotonic() - 24)
    assert 24 <= view.lead < 25
    status = view.render([trial("e1", "RUNNING", 1, 0.5)], elapsed=30)[-1]
    assert status.startswith("[ 0m54s] 1 running, 0/4 done") and "budget 1m00s left" in status
    view.setup()  # Tune's setup, later: the lead grows with it, the command's start stays
    assert view.lead >= 24 and view_of(record_with({}), 4).lead == 0.0  # no command start: the view's own


def test_a_process_age_is_read_from_its_start_ticks_and_the_time_since_boot():
    fields = ["S", "1"] + ["0"] * 17 + ["5000"] + ["0"] * 30  # the 22nd field: started 5000 ticks after boot
    stat = "4242 (python -m (odd) name) " + " ".join(fields)
    assert process_age_s(stat, "62.50 1000.00", 100) == 12.5
    assert process_age_s(stat, "49.00 1000.00", 100) is None  # before its own start: not an age
    assert process_age_s(stat, f"{50 + MOST_BEFORE_MAIN_S + 1} 0", 100) is None  # a notebook's kernel, not a command


def test_this_process_age_counts_the_seconds_before_the_command():
    code = "import time; time.sleep(0.3); from search.running.clock import this_process_age_s as a; print(a())"
    age = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 0.29 <= age < 10, age  # /proc counts in ticks of 10 ms


def test_the_drivers_lines_carry_the_commands_clock(monkeypatch):
    monkeypatch.setattr(clock, "_began", [])
    assert clock_prefix() == "" and command_began() is None
    origin = start_clock(age_s=3.4)
    assert command_began() == origin and clock_prefix() == "[ 0m03s] "
    assert clock.clock_words(3725) == "1h02m" and clock.clock_words(605) == "10m05s"


# ---------------------------------------------------------------- on a terminal: the status line rewritten in place


class Terminal(io.StringIO):
    """What the view writes to a terminal (a stand-in stdout that says it is one)."""

    def isatty(self):
        return True


def screen(text: str) -> list[str]:
    """The lines a terminal shows for `text`: a carriage return and an erase empty the current line."""
    lines = [""]
    for chunk in text.split(CLEAR):
        lines[-1] = ""
        first, *rest = chunk.split("\n")
        lines[-1] += first
        lines += rest
    return lines


def test_on_a_terminal_trial_ends_stay_and_the_status_is_rewritten_under_them(monkeypatch):
    monkeypatch.setattr(sys, "stdout", Terminal())
    monkeypatch.setenv("COLUMNS", "100")
    view = view_of(record_with({}, epochs=3), 3)
    trials = [trial("d1", "RUNNING", 2, 0.8), trial("d2", "RUNNING", 1, 0.4)]
    view._show(trials, latest={"d1": {"epoch": 2, "val_acc": 0.8, "images_per_s": 100}})
    view._show(trials, latest={"d2": {"epoch": 2, "val_acc": 0.6, "images_per_s": 100}})
    assert "epoch 2/3" not in sys.stdout.getvalue()  # no epoch lines on a terminal
    assert screen(sys.stdout.getvalue())[-1].endswith(
        "2 running, 0/3 done, 0 early-stopped, 0 failed | best val_acc 0.8000 d1"
    )
    view.record = record_with({"d1": (3, 0.9, ending_of(3, 3))}, epochs=3)
    view.trial_ended(trials, "d1", view.record.ending("d1"))
    view._show(trials[1:], latest={"d2": {"epoch": 3, "val_acc": 0.7, "images_per_s": 100}})
    shown = screen(sys.stdout.getvalue())
    assert len(shown) == 2 and shown[0].endswith("] trial d1 finished: completed | 3 epochs, val_acc 0.9000"), shown
    assert "1 running, 1/3 done" in shown[1] and "best val_acc 0.9000 d1" in shown[1], shown
    assert not sys.stdout.getvalue().endswith("\n")  # the status line stays open for the next rewrite
    view.on_experiment_end(trials)  # the search's end: the status once more, its line ended
    assert sys.stdout.getvalue().endswith("\n") and len(screen(sys.stdout.getvalue())) == 3


def test_a_terminals_status_line_fits_its_width_and_never_wraps(monkeypatch):
    monkeypatch.setattr(sys, "stdout", Terminal())
    monkeypatch.setenv("COLUMNS", "90")
    view_of(record_with(ENDS), total=600, budget_s=36000)._show([])
    status = screen(sys.stdout.getvalue())
    assert len(status) == 1 and len(status[0]) < 90, status
    assert "| budget 9h59m left" in status[0] and "best" not in status[0]  # the best dropped first


def test_piped_or_verbose_the_lines_are_plain_as_in_a_log_file(monkeypatch):
    latest = {"d1": {"epoch": 2, "val_acc": 0.8, "images_per_s": 100}}
    for stdout, verbose in ((io.StringIO(), 0), (Terminal(), 1)):
        monkeypatch.setattr(sys, "stdout", stdout)
        view = ProgressView(record_with({}, epochs=3), epochs=3, total_trials=3, verbose=verbose)
        view._show([trial("d1", "RUNNING", 1, 0.5)], latest=latest)
        lines = stdout.getvalue().splitlines()
        assert CLEAR not in stdout.getvalue() and stdout.getvalue().endswith("\n")
        assert lines[0].split() == ["d1", "epoch", "2/3", "val_acc", "0.8000", "100", "img/s"]
        assert "1 running, 0/3 done" in lines[1] and len(lines) == 2


# ---------------------------------------------------------------- the estimate's floor: what running trials need


def test_the_estimate_is_never_below_the_epochs_the_running_trials_still_need():
    view = view_of(record_with({}), 4)
    view.record = record_with({"e1": (4, 0.9, ending_of(4, 4))})  # 1 trial in 2 min: ~6m00s for the 3 to go
    trials = [trial("e2", "RUNNING", 1, 0.5)]
    slow = {"e2": {"epoch": 1, "val_acc": 0.5, "epoch_s": 200.0}}
    assert "~10m00s left" in view.render(trials, elapsed=120, latest=slow)[-1]  # 3 epochs of 200 s still to train
    view = view_of(record_with({}), 4)
    view.record = record_with({"e1": (4, 0.9, ending_of(4, 4))})
    view.render(trials, elapsed=120)
    assert (
        "~0m20s left" in view.render(trials, 880, latest={"e2": {"epoch": 2, "epoch_s": 10.0}})[-1]
    )  # overdue by pace
    assert "~0m10s left" in view.render(trials, elapsed=890)[-1]  # counting down through the epoch under way
    assert "~0m10s left" in view.render(trials, elapsed=950)[-1]  # that epoch late: the one after it still to run


def test_no_estimate_once_every_trial_ended():
    failed = {f"f{n}": (1, 0.1, ending_of(1, 4, error="RuntimeError: boom")) for n in range(2)}
    view = view_of(record_with({}), 2)
    view.record = record_with(failed)
    assert "left" not in " ".join(view.render([], elapsed=60)) and "0/2 done" in view.render([], elapsed=60)[-1]


def test_the_view_walks_the_trials_it_saw_start_never_tunes_list_of_every_trial(monkeypatch):
    """Tune hands each callback its list of every trial the search ever had: the view counts the trials it saw start
    (`on_trial_start`) that have not ended, so an event costs the same at any size of search."""
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    view = ProgressView(record_with({}, epochs=3), epochs=3, total_trials=9)
    first, second, third = (
        trial("s1", "RUNNING", 1, 0.5),
        trial("s2", "RUNNING", 1, 0.6),
        trial("s3", "PENDING", 0, None),
    )
    for started in (first, second):
        view.on_trial_start(0, [first, second, third], started)
    view.on_trial_result(0, [], first, {"epoch": 1, "val_acc": 0.5})
    second.status = "TERMINATED"  # Tune ended it; its end is heard later
    view.on_trial_result(0, [], first, {"epoch": 2, "val_acc": 0.55})
    statuses = [line for line in sys.stdout.getvalue().splitlines() if "done" in line]
    assert "2 running, 0/9 done" in statuses[0] and "1 running, 0/9 done" in statuses[1], statuses
    assert list(view.started) == ["s1"]


def test_an_epoch_a_promoted_trial_reports_anew_from_its_files_is_not_shown_twice(capsys):
    """A promoted trial reports its recorded epochs again as it resumes (marked `recovered`): shown once in the
    command that trained them; an interrupted search's `resume` shows what it recovers, saying so."""
    view, promoted = view_of(record_with({}), 4), trial("p1", "RUNNING", 1, 0.5)
    view.on_trial_result(0, [], promoted, {"epoch": 1, "val_acc": 0.5, "images_per_s": 480.0})
    view.on_trial_result(0, [], promoted, {"epoch": 1, "val_acc": 0.5, "images_per_s": 480.0, "recovered": True})
    view.on_trial_result(0, [], promoted, {"epoch": 2, "val_acc": 0.6, "images_per_s": 480.0})
    shown = [line for line in capsys.readouterr().out.splitlines() if " epoch " in line]
    assert [line.split()[:3] for line in shown] == [["p1", "epoch", "1/4"], ["p1", "epoch", "2/4"]], shown
    resumed = view_of(record_with({}), 4)  # a later command: nothing of it shown yet
    resumed.on_trial_result(0, [], promoted, {"epoch": 1, "val_acc": 0.5, "images_per_s": 480.0, "recovered": True})
    assert "p1           epoch 1/4  val_acc 0.5000  480 img/s  (recovered from its files)" in capsys.readouterr().out


def test_a_promoted_trial_keeps_its_score_in_the_best_while_it_resumes(capsys):
    """A promoted trial runs again as a continuation (no longer an ended trial of the study): until Tune has its first
    result, the best so far is its score from the study, not the next ended trial's."""
    record = record_with({"p1": (1, 0.91, ending_of(1, 4)), "q1": (1, 0.89, ending_of(1, 4))})
    view = view_of(record, 4)
    record.continue_trial(record.frozen("p1"), promoted_at=1)
    resumed = trial("p1", "RUNNING", 0, None)
    view.on_trial_start(0, [], resumed)
    out = capsys.readouterr().out
    assert "trial p1 resumed after epoch 1" in out and "best val_acc 0.9100 p1" in out, out
    view.trial_ended([], "p1", ending_of(4, 4))
    assert view.carried == {}
