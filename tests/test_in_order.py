"""The search's schedulers choose the trial Tune starts next exactly as Tune's `FIFOScheduler` does, from the trials
not yet ended alone (search.running.asha.in_order): random runs of adds, starts, pauses, requeues after a failure and
ends, each choice compared. Pure logic: no Ray instance."""

from __future__ import annotations

import random

import pytest
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler

from search.running.asha.in_order import InOrder

EVENTS = ["add", "add", "add", "start", "start", "pause", "requeue", "requeue", "complete", "error", "remove"]


class Controller:
    """Tune's trial list as `TuneController` keeps it: appended when added, a requeued trial moved to its end."""

    def __init__(self):
        self.trials: list = []

    def get_trials(self) -> list:
        return self.trials


class FakeTrial:
    def __init__(self, number: int):
        self.number, self.status = number, Trial.PENDING


@pytest.mark.parametrize("seed", range(5))
def test_it_chooses_as_tunes_fifo_scheduler_at_every_step(seed):
    rng, tune, ours, fifo = random.Random(seed), Controller(), InOrder(), FIFOScheduler()
    started = []
    for step in range(400):
        event = rng.choice(EVENTS)
        live = [t for t in tune.trials if t.status in (Trial.RUNNING, Trial.PAUSED, Trial.PENDING)]
        if event == "add" or not live:
            trial = FakeTrial(step)
            tune.trials.append(trial)
            ours.on_trial_add(tune, trial)
        elif event == "start":
            chosen = ours.choose_trial_to_run(tune)
            assert chosen is fifo.choose_trial_to_run(tune)
            if chosen is not None:
                chosen.status = Trial.RUNNING
                started.append(chosen)
        else:
            trial = rng.choice(live)
            if event == "pause" and trial.status == Trial.RUNNING:
                trial.status = Trial.PAUSED
            elif event == "requeue":  # TuneController._requeue_trial: on_trial_error, PENDING, last, on_trial_add
                ours.on_trial_error(tune, trial)
                trial.status = Trial.PENDING
                tune.trials.remove(trial)
                tune.trials.append(trial)
                ours.on_trial_add(tune, trial)
            elif event == "complete" and trial.status == Trial.RUNNING:
                ours.on_trial_complete(tune, trial, {})
                trial.status = Trial.TERMINATED
            elif event == "remove" and trial.status != Trial.RUNNING:
                ours.on_trial_remove(tune, trial)
                trial.status = Trial.TERMINATED
            elif event == "error":
                ours.on_trial_error(tune, trial)
                trial.status = Trial.ERROR
        assert ours.choose_trial_to_run(tune) is fifo.choose_trial_to_run(tune)
        assert len(ours.unended) == len([t for t in tune.trials if t.status not in (Trial.TERMINATED, Trial.ERROR)])
    assert len(started) > 50 and len(tune.trials) > 80
