"""`search.api`, the search from Python: the CLI's words from keyword arguments, a Space object or a name, the CLI's
refusals, the dry run; and the README's example run as it is, a real search on a local Ray (e2e)."""

import ast
import sys

import pytest

import search.api
from search.commands import parse_run
from spaces import cnn_mnist
from tests.conftest import MNIST_MINI, REPO
from trainables.foundation.errors import UsageError
from trainables.foundation.space import load_space
from trainables.foundation.storage import Experiment


def test_keyword_arguments_are_the_cli_words():
    words = search.api.words_of(
        "mlp_mnist",
        {"trials": 2, "data": {"limit": 512}, "tracking.experiment": "x", "objectives": ["val_acc", "params"]},
    )
    assert words == [
        "space=mlp_mnist",
        "trials=2",
        "data.limit=512",
        "tracking.experiment=x",
        "objectives=val_acc,params",
    ]
    assert search.api.words_of("cnn_mnist", {"rung_cycles": True, "lr": 0.01})[1:] == ["rung_cycles=true", "lr=0.01"]


def test_a_space_object_is_named_by_its_registry_name_or_its_module_file(tmp_path):
    assert search.api.space_reference(load_space("cnn_mnist")) == "cnn_mnist"
    assert search.api.space_reference(cnn_mnist.SPACE) == "cnn_mnist"
    own = tmp_path / "own_space.py"
    own.write_text((REPO / "spaces" / "cnn_mnist.py").read_text().replace('name="cnn_mnist"', 'name="own"'))
    sys.path.insert(0, str(tmp_path))
    try:
        import own_space

        assert search.api.space_reference(own_space.SPACE) == str(own)
        config, space = parse_run(search.api.words_of(own_space.SPACE, {"storage": str(tmp_path)}))
        assert space.name == "own" and config.space == str(own)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("own_space", None)


def test_bad_input_raises_the_line_the_cli_prints(tmp_path):
    with pytest.raises(UsageError, match="^trails: unknown key; did you mean trials\\?$"):
        search.api.run("mlp_mnist", trails=2, storage=str(tmp_path))
    with pytest.raises(UsageError, match="lr_schedule=often: allowed values are none"):
        search.api.run(cnn_mnist.SPACE, lr_schedule="often", storage=str(tmp_path))
    assert not any(tmp_path.iterdir())


def test_a_dry_run_from_python_plans_and_returns_nothing(tmp_path, capsys):
    planned = search.api.run(
        cnn_mnist.SPACE,
        dry_run=True,
        trials=4,
        epochs=2,
        lr=0.01,
        data={"root": str(MNIST_MINI)},
        storage=str(tmp_path),
    )
    out = capsys.readouterr().out
    assert planned is None and "search: 4 trials of cnn_mnist" in out and "stop rule: 4 trials of up to 2 epochs" in out
    assert not any(tmp_path.iterdir())


@pytest.mark.e2e
def test_the_readme_example_runs_a_search_and_exports_its_best(python_searches):
    """README.md's example run as it is (tests/python_searches.py), then three more searches in its process."""
    cwd, lines = python_searches["cwd"], python_searches["stdout"].strip().splitlines()
    left = next(number for number, line in enumerate(lines) if line.startswith("LEFT "))
    best, trials = lines[left - 2 : left]
    trial_id, val_acc, test_acc = best.split()
    assert 0 < float(val_acc) <= 1 and 0 < float(test_acc) <= 1
    assert trial_id in trials and trials.count("'completed'") + trials.count("'stopped_early'") == 2
    # the export goes where the command's goes: into the experiment, not the working folder
    assert sorted(path.name for path in cwd.iterdir()) == ["runs"]
    assert (cwd / "runs" / "notebook" / "notebook_model" / "model.safetensors").is_file()
    assert (cwd / "runs" / "notebook" / "summary.json").is_file()
    # one Ray for the process: the next searches ran on the first's instance, started once, stopped by shutdown()
    actors, groups = lines[left].removeprefix("LEFT ").split("] [")
    assert set(ast.literal_eval(actors + "]")) <= {"AutoscalingCoordinator"}, lines[left]  # Ray Train's, cluster-wide
    assert ast.literal_eval("[" + groups) == ["REMOVED"], lines[left]
    assert sum("starting a local Ray instance" in line for line in lines) == 1
    assert sum("Ray is up (kept from this process's last search)" in line for line in lines[left:]) == 3
    assert lines[-1] == "AGAIN True True False", lines[-1]
    assert sorted(path.name for path in (cwd / "runs").iterdir()) == ["notebook", "one", "promote", "three"]


def test_a_result_exports_only_within_well_formed_bounds(tmp_path):
    result = search.api.SearchResult({}, Experiment.at(str(tmp_path)))
    with pytest.raises(UsageError, match="a bound is max.OBJECTIVE=N or min.OBJECTIVE=N"):
        result.export(bounds=["params<200000"])
    with pytest.raises(UsageError, match="not a bound"):
        result.export(bounds=["out=x"])
    with pytest.raises(UsageError, match="give trial=ID or bounds on the objectives, not both"):
        result.export(trial="a", bounds=["max.params=200000"])
