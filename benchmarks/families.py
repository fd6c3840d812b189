"""The families of comparisons registered before their replays run (benchmarks/families.json): a verdict
(`replay_stats`, `replay_pairs`) is reported only for a registered family whose results are the ones it names, and
names its family and a hash of the entry, so an entry changed after the fact no longer matches. An entry may name
`replays_of`, an earlier family whose replays it reads under another analysis. Provably registered first: the entry
lands in a commit of its own, unchanged since, and every replay's code (its results' `code`) descends from that
commit; git's history shows it, and a clone without it gets no verdict."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from benchmarks import git
from trainables.foundation.errors import UsageError

REGISTRY = Path(__file__).resolve().parent / "families.json"
RUNGS = "search|asha=promote|reduction=2|grace=1|gamma=0.05|startup=4"  # `run`'s asha=promote since its verdict
KINDS = ("arms", "pairs")  # arms: every arm against the search (replay_stats); pairs: A against B (replay_pairs)
REQUIRED = ("kind", "registered", "tables", "seeds", "concurrency", "trials", "test", "correction")
# Registered before the rule (a commit of its own before the replays), so git cannot show their order: their hash alone
GRANDFATHERED = frozenset(
    "defaults-tuning defaults-evidence defaults-fresh sampler-decision early-stopping stop-rule "
    "concurrency-sampler-tuning heldout-defaults heldout-defaults-both-directions".split()
)


def families(registry: Path | None = None) -> dict[str, dict]:
    return json.loads((registry or REGISTRY).read_text())["families"]


def registration(name: str | None, kind: str | None, registry: Path | None = None) -> dict:
    """The registered entry of family `name` for a verdict of `kind` (None: any)."""
    known, where = families(registry), (registry or REGISTRY).name
    if not name:
        raise UsageError(f"--family: a verdict needs a family registered in {where} ({', '.join(known)})")
    if name not in known:
        raise UsageError(f"--family {name}: not registered in {where} (registered: {', '.join(known)})")
    entry = known[name]
    missing = [key for key in REQUIRED if key not in entry]
    if missing or entry["kind"] not in KINDS:
        raise UsageError(f"--family {name}: its entry lacks {', '.join(missing) or 'a kind of ' + ', '.join(KINDS)}")
    if kind and entry["kind"] != kind:
        raise UsageError(f"--family {name}: a family of {entry['kind']}, not of {kind}")
    return entry


def entry_hash(entry: dict) -> str:
    """The first 12 hex digits of the SHA-256 of the entry as canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


def named(name: str, entry: dict) -> dict:
    """What a results JSON records of its registration."""
    return {"name": name, "hash": entry_hash(entry), "registered": entry["registered"]}


def check_results(name: str, entry: dict, results: list[dict], registry: Path | None = None) -> None:
    """The results are the family's (tables, seeds, trials, concurrencies, arms); else the first difference."""
    tables = sorted(result["table"] for result in results)  # each once a seed set: a table twice would count twice
    replayed = [(result["table"], seeds_of(result)) for result in results]
    if tables != sorted(entry["tables"] * len(entry["seeds"])) or len(set(replayed)) < len(replayed):
        each = f" on each of the seeds {', '.join(entry['seeds'])}" if len(entry["seeds"]) > 1 else ""
        raise UsageError(
            f"--family {name}: results on {', '.join(tables)}; registered: {', '.join(entry['tables'])}{each}"
        )
    wanted = arms_of(entry)
    source = entry.get("replays_of", name)  # whose replays these are: the family's own, or an earlier family's
    source_entry = entry if source == name else registration(source, None, registry)
    for result in results:
        recorded = result.get("family")
        if recorded and (recorded["name"], recorded["hash"]) != (source, entry_hash(source_entry)):
            raise UsageError(
                f"--family {name}: {result['table']} was replayed under {recorded['name']} {recorded['hash']}, "
                f"{source}'s entry now hashes {entry_hash(source_entry)}: a family is not edited once its replays ran"
            )
        if not recorded and source_entry["registered"].startswith("in advance"):
            raise UsageError(f"--family {name}: {result['table']} was not replayed with --family {source}")
        seeds = seeds_of(result)
        if seeds not in entry["seeds"]:
            raise UsageError(f"--family {name}: {result['table']} replayed seeds {seeds}; registered: {entry['seeds']}")
        trials, budget = stop_rule(entry, result["table"])
        if (result["trials"], result.get("epoch_budget", 0)) != (trials, budget):
            raise UsageError(
                f"--family {name}: {result['table']} at trials={result['trials']}, epoch_budget="
                f"{result.get('epoch_budget', 0)}; registered for it: trials={trials}, epoch_budget={budget}"
            )
        for k in entry["concurrency"]:
            arms = result["concurrency"].get(str(k), {}).get("arms", {})
            if entry["kind"] == "arms" and list(arms) != entry["arms"] or not set(wanted) <= arms.keys():
                raise UsageError(
                    f"--family {name}: {result['table']} at {k} side by side has arms {', '.join(arms) or 'none'}; "
                    f"registered: {', '.join(wanted)}"
                )


def seeds_of(result: dict) -> str:
    """A result's replayed seeds as a registration writes them: `first-last`."""
    first = result.get("first_seed", 0)
    return f"{first}-{first + result['seeds'] - 1}"


def arms_of(entry: dict) -> list[str]:
    """The arms a family's replays run: its `arms`, else both arms of each pair in the order first named."""
    return entry.get("arms") or list(dict.fromkeys(arm for pair in entry["pairs"] for arm in pair.split(">")))


def replay_settings(name: str, table: str, seeds: str, registry: Path | None = None) -> dict:
    """What `replay_cli --family` replays on `table` and `seeds` (first-last), from the family's entry."""
    entry = registration(name, None, registry)
    if table not in entry["tables"]:
        raise UsageError(f"--family {name}: {table} is not one of its tables ({', '.join(entry['tables'])})")
    if seeds not in entry["seeds"]:
        raise UsageError(f"--family {name}: seeds {seeds} are not its ({', '.join(entry['seeds'])})")
    if name not in GRANDFATHERED:  # refused before hours of replays that no verdict could use
        registration_commit(name, entry, registry or REGISTRY)
    trials, budget = stop_rule(entry, table)
    concurrency = [int(k) for k in entry["concurrency"]]
    settings = {"arms": tuple(arms_of(entry)), "concurrency": concurrency, "trials": trials}
    return {**settings, "epoch_budget": budget, "family": named(name, entry)}


def stop_rule(entry: dict, table: str) -> tuple[int, int]:
    """(trials, epoch budget; 0: none) the entry registers for `table`: a list holds one per table, in their order;
    a list of trials without `epoch_budget` is a budget of as many epochs."""
    at = entry["tables"].index(table)
    trials = entry["trials"][at] if isinstance(entry["trials"], list) else entry["trials"]
    budget = entry.get("epoch_budget", trials if isinstance(entry["trials"], list) else 0)
    return trials, budget[at] if isinstance(budget, list) else budget


def registered_results(name: str | None, kind: str, paths: list[str]) -> tuple[dict, list[dict]]:
    """Family `name`'s entry and the results JSON at `paths`, checked to be its replays; else one line, exit 2."""
    results = [json.loads(Path(path).read_text()) for path in paths]
    try:
        entry = registration(name, kind)
        check_results(name, entry, results)
        check_provenance(name, entry, results)
    except UsageError as error:
        refuse(error)
    return entry, results


def check_provenance(name: str, entry: dict, results: list[dict], registry: Path | None = None) -> None:
    """Family `name` (and the family whose replays it reads) registered in a commit of its own, unchanged since, and
    every replay's code a descendant of that commit; else the first failure in one line."""
    registry, source = registry or REGISTRY, entry.get("replays_of", name)
    for family in dict.fromkeys((name, source)):
        if family in GRANDFATHERED:
            continue
        registered = entry if family == name else registration(family, None, registry)
        commit = registration_commit(family, registered, registry)
        for result in results if family == source else []:
            code = result.get("code", "unrecorded")
            if git(registry.parent, "merge-base", "--is-ancestor", commit, code).returncode:
                raise UsageError(
                    f"--family {name}: {result['table']} was replayed at {code[:12]}, not a descendant of {family}'s "
                    f"registration commit {commit[:12]}: a replay runs on code that holds its family's registration"
                )


def registration_commit(name: str, entry: dict, registry: Path) -> str:
    """The commit that introduced family `name` (the oldest that changed the count of `"name"` in the registry),
    checked to change the registry alone and to hold the entry as it stands."""
    folder, file = registry.parent, registry.name
    found = git(folder, "log", "--reverse", "--format=%H", f'-S"{name}"', "--", file)
    if not found or found.returncode or not found.stdout.strip():
        why = "git cannot run" if not found else (found.stderr.strip().splitlines() or ["no commit adds it"])[0]
        raise UsageError(
            f"--family {name}: its registration cannot be shown ({why}): a verdict needs the repository's git "
            f"history, in which the family's entry lands in {file} in a commit of its own before its replays"
        )
    commit, own = found.stdout.split()[0], git(folder, "rev-parse", "--show-prefix").stdout.strip() + file
    touched = git(folder, "diff-tree", "--root", "--no-commit-id", "--name-only", "-r", commit).stdout.split()
    if touched != [own]:
        raise UsageError(
            f"--family {name}: registered in {commit[:12]}, which also changes "
            f"{', '.join(path for path in touched if path != own)}: a registration changes {own} alone"
        )
    if json.loads(git(folder, "show", f"{commit}:./{file}").stdout)["families"][name] != entry:
        raise UsageError(
            f"--family {name}: its entry differs from the one registered in {commit[:12]}: an entry is not edited "
            "after its registration (a changed question is a new family)"
        )
    return commit


def refuse(error: Exception) -> None:
    print(error, file=sys.stderr)
    raise SystemExit(2)
