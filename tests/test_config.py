"""Override parsing and --help: pure logic, no Ray, no torch."""

import pytest

from trainables.foundation.config import DataConfig, RunConfig, config_keys, parse_overrides
from trainables.foundation.config_help import field_docs, help_rows
from trainables.foundation.errors import UsageError


def test_defaults_and_typed_values():
    config = parse_overrides(["space=resnet_mnist", "trials=4", "cpus=0.5", "data.limit=100", "data.download=false"])
    assert config.trials == 4 and isinstance(config.trials, int)
    assert config.cpus == 0.5
    assert config.data.limit == 100 and config.data.download is False
    assert config.epochs == RunConfig().epochs
    assert config.gpus is None


def test_gpus_auto_and_number():
    assert parse_overrides(["gpus=auto"]).gpus is None
    assert parse_overrides(["gpus=1"]).gpus == 1.0


@pytest.mark.parametrize(
    "arg, fragment",
    [
        ("trails=3", "trails: unknown key; did you mean trials?"),
        ("data.limt=3", "did you mean data.limit?"),
        ("trials=three", "trials=three: expected an integer"),
        ("cpus=lots", "cpus=lots: expected a number"),
        ("data.download=maybe", "data.download=maybe: expected true or false"),
        ("trials=0", "trials=0: must be >= 1"),
        ("grace=9", "grace=9: must be between 1 and epochs=3, or 0 (past the lr warm-up)"),
        ("workers=0", "workers=0: must be >= 1"),
        ("room_wait=0", "room_wait=0: must be > 0 seconds"),
        ("data.limit=-1", "data.limit=-1: must be >= 0"),
        ("name=../x", "name=../x: use letters"),
        ("precision=fp16", "precision=fp16: allowed values are fp32, bf16"),
        ("sampler=grid", "sampler=grid: allowed values are tpe, random"),
        ("compile=maybe", "compile=maybe: expected true or false"),
        ("compile_mode=fast", "compile_mode=fast: allowed values are default, reduce-overhead, max-autotune"),
        ("novalue", "novalue: expected key=value"),
    ],
)
def test_bad_input_names_the_key(arg, fragment):
    with pytest.raises(UsageError) as excinfo:
        parse_overrides([arg])
    assert fragment in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_hyperparameters_become_fixed():
    config = parse_overrides(["lr=0.1"], {"lr": float})
    assert config.fixed == {"lr": 0.1}


def test_unknown_key_suggests_hyperparameter():
    with pytest.raises(UsageError, match="did you mean momentum"):
        parse_overrides(["momentun=0.9"], {"momentum": float})


def test_every_key_has_help_and_default():
    rows = help_rows()
    keys = [key for key, _, _ in rows]
    assert keys == list(config_keys())
    for required in [
        "name",
        "storage",
        "trials",
        "epochs",
        "grace",
        "workers",
        "gpus",
        "concurrency",
        "seed",
        "data.root",
        "data.limit",
        "time_budget",
        "address",
    ]:
        assert required in keys
    assert all(help_text for _, _, help_text in rows)
    assert dict((k, d) for k, d, _ in rows)["storage"] == "./runs"


def test_field_docs_reads_docstrings():
    assert field_docs(DataConfig)["limit"].startswith("Cap on training samples")


def test_round_trip_through_dict():
    config = parse_overrides(["trials=2", "data.limit=5", "lr=0.2"], {"lr": float})
    assert RunConfig.from_dict(config.to_dict()) == config


def test_a_search_json_of_an_earlier_version_still_reads():
    old = {**RunConfig().to_dict(), "prefetch": True, "workers": 2, "cpus": 1.0}
    assert RunConfig.from_dict(old).workers == 2
