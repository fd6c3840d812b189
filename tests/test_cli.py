"""The CLI refuses bad input with one line and exit code 2, before Ray starts; bounds type without quotes; a dry run
checks and plans without Ray. Mostly in this process (the CLI's `main`), the process boundary checked once each."""

import subprocess
import sys

import pytest

from search.__main__ import main
from search.bounds import split_bounds
from search.commands import parse_run
from search.running.proposals.study_setup import coding_for
from tests.conftest import MNIST_MINI, REPO
from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import Bound


def cli(capsys, *args) -> tuple[int, str, str]:
    """`python -m search ARGS` as its `main` runs it: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["space=nope"], "space=nope: unknown space; known spaces: cnn_mnist, mlp_mnist, resnet50_transfer"),
        (["trials=2"], "space= is required"),
        (["space=resnet_mnist", "epochz=2"], "epochz: unknown key; did you mean epochs?"),
        (["space=resnet_mnist", "trials=many"], "trials=many: expected an integer"),
        (["space=cnn_mnist", "batch_size=0"], "batch_size=0: must be a positive integer"),
        (["space=resnet_mnist", "optimizer=rmsprop"], "optimizer=rmsprop: allowed values are sgd, adam, adamw"),
        (["space=cnn_mnist", "lr_schedule=often"], "lr_schedule=often: allowed values are none, plateau, onecycle"),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", f"enqueue={REPO / 'pyproject.toml'}"],
            "pyproject.toml: not JSON",
        ),
        (["space=cnn_mnist", "tracking=wandb"], "tracking=wandb: allowed values are none, mlflow"),
        (["space=cnn_mnist", "objectives=val_acc,flops"], "objectives=val_acc,flops: unknown objective 'flops'"),
        (["space=cnn_mnist", "objectives=val_acc,params:max"], "params is minimised, not maximised"),
        (["space=cnn_mnist", "epoch_budget=-3"], "epoch_budget=-3: must be >= 0 trial-epochs"),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", "tracking=mlflow", "tracking.uri=http://127.0.0.1:9"],
            "tracking.uri=http://127.0.0.1:9: MLflow cannot use it",
        ),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", "tracking=mlflow", "tracking.uri=sqlite:////no/such/m.db"],
            "tracking.uri=sqlite:////no/such/m.db: cannot write a store there (/no/such is not a writable folder)",
        ),
        (
            ["space=resnet_mnist", "grace=5", "epochs=2"],
            "grace=5: must be between 1 and epochs=2, or 0 (past the lr warm-up)",
        ),
        (
            ["space=resnet_mnist", "workers=16", "gpus=0", f"data.root={MNIST_MINI}"],
            "workers=16 x (1 CPU): one trial needs 16 CPUs but the cluster has",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, args, fragment):
    code, _, err = cli(capsys, "run", f"storage={tmp_path}", *args)
    assert code == 2, err
    assert err.strip().splitlines() == [f"error: {err.strip()[7:]}"]
    assert fragment in err
    assert not any(tmp_path.iterdir()), "nothing may be written for refused input"


def test_missing_dataset_names_files_and_remedy(capsys, tmp_path):
    code, _, err = cli(
        capsys, "run", "space=resnet_mnist", f"data.root={tmp_path / 'empty'}", "data.download=false", "--dry-run"
    )
    assert code == 2
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert "MNIST/raw/train-images-idx3-ubyte" in line and "t10k-labels-idx1-ubyte" in line
    assert "data.download=true" in line


def test_unknown_command_exits_2_from_the_process():
    result = subprocess.run([sys.executable, "-m", "search", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "frobnicate: unknown command" in result.stderr


def test_help_lists_every_key_pinning_and_the_dry_run(capsys):
    code, out, _ = cli(capsys, "run", "--help")
    assert code == 0
    for key in ["space=", "trials=12", "storage=./runs", "data.root=", "data.limit=0", "address=", "gpus=auto"]:
        assert key in out
    assert "is pinned: a searched one is taken out of the search" in out and "lr_schedule" in out
    assert "--dry-run" in out


def test_spaces_lists_ranges_and_says_a_searched_key_is_pinned_by_giving_it(capsys):
    code, out, _ = cli(capsys, "spaces")
    assert code == 0
    assert "resnet_mnist" in out and "searched: float, log scale, 0.005 .. 0.5 (lr=... pins it)" in out
    assert "is pinned: a searched one is taken out of the search" in out


def test_spaces_lists_each_name_once_saying_what_a_second_objective_searches(capsys):
    code, out, _ = cli(capsys, "spaces")
    assert code == 0
    mlp = out.split("mlp_mnist: ")[1].split("\nresnet50_transfer: ")[0].splitlines()[1:]
    names = [line.split()[0] for line in mlp]
    assert names == ["lr", "hidden", "layers", "dropout", "batch_size", "optimizer", "weight_decay"]  # each once
    assert mlp[1].split(None, 1)[1] == (
        "searched: one of 128, 256, 512 (hidden=... pins it); with a second objective: one of 32, 64, 128, 256, 512"
    )
    assert "    width            searched only with a second objective: one of 8, 16, 32, 64 (width=... pins it)" in out
    assert "    image_size       fixed at 224 (override with image_size=...); searched with a second objective: " in out


def test_a_pinned_hyperparameter_leaves_the_search_and_a_loop_key_pins_in_any_space(tmp_path):
    config, space = parse_run(["space=cnn_mnist", "lr=0.01", "lr_schedule=cosine", "epochs=5", f"storage={tmp_path}"])
    assert config.fixed == {"lr": 0.01, "lr_schedule": "cosine"}
    assert "lr" not in coding_for(config, space).space and "momentum" in coding_for(config, space).space
    assert config.grace == 2  # one epoch past cosine's warm-up (5 epochs: no floor at 2): the schedule counts


def test_the_plan_names_asha_as_the_searchs_first_line_does(tmp_path):
    """The dry run's `search:` line and the search's own (search.running.driver_words) say the same of ASHA: its
    variant and where annealing cycles end; the estimate says whether ASHA stops or pauses trials."""
    from search.plan import shape_words
    from search.running.driver_words import asha_words
    from search.running.estimate import asha_saving_words as saving_words

    words = [
        "space=mlp_mnist",
        "epochs=4",
        "grace=1",
        "lr_schedule=onecycle",
        "rung_cycles=true",
        f"storage={tmp_path}",
    ]
    for asha, variant, saving in (("stop", "ASHA", "stopping"), ("promote", "ASHA (promotion variant)", "pausing")):
        config, space = parse_run([*words, f"asha={asha}"])  # grace given: a third goes on under either variant
        said = f"{variant} from epoch 1 of 4 (lr cycles end at epoch 1, 3)"
        assert shape_words(config, space).endswith(f", {said}") and asha_words(config) == f"{said}, "
        assert saving_words(config) == f", ASHA {saving} some"
    config, space = parse_run([*words, "grace=4"])
    assert shape_words(config, space).endswith(", no early stopping") and not saving_words(config)


def test_the_dry_run_checks_plans_and_starts_no_ray_nor_writes(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = ["space=cnn_mnist", "lr_schedule=cosine", "epochs=9", "data.limit=512", f"data.root={MNIST_MINI}"]
    code, out, err = cli(capsys, "run", *words, "storage=runs", "name=x", "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("search: 12 trials of cnn_mnist, ") and " at a time" in lines[0]
    assert lines[0].endswith("ASHA (promotion variant) from epoch 2 of 9")  # the default, one objective
    assert lines[1] == "stop rule: 12 trials of up to 9 epochs (trials=)"  # the default stop rule: a trial count
    assert lines[2].startswith("estimate: about 50 trial-epochs of 512 images") and "img/s" in lines[2]
    assert (
        lines[3]
        == f"dry run: nothing started, nothing written; without --dry-run this search goes to {tmp_path}/runs/x"
    )
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized(), "the dry run started Ray"
    assert not any(tmp_path.iterdir()), "a dry run writes nothing"


@pytest.mark.parametrize(
    "words, expected",
    [
        (["max.params=200000"], [Bound("params", "<=", 200000)]),
        (["min.val_acc=0.98", "max.latency_ms=0.5"], [Bound("val_acc", ">=", 0.98), Bound("latency_ms", "<=", 0.5)]),
        (["params<=200000", "val_acc>=0.98"], [Bound("params", "<=", 200000), Bound("val_acc", ">=", 0.98)]),
        (["runs/x", "out=m"], []),
    ],
)
def test_bounds_type_without_quotes_and_the_quoted_form_still_reads(words, expected):
    bounds, rest = split_bounds(words)
    assert bounds == expected and rest == [w for w in words if w in ("runs/x", "out=m")]


@pytest.mark.parametrize(
    "word, fragment",
    [
        ("max.flops=3", "max.flops=3: unknown objective 'flops'"),
        ("min.val_acc=high", "min.val_acc=high: 'high' is not a number"),
        ("params<200000", "params<200000: not a bound"),
        ("val_acc", "val_acc: a bound needs its limit, e.g. max.val_acc=N or min.val_acc=N"),
    ],
)
def test_a_malformed_bound_names_the_accepted_forms(word, fragment):
    with pytest.raises(UsageError) as refused:
        split_bounds(["runs/x", word])
    assert fragment in str(refused.value) and "a bound is max.OBJECTIVE=N or min.OBJECTIVE=N" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_what_bash_leaves_of_an_unquoted_bound_gets_a_helpful_line_and_exit_2(tmp_path):
    result = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m search export runs/x val_acc>=0.98"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "val_acc: a bound needs its limit, e.g. max.val_acc=N or min.val_acc=N" in result.stderr
    assert (tmp_path / "=0.98").exists(), "bash's redirection, which the line explains"


def test_resume_refuses_a_changed_epochs_naming_the_key(capsys, tmp_path):
    """(Fewer trials than the study holds: tests/test_epoch_budget.py, which counts the study's trials.)"""
    experiment = tmp_path / "e"
    experiment.mkdir()
    (experiment / "search.json").write_text('{"run": {"space": "mlp_mnist", "trials": 8, "epochs": 3}}')
    code, _, err = cli(capsys, "resume", str(experiment), "epochs=5")
    assert code == 2 and "epochs=5: a search's epochs cannot change on resume" in err


def test_export_refuses_a_malformed_bound_in_one_line_with_exit_2(capsys, tmp_path):
    code, _, err = cli(capsys, "export", str(tmp_path), "max.flops=3")
    assert code == 2 and err.count("\n") == 1 and "a bound is max.OBJECTIVE=N or min.OBJECTIVE=N" in err
