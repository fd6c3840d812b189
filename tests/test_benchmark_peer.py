import pytest

from benchmarks.peer import search_split


def row(started_at: float, epoch_s: float, train_s: float, **first_only) -> dict:
    return {
        "started_at": started_at,
        "epoch_s": epoch_s,
        "train_s": train_s,
        "train_samples": 1000,
        "images_per_s": 1000 / train_s,
        "checkpoint_s": 0.5,
        **first_only,
    }


def test_the_search_wall_splits_into_its_start_trial_seconds_and_the_end():
    t0 = 1_800_000_000.0
    start = {"launch_s": 1.0, "setup_data_s": 0.5, "setup_model_s": 0.5, "setup_ddp_s": 0.0, "process_s": 9.0}
    first = [row(t0 + 10.0, 4.0, 3.0, **start), row(t0 + 15.0, 4.0, 3.0)]  # driver at t0 + 8, ends at t0 + 19.5
    second = [row(t0 + 11.0, 2.0, 1.0, **start)]  # driver at t0 + 9, ends at t0 + 13.5
    split = search_split({"started_at": t0, "ended_at": t0 + 22.0}, [first, second])

    assert split["ray_and_tune_start_s"] == pytest.approx(8.0)  # the trials' process starts (process_s) don't count
    assert split["trials_span_s"] == pytest.approx(11.5) and split["end_s"] == pytest.approx(2.5)
    assert split["trials_at_once"] == 2
    trial_s = split["trial_s"]
    assert trial_s["start"] == pytest.approx(4.0) and trial_s["steps"] == pytest.approx(7.0)
    assert trial_s["eval_and_report"] == pytest.approx(3.0) and trial_s["checkpoint"] == pytest.approx(1.5)
    assert trial_s["between_epochs"] == pytest.approx(0.5)  # epoch 1 reported at t0 + 14.5, epoch 2 began at 15
    assert sum(trial_s.values()) == pytest.approx(2 * 11.5)  # every slot-second is accounted for
    assert split["images_per_s_together"] == pytest.approx(3000 / 11.5)
    assert split["trials_window"] == pytest.approx((t0 + 8.0, t0 + 19.5))
