"""Optuna's private internals sit behind one door (search/running/study/optuna_private.py): with the tested Optuna they
are all where it expects them; with an Optuna that moved one, `run` stops before it claims the experiment, with one line
naming the Optuna version. No Ray."""

import subprocess
import sys

import optuna

from search.running.study import optuna_private
from tests.conftest import MNIST_MINI, REPO


def test_the_tested_optuna_has_every_internal_where_the_door_expects_it(monkeypatch):
    assert optuna.__version__ == optuna_private.TESTED_OPTUNA
    assert optuna_private.internals_moved() is None
    # the check reads signatures, not only names: a storage method that takes its arguments otherwise is named
    from optuna.storages import BaseStorage

    monkeypatch.setattr(BaseStorage, "set_trial_state_values", lambda self, trial_id, state: None)
    assert optuna_private.internals_moved() == "BaseStorage.set_trial_state_values(self, trial_id, state, values)"


def test_an_optuna_that_moved_an_internal_stops_run_in_one_line_naming_its_version(tmp_path):
    # as if this Optuna's TPE read the past trials' parameters otherwise: the hook the door overrides is gone
    code = (
        "import sys; from optuna.samplers import TPESampler; del TPESampler._get_params; "
        "from search.__main__ import main; "
        f"sys.exit(main(['run', 'space=mlp_mnist', 'data.root={MNIST_MINI}', 'storage={tmp_path}', 'trials=1']))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line, line
    assert line.startswith(f"error: Optuna {optuna.__version__} keeps its internals elsewhere"), line
    assert "TPESampler._get_params" in line and f"install optuna=={optuna_private.TESTED_OPTUNA}" in line
    assert not any(tmp_path.iterdir())  # nothing claimed, nothing written


def test_the_listed_journal_storage_lists_each_state_as_optunas_own_after_any_write_by_any_writer(tmp_path):
    """Two writers on one journal (this process's study and another's), every kind of write in a random order: after
    each, this storage's listing of every state (and of all) is Optuna's own journal storage's, trial for trial."""
    import random

    from optuna.distributions import FloatDistribution
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    journal = str(tmp_path / "study.log")
    ours = optuna_private.ListedJournalStorage(JournalFileBackend(journal))
    plain, other = JournalStorage(JournalFileBackend(journal)), JournalStorage(JournalFileBackend(journal))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = [optuna.create_study(storage=ours, study_name="s")]
    studies.append(optuna.load_study(storage=other, study_name="s"))
    study_id, rng, running, met = studies[0]._study_id, random.Random(0), [], set()
    wanted = [None, (TrialState.WAITING,), (TrialState.RUNNING,), (TrialState.COMPLETE, TrialState.PRUNED)]
    wanted += [(TrialState.FAIL,), (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING), tuple(TrialState)]
    seen = lambda storage, states: [  # noqa: E731
        (t.number, t.state, t.params, t.values, t.intermediate_values, t.user_attrs)
        for t in storage.get_all_trials(study_id, deepcopy=rng.random() < 0.2, states=states)
    ]
    for step in range(300):
        study = rng.choice(studies)
        action = rng.random()
        if action < 0.3 or not running:
            running.append((study, study.ask({"x": FloatDistribution(0, 1)})))
        elif action < 0.4:
            study.enqueue_trial({"x": rng.random()})
        elif action < 0.6:
            _, trial = rng.choice(running)
            trial.report(rng.random(), step)
        elif action < 0.7:
            _, trial = rng.choice(running)
            trial.set_user_attr("step", step)
        else:
            asker, trial = running.pop(rng.randrange(len(running)))
            state = rng.choice([TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL])
            asker.tell(trial, rng.random() if state == TrialState.COMPLETE else None, state=state)
        states = rng.choice(wanted)
        assert seen(ours, states) == seen(plain, states), (step, states)
        met |= {t.state for t in plain.get_all_trials(study_id, deepcopy=False)}
    assert met == set(TrialState), "every state was met"


def test_the_listed_storage_brings_up_what_a_refused_write_left_and_knows_no_deleted_study(tmp_path):
    """Another writer finishes a trial, then this one's write to it is refused mid-replay: the other's line still
    counts; and a deleted study is not listed, as Optuna's own storage refuses it."""
    import pytest
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    journal = str(tmp_path / "study.log")
    ours = optuna_private.ListedJournalStorage(JournalFileBackend(journal))
    plain, other = JournalStorage(JournalFileBackend(journal)), JournalStorage(JournalFileBackend(journal))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=ours, study_name="s")
    trial = study.ask()
    assert [t.state for t in ours.get_all_trials(study._study_id)] == [TrialState.RUNNING]
    optuna.load_study(storage=other, study_name="s").tell(trial.number, 1.0)
    with pytest.raises(UpdateFinishedTrialError):
        ours.set_trial_user_attr(trial._trial_id, "late", 1)
    for states in (None, (TrialState.COMPLETE,), (TrialState.RUNNING,)):
        listed = [(t.number, t.state, t.values) for t in ours.get_all_trials(study._study_id, states=states)]
        assert listed == [(t.number, t.state, t.values) for t in plain.get_all_trials(study._study_id, states=states)]
    optuna.delete_study(study_name="s", storage=other)
    for storage in (plain, ours):
        with pytest.raises(KeyError):
            storage.get_all_trials(study._study_id)
