"""Pins checked against the space: a pin the model or the loop cannot build is refused in one line naming what the
name accepts (exit 2); a pin it can build but the space does not search (outside the range, between the choices)
is kept and warned about in one line naming the searched range, by `run` and the dry run, before Ray starts."""

import pytest

from search.__main__ import main
from search.commands import parse_run
from tests.conftest import MNIST_MINI
from trainables.foundation.errors import UsageError
from trainables.foundation.pins import pin_warnings
from trainables.foundation.space import load_space


@pytest.mark.parametrize(
    "words, line",
    [
        (["space=mlp_mnist", "lr=0"], "lr=0: must be > 0"),  # searched, float
        (["space=mlp_mnist", "lr=inf"], "lr=inf: must be a finite number"),
        (["space=mlp_mnist", "lr=1e400"], "lr=1e400: must be a finite number"),  # parses to inf
        (["space=mlp_mnist", "weight_decay=inf"], "weight_decay=inf: must be a finite number"),
        (["space=resnet_mnist", "rotate=nan"], "rotate=nan: must be a finite number"),
        (["space=mlp_mnist", "dropout=1"], "dropout=1: must be in [0, 1)"),
        (["space=mlp_mnist", "hidden=0"], "hidden=0: must be a positive integer"),  # searched among numbers
        (["space=mlp_mnist", "layers=-1"], "layers=-1: must be a positive integer"),  # searched, int
        (["space=mlp_mnist", "batch_size=-64"], "batch_size=-64: must be a positive integer"),
        (["space=cnn_mnist", "momentum=1"], "momentum=1: must be in [0, 1)"),
        (["space=mlp_mnist", "momentum=1.5"], "momentum=1.5: must be in [0, 1)"),  # a loop key the space lacks
        (["space=mlp_mnist", "weight_decay=-0.1"], "weight_decay=-0.1: must be >= 0"),  # the space's constant
        (["space=resnet_mnist", "label_smoothing=1"], "label_smoothing=1: must be in [0, 1)"),
        (["space=resnet_mnist", "shift=-2"], "shift=-2: must be >= 0"),
        (["space=cnn_mnist", "width=0"], "width=0: must be a positive integer"),  # a cost knob
        (["space=resnet50_transfer", "train_pct=1"], "train_pct=1: must be in (0, 1)"),
        (["space=resnet_mnist", "stem=tiny"], "stem=tiny: allowed values are"),  # a name: one of the known
    ],
)
def test_a_pin_the_model_cannot_build_is_refused_in_one_line_naming_what_it_accepts(capsys, tmp_path, words, line):
    code = main(["run", *words, f"storage={tmp_path}", "--dry-run"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith(f"error: {line}") and len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir())


def test_a_pin_outside_the_searched_range_is_kept_and_warned_about_once_before_the_plan(capsys, tmp_path):
    words = ["space=mlp_mnist", "lr=5", "hidden=100", "dropout=0.2", f"data.root={MNIST_MINI}", "data.limit=256"]
    code = main(["run", *words, f"storage={tmp_path}", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err.splitlines() == [
        "warning: lr=5 is outside the searched range (float, log scale, 0.0001 .. 0.01)",
        "warning: hidden=100 is not among the searched choices (one of 128, 256, 512)",
    ]  # dropout=0.2 lies inside its range: no word
    assert "\nstop rule: " in out
    config, _ = parse_run(words)  # parsing alone says nothing (the README test's and the API's silent path)
    assert config.fixed == {"lr": 5.0, "hidden": 100, "dropout": 0.2}
    assert capsys.readouterr() == ("", "")


def test_the_searched_range_is_the_one_the_objectives_search():
    space = load_space("mlp_mnist")
    assert pin_warnings(space.hyperparameters, {"hidden": 32}) == [
        "warning: hidden=32 is not among the searched choices (one of 128, 256, 512)"
    ]
    assert pin_warnings(space.for_objectives(2).hyperparameters, {"hidden": 32}) == []  # the cost range holds 32
    assert pin_warnings(load_space("cnn_mnist").hyperparameters, {"width": 3, "weight_decay": 0.5}) == []  # unsearched


def test_a_name_the_loop_builds_is_kept_though_the_space_searches_other_names():
    from optuna.distributions import CategoricalDistribution

    from trainables.foundation.space import Space, coerce_hyperparameter

    space = Space("s", "d", "cnn", "mnist", {"optimizer": CategoricalDistribution(["sgd", "adam"])})
    assert coerce_hyperparameter(space, "optimizer", "adamw") == "adamw"
    assert pin_warnings(space.hyperparameters, {"optimizer": "adamw"}) == [
        "warning: optimizer=adamw is not among the searched choices (one of sgd, adam)"
    ]
    with pytest.raises(UsageError, match="optimizer=rmsprop: allowed values are sgd, adam"):
        coerce_hyperparameter(space, "optimizer", "rmsprop")


def test_a_rule_of_a_built_in_name_never_refuses_a_user_spaces_own_knob_inside_its_range(capsys, tmp_path):
    """A user space's `width` may be a float multiplier: the integer rule of the built-in models' `width` does not bind
    it, and a value inside the space's own range is never refused."""
    space = tmp_path / "multiplier.py"
    space.write_text(
        "from optuna.distributions import FloatDistribution\n"
        "from spaces import Space\n"
        "SPACE = Space(name='multiplier', description='a width multiplier', architecture='mlp', dataset='mnist',\n"
        "              hyperparameters={'lr': FloatDistribution(1e-4, 1e-2, log=True),\n"
        "                               'width': FloatDistribution(0.25, 1.0)},\n"
        "              constants={'optimizer': 'adam', 'batch_size': 64})\n"
    )
    config, _ = parse_run([f"space={space}", "width=0.5"])
    assert config.fixed == {"width": 0.5}
    config, space_object = parse_run([f"space={space}", "width=2"])  # outside its range: kept, and warned about
    assert pin_warnings(space_object.hyperparameters, config.fixed) == [
        "warning: width=2 is outside the searched range (float, 0.25 .. 1)"
    ]
