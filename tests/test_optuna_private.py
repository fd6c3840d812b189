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
