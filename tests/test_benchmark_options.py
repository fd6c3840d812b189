"""The benchmark's options are checked before anything is measured: a bad one is one line naming it, exit 2, and no
report is written (pure logic, milliseconds; one real `python -m benchmarks` run)."""

import subprocess
import sys

import pytest

from benchmarks.options import PARTS, SHAPES, parse_args
from tests.conftest import REPO


@pytest.fixture
def good(tmp_path) -> list[str]:
    (tmp_path / "mnist" / "MNIST" / "raw").mkdir(parents=True)
    return ["--root", str(tmp_path / "mnist"), "--out", str(tmp_path / "bench.json")]


def test_the_defaults_run_every_machine_part_and_every_shape(good):
    args, parts, shapes = parse_args(good, "benchmarks")
    assert parts == set(PARTS) - {"scale", "replay"} and shapes == list(SHAPES)  # scale: hours on 2 cores
    assert (args.replay_seeds, args.replay_epoch_budget) == (300, 0)
    assert args.trials_per_shape >= 1 and args.memory_trials >= 3


def test_parts_and_shapes_are_read_from_comma_lists(good):
    _, parts, shapes = parse_args([*good, "--only", "overhead, memory", "--shapes", "workers=2 cpus=1"], "benchmarks")
    assert parts == {"overhead", "memory"} and shapes == ["workers=2 cpus=1"]


@pytest.mark.parametrize(
    "option, value, named",
    [
        ("--only", "overhed", "--only=overhed: allowed parts are peer, warm, overhead, ddp"),
        ("--peer-trials", "0", "--peer-trials=0: must be >= 1"),
        ("--only", ",", "--only=,: allowed parts"),
        ("--shapes", "workers=3", "--shapes=workers=3: allowed shapes are"),
        ("--trials-per-shape", "0", "--trials-per-shape=0: must be >= 1"),
        ("--trial-epochs", "-1", "--trial-epochs=-1: must be >= 1"),
        ("--memory-trials", "2", "--memory-trials=2: must be >= 3"),
        ("--asha-trials", "1", "--asha-trials=1: must be >= 2"),
        ("--reduction", "1", "--reduction=1: must be > 1"),
        ("--device", "tpu", "--device=tpu: allowed devices are cpu, cuda, cuda:N"),
        ("--root", "{missing}", "--root={missing}: no MNIST/raw folder there"),
        ("--out", "{missing}/bench.json", "--out={missing}/bench.json: must be a file in an existing folder"),
        ("--trial-images", "many", "argument --trial-images: invalid int value: 'many'"),
        ("--replay-seeds", "1", "--replay-seeds=1: must be >= 2"),
        ("--replay-epoch-budget", "-1", "--replay-epoch-budget=-1: must be >= 0"),
        (
            "--scale-again",
            "{missing}",
            "--scale-again={missing}: must be a --scale-keep folder holding its experiments",
        ),
    ],
)
def test_a_bad_option_is_one_line_naming_it_and_exit_2(good, capsys, tmp_path, option, value, named):
    missing = tmp_path / "missing"  # a folder no other program can create
    value, named = value.format(missing=missing), named.format(missing=missing)
    with pytest.raises(SystemExit) as exit_info:
        parse_args([*good, option, value], "benchmarks")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and named in err


def test_the_replay_part_checks_its_table(good, capsys, tmp_path):
    with pytest.raises(SystemExit):
        parse_args([*good, "--only", "replay", "--replay-table", str(tmp_path / "missing.gz")], "benchmarks")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--replay-table={tmp_path / 'missing.gz'}: no such file" in err


def test_the_cli_refuses_before_measuring_or_writing(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "overhed", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: --only=overhed: allowed parts are {', '.join(PARTS)}"]
    assert not out.exists() and result.stdout == ""
