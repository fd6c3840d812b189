"""The README says what the code does: every `python -m search` command in it parses (the quick ones run), and its
spaces table states each space's searched ranges as the registry has them. No Ray."""

import re
import shlex

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.__main__ import COMMANDS
from search.commands import RESUME_KEYS, parse_run
from tests.conftest import REPO
from tests.e2e_helpers import run_cli
from trainables.foundation.objectives import parse_bound
from trainables.foundation.space import builtin_space_names, load_space

README = (REPO / "README.md").read_text()
OPTIONS = {
    "export": {"out", "trial"},
    "tensorboard": {"port"},
    "dashboard": {"port"},
    "predict": {"--json"},
    "report": set(),
    "resume": RESUME_KEYS,
}


def readme_commands() -> list[list[str]]:
    """Each `python -m search ...` command of the README's bash blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if "python -m search " in line:
                commands.append(shlex.split(line[line.index("python -m search ") :])[3:])
    return commands


def test_the_readme_shows_commands():
    assert len(readme_commands()) >= 10


@pytest.mark.parametrize("words", readme_commands(), ids=" ".join)
def test_every_readme_command_is_one_the_cli_takes(words):
    command, args = words[0], words[1:]
    assert command in COMMANDS, command
    if command == "run" and args != ["--help"]:
        parse_run(args)  # every key known, every value of its type (raises UsageError otherwise)
    elif command in OPTIONS:
        args = [arg for arg in args if not (command == "export" and parse_bound(arg))]  # params<=N: a bound
        flags = [arg for arg in args if arg.startswith("--")]
        keys = [arg.split("=", 1)[0] for arg in args if "=" in arg and "/" not in arg.split("=", 1)[0]]
        assert set(flags + keys) <= OPTIONS[command], (flags, keys)
    else:  # spaces, run --help: seconds, so they run
        result = run_cli(command, *args, timeout=120)
        assert result.returncode == 0, result.stderr


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
