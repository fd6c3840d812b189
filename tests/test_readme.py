"""The READMEs say what the code does. Every command of README.md's and benchmarks/README.md's bash blocks, and every
`python -m search ...` they quote inline, goes through a real bash as typed (no redirection, no glob, no stray
file: bash's own complaints and every file it leaves in its folder fail the test), to stand-in programs that record
the words bash delivered. The words then go to the code: `run` as a dry run (every key and value parsed, the data
and the machine checked, the plan printed), `spaces` and `--help` for real, the commands on a finished experiment
through their own parsers (on an experiment a README's `run` names), the benchmarks through their option checks.
One bash process and this one: no Ray. The README's spaces table states each space's searched ranges as the
registry has them."""

import os
import re
import stat

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.__main__ import main
from search.bounds import split_bounds
from search.commands import RESUME_KEYS, parse_run, split_options
from tests.conftest import MNIST_MINI, REPO
from trainables.foundation.space import builtin_space_names, load_space

README = (REPO / "README.md").read_text()
BENCHMARKS = (REPO / "benchmarks" / "README.md").read_text()
PROGRAMS = ("python",)  # what the READMEs' commands start with; each is a stand-in that records its words
OPTIONS = {  # the options of the commands that read a finished experiment, as their own parsers allow them
    "export": {"out", "trial", "tracking.register", "--replace"},
    "tensorboard": {"port"},
    "dashboard": {"port"},
    "predict": {"--json", "--all"},
    "report": set(),
    "resume": RESUME_KEYS,
}
RECORDER = """#!/bin/sh
{ printf '%s\\0' "$@"; printf '\\1\\n'; } >> "$RECORD"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && : > "$3/bin/activate"; fi
"""  # `python -m venv DIR` leaves an activate script that changes nothing, for the README's `. DIR/bin/activate`


def commands_of(text: str) -> list[str]:
    """The commands of a README's bash blocks (continuation lines joined; comments are bash's to drop) and its
    inline `python -m search ...` spans."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()
        commands += [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    commands += re.findall(r"(?<!`)`(python -m search [^`]+)`", text)
    return commands


COMMANDS = commands_of(README) + commands_of(BENCHMARKS)


def test_the_readmes_show_commands_and_each_starts_with_a_program_the_test_stands_in_for():
    assert len(commands_of(README)) >= 15 and len(commands_of(BENCHMARKS)) >= 5
    assert all(command.split()[0] in PROGRAMS for command in COMMANDS), COMMANDS


@pytest.fixture(scope="module")
def delivered(tmp_path_factory) -> list[list[str]]:
    """The words bash delivered for each command, run as typed in an empty folder; asserts bash said nothing and left
    nothing there."""
    import subprocess

    root = tmp_path_factory.mktemp("bash")
    stand_ins, cwd, record = root / "bin", root / "cwd", root / "record"
    stand_ins.mkdir()
    cwd.mkdir()
    for program in PROGRAMS:
        (stand_ins / program).write_text(RECORDER)
        (stand_ins / program).chmod(stat.S_IRWXU)
    script = "shopt -s failglob\nset -u\n" + "\n".join(COMMANDS) + "\n"
    env = {**os.environ, "PATH": f"{stand_ins}:{os.environ['PATH']}", "RECORD": str(record), "HOME": str(root)}
    env["MNIST60K"] = str(MNIST_MINI)  # the variable benchmarks/README.md's GPU command names: a copy of MNIST
    result = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not result.stderr, result.stderr
    calls = [call.rstrip("\0").split("\0") for call in record.read_text().split("\1\n") if call]
    left = {p.name for p in cwd.iterdir()} - {words[2] for words in calls if words[:2] == ["-m", "venv"]}
    assert not left, f"bash left {sorted(left)}: a redirection or a stray file"
    assert len(calls) == len(COMMANDS), "a command ran another number of programs than one"
    return calls


def experiments_named() -> set[str]:
    """The experiments the READMEs' `run` commands create (`name=`)."""
    return {match for command in COMMANDS for match in re.findall(r"\bname=([\w.-]+)", command)}


def test_bash_delivers_the_words_as_typed(delivered):
    words = [call for call in delivered if call[:2] == ["-m", "search"]]
    assert len(words) == sum(command.startswith("python -m search ") for command in COMMANDS)
    assert ["-m", "pip", "install", "-e", ".[test]"] in delivered and ["-m", "pytest", "-q"] in delivered
    assert ["-m", "pip", "install", "-e", "."] in delivered  # the plain install for users; `.[test]` for the tests
    cpu_build = ["--index-url", "https://download.pytorch.org/whl/cpu"]  # not the CUDA wheel on a machine without GPU
    assert ["-m", "venv", ".venv"] in delivered and any(call[-2:] == cpu_build for call in delivered)


def test_every_run_plans_as_a_dry_run_and_every_other_command_parses(delivered, capsys, tmp_path, monkeypatch):
    cache = tmp_path / "cache"  # the default data.root holds the sample's MNIST: found there, never downloaded
    (cache / "search" / "datasets").mkdir(parents=True)
    (cache / "search" / "datasets" / "MNIST").symlink_to(MNIST_MINI / "MNIST")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for words in map(list, dict.fromkeys(map(tuple, delivered))):  # a command quoted twice is checked once
        if words[:2] == ["-m", "search"]:
            check_search_words(words[2:], capsys)
        elif words[:2] == ["-m", "benchmarks"]:
            from benchmarks.options import parse_args

            parse_args(words[2:], "benchmarks")  # every option checked as `python -m benchmarks` checks it
        elif words[1].startswith("benchmarks."):
            source = (REPO / (words[1].replace(".", "/") + ".py")).read_text()
            for option in (word.split("=")[0] for word in words[2:] if word.startswith("--")):
                assert f'"{option}"' in source, (words, option)
    assert not any((tmp_path / "cwd").iterdir()), sorted(p.name for p in (tmp_path / "cwd").iterdir())


def check_search_words(words: list[str], capsys) -> None:
    command, args = words[0], words[1:]
    if command == "run" and "address=auto" in args:  # its storage and data are the cluster's: parsed only
        parse_run(args)
    elif command in ("run", "spaces"):
        dry = args + ["--dry-run"] if command == "run" and "--help" not in args and "--dry-run" not in args else args
        code = main([command, *dry])
        out, err = capsys.readouterr()
        assert code == 0, (words, err)
        assert command != "run" or "--help" in args or "\ndry run: nothing started, nothing written" in out, out
    else:
        positional, _, _ = split_options(split_bounds(args)[1], OPTIONS[command])
        folder = positional[0].split("/")
        assert folder[0] == "runs" and folder[1] in experiments_named(), f"{words}: no README run creates {folder}"


def described(distribution) -> str:
    if isinstance(distribution, CategoricalDistribution):
        return "/".join(str(choice) for choice in distribution.choices)
    assert isinstance(distribution, (FloatDistribution, IntDistribution))
    return f"{'log ' if distribution.log else ''}{distribution.low:g}..{distribution.high:g}"


@pytest.mark.parametrize("name", builtin_space_names())
def test_the_readme_table_states_the_space_as_the_registry_has_it(name):
    row = next((line for line in README.splitlines() if line.startswith(f"| `{name}` |")), None)
    assert row, f"the README's spaces table has no row for {name}"
    searches = row.rstrip(" |").rsplit(" | ", 1)[1]
    expected = ", ".join(f"`{key}` {described(d)}" for key, d in load_space(name).hyperparameters.items())
    assert searches == expected


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 300
