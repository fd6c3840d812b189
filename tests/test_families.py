"""A verdict comes only from a family registered before its replays (benchmarks/families.py): replay_stats and
replay_pairs refuse any other in one line with exit 2 and write nothing, a registered one gets its verdict with the
family's name and hash in the JSON, an entry edited after its replays is refused; a family registered in a commit of
its own before its replays, as a repository of the test's own shows with git; and the figures beside each p-value
(effects in points with intervals, time to quality). Hand-made results, no Ray, milliseconds."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import code_state, families, replay_pairs, replay_stats
from benchmarks.families import check_provenance, entry_hash, registration, registration_commit, replay_settings
from benchmarks.statistics import (
    anytime_figure,
    censored_median,
    median_ratio,
    paired_effect,
    time_to_within,
    to_within,
)
from trainables.foundation.errors import UsageError

TABLES = ("t/one.jsonl.gz", "t/two.jsonl.gz")
ARMS = ["search", "random_asha", "random"]
ENTRY = {
    "kind": "arms",
    "registered": "in advance",
    "tables": list(TABLES),
    "arms": ARMS,
    "seeds": ["7000-7039"],
    "concurrency": [2],
    "trials": 12,
    "test": "Wilcoxon",
    "correction": "Holm",
}


def result(table: str, offset: int, family=None) -> dict:
    """A replay_cli result: the search lower than random + ASHA on every seed, each run's epochs to quality."""
    rng = np.random.default_rng(offset)
    regrets = {"search": rng.uniform(0, 1, 40), "random_asha": rng.uniform(1, 2, 40), "random": rng.uniform(1, 3, 40)}
    arms = {}
    for arm, values in regrets.items():
        epochs = [4 if arm == "search" else 8] * 30 + [None] * 10
        within = {"reached": 0.75, "median_epochs": 4.0, "median_wall_s": 40.0, "epochs": epochs, "wall_s": epochs}
        arms[arm] = {
            "final_regret_pt": values.tolist(),
            "median_wall_s": 10.0,
            "median_epochs": 24.0,
            "anytime_quartiles_pt": [[2.0, 1.0, 0.5]] * 3,
            "to_within_pt": {"0.5": within, "0.2": within},
        }
    at_k = {"arms": arms, "anytime_wall_s": [0.0, 5.0, 10.0]}
    figures = {"space": table.split("/")[1].split(".")[0], "table": table, "trials": 12, "epoch_budget": 0}
    figures.update(seeds=40, first_seed=7000, seed_set="heldout", concurrency={"2": at_k})
    return {**figures, "family": family} if family else figures


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registry outside git of families whose analysis is tested; their provenance is tested with `history`."""
    entry = dict(ENTRY)
    pairs = {**entry, "kind": "pairs", "pairs": ["search>random_asha"], "correction": "Holm over every comparison"}
    several = {**pairs, "pairs": ["search>random_asha", "search>random", "random_asha>random"]}  # two, and one
    path = tmp_path / "families.json"
    path.write_text(json.dumps({"families": {"fixed": entry, "fixed-pairs": pairs, "several-pairs": several}}))
    monkeypatch.setattr(families, "REGISTRY", path)
    monkeypatch.setattr(families, "GRANDFATHERED", {"fixed", "fixed-pairs", "several-pairs", "apart", "together"})
    return {"fixed": entry, "fixed-pairs": pairs, "several-pairs": several}


def run(module, tmp_path, monkeypatch, family: str | None, results: list[dict]) -> tuple[int, dict | None]:
    """`module`'s command line on `results` written to files: its exit code and the JSON it wrote (None: none)."""
    paths = []
    for index, figures in enumerate(results):
        paths.append(str(tmp_path / f"r{index}.json"))
        (tmp_path / f"r{index}.json").write_text(json.dumps(figures))
    out = tmp_path / "verdict.json"
    argv = [module.__name__, *paths, "--out", str(out), *(["--family", family] if family else [])]
    argv += ["--figures", str(tmp_path / f"figures-{module.__name__.rsplit('.', 1)[1]}")]
    monkeypatch.setattr(sys, "argv", argv)
    try:
        module.main()
        code = 0
    except SystemExit as exit:
        code = exit.code
    return code, json.loads(out.read_text()) if out.exists() else None


@pytest.mark.parametrize("family", [None, "unregistered"])
def test_an_unregistered_family_gets_no_verdict(registry, tmp_path, monkeypatch, capsys, family):
    named = {"name": "fixed", "hash": entry_hash(registry["fixed"])}
    for module in (replay_stats, replay_pairs):
        code, verdict = run(module, tmp_path, monkeypatch, family, [result(t, i, named) for i, t in enumerate(TABLES)])
        assert (code, verdict) == (2, None)
        error = capsys.readouterr().err.strip()
        assert error.startswith("--family") and "\n" not in error and "fixed" in error  # one line, naming the known


def test_a_registered_family_gets_its_verdict_and_the_json_names_it(registry, tmp_path, monkeypatch):
    named = {"name": "fixed", "hash": entry_hash(registry["fixed"])}
    code, verdict = run(
        replay_stats, tmp_path, monkeypatch, "fixed", [result(t, i, named) for i, t in enumerate(TABLES)]
    )
    assert code == 0
    assert verdict["family"] == {"name": "fixed", "hash": entry_hash(registry["fixed"]), "registered": "in advance"}
    table = verdict["concurrency"]["2"]["tables"]["one"]
    assert table["p_search_lower_holm"]["random_asha"] < 0.05 and table["target"]["below_random_asha"]
    points = table["effect_vs_search"]["random_asha"]["points"]
    low, high = points["mean_interval"]
    assert 0 < low < points["mean"] < high  # random + ASHA's regret higher, in points, with its interval
    assert table["to_within_pt"]["0.5"]["epochs_ratio"]["ratio"] == pytest.approx(0.5)
    assert table["target"]["within_half_point_in_two_thirds_epochs"]
    pairs_named = {"name": "fixed-pairs", "hash": entry_hash(registry["fixed-pairs"])}
    results = [result(t, i, pairs_named) for i, t in enumerate(TABLES)]
    code, verdict = run(replay_pairs, tmp_path, monkeypatch, "fixed-pairs", results)
    assert code == 0 and verdict["family"]["name"] == "fixed-pairs"
    drawn = sorted(path.name for path in (tmp_path / "figures-replay_pairs").glob("anytime-*.png"))
    assert drawn == sorted(
        anytime_figure(r["space"], k) for r in results for k in map(str, registry["fixed"]["concurrency"])
    )
    lower_on = verdict["decisions"]["search"]["lower_on"]
    assert verdict["decisions"]["search"]["adopt"] and len(lower_on) == 2
    assert all(where.endswith(", against random_asha") for where in lower_on)  # each names the arm it beat
    several_named = {"name": "several-pairs", "hash": entry_hash(registry["several-pairs"])}
    results = [result(t, i, several_named) for i, t in enumerate(TABLES)]
    code, verdict = run(replay_pairs, tmp_path, monkeypatch, "several-pairs", results)
    assert code == 0 and verdict["decisions"]["search"]["adopt"] is None  # against two arms: the family's rule decides
    assert verdict["decisions"]["random_asha"]["adopt"] is True  # against one arm (random, higher): decided here


def test_results_that_are_not_the_familys_or_an_entry_edited_after_its_replays_are_refused(
    registry, tmp_path, monkeypatch, capsys
):
    named = {"name": "fixed", "hash": entry_hash(registry["fixed"])}
    cases = {
        "results on t/one.jsonl.gz;": [result(TABLES[0], 0, named)],  # a table left out
        "replayed seeds 7000-7039": [{**result(t, i, named), "seeds": 30} for i, t in enumerate(TABLES)],
        "was replayed under fixed 000000000000": [
            result(t, i, {**named, "hash": "0" * 12}) for i, t in enumerate(TABLES)
        ],
        "was not replayed with --family fixed": [result(t, i) for i, t in enumerate(TABLES)],
        "epoch_budget=24; registered for it: trials=12, epoch_budget=0": [
            {**result(t, i, named), "epoch_budget": 24} for i, t in enumerate(TABLES)
        ],
        "results on t/one.jsonl.gz, t/one.jsonl.gz, t/two": [result(t, i, named) for i, t in enumerate(TABLES * 2)],
    }
    for message, results in cases.items():
        code, verdict = run(replay_stats, tmp_path, monkeypatch, "fixed", results)
        error = capsys.readouterr().err
        assert (code, verdict) == (2, None) and message.split(" 7000")[0] in error, error
    with pytest.raises(UsageError, match="a family of pairs, not of arms"):
        registration("fixed-pairs", "arms")


def test_replay_cli_takes_what_it_replays_from_the_family(registry):
    settings = replay_settings("fixed", TABLES[1], "7000-7039")
    assert settings["arms"] == tuple(ARMS) and settings["concurrency"] == [2] and settings["trials"] == 12
    assert settings["family"]["hash"] == entry_hash(registry["fixed"])
    with pytest.raises(UsageError, match="is not one of its tables"):
        replay_settings("fixed", "t/three.jsonl.gz", "7000-7039")
    with pytest.raises(UsageError, match="seeds 100-399 are not its"):
        replay_settings("fixed", TABLES[0], "100-399")
    per_table = {"tables": TABLES, "trials": [24, 72]}  # one stop rule a table, in their order: a budget as long
    assert [families.stop_rule(per_table, table) for table in TABLES] == [(24, 24), (72, 72)]
    assert families.stop_rule({**per_table, "epoch_budget": [36, 108]}, TABLES[1]) == (72, 108)


def test_replay_cli_refuses_an_epoch_budget_the_family_does_not_register(registry, monkeypatch, capsys):
    from benchmarks import replay_cli

    argv = [
        "replay_cli",
        TABLES[0],
        "--seeds",
        "40",
        "--first-seed",
        "7000",
        "--family",
        "fixed",
        "--epoch-budget",
        "24",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        replay_cli.main()  # refused before any table is read or replayed
    assert stop.value.code == 2 and "--epoch-budget=24: fixed registers 0 here" in capsys.readouterr().err


def test_every_committed_verdict_names_its_registered_family_unchanged():
    assert families.GRANDFATHERED < families.families().keys()
    root = families.REGISTRY.parent.parent
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=root, capture_output=True, text=True)
    if shallow.stdout.strip() == "false":  # a copy without the history (an archive, a shallow clone) cannot show it
        for name in families.families().keys() - families.GRANDFATHERED:  # registered alone, unchanged since
            registration_commit(name, families.families()[name], families.REGISTRY)
    for name, entry in families.families().items():
        for key in families.REQUIRED:
            assert key in entry, (name, key)
        named_path = f"benchmarks/results/{name}-{'stats' if entry['kind'] == 'arms' else 'decision'}.json"
        path = root / entry.get("verdict", named_path)  # an entry names it, or the name does
        workloads = [
            re.sub(r"^heldout-|-\d+ep-\d+seeds$", "", Path(t).name.removesuffix(".jsonl.gz")) for t in entry["tables"]
        ]
        results = entry.get("results") or [f"benchmarks/results/{name}-{workload}.json" for workload in workloads]
        assert path.exists() or not any((root / r).exists() for r in results), f"{name}: replayed, no verdict at {path}"
        if path.exists():  # a family registered in advance has no verdict until its replays ran
            assert json.loads(path.read_text())["family"] == families.named(name, entry), name


def sh(repo, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo, files: dict[str, str]) -> str:
    """A commit of `files` (path: text); its hash."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", "a change")
    return sh(repo, "rev-parse", "HEAD")


def registry_text(**entries) -> str:
    return json.dumps({"families": entries})


@pytest.fixture
def history(tmp_path):
    """A repository of the test's own: some code, then family `fresh` registered in a commit of its own."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "init", "-q")
    before = commit(repo, {"benchmarks/replay.py": "x = 0\n"})
    registered = commit(repo, {"benchmarks/families.json": registry_text(fresh=ENTRY)})
    return repo, repo / "benchmarks" / "families.json", before, registered


def test_a_registration_in_a_commit_of_its_own_then_replays_recording_their_code_pass(history, monkeypatch):
    repo, registry, _, registered = history
    replayed = commit(repo, {"benchmarks/replay.py": "x = 1\n"})
    monkeypatch.delenv("COMMIT", raising=False)
    state = code_state(repo)
    assert state == {"code": replayed, "code_dirty": False}
    (repo / "benchmarks" / "replay.py").write_text("x = 2\n")
    assert code_state(repo)["code_dirty"]
    assert registration_commit("fresh", ENTRY, registry) == registered
    check_provenance("fresh", ENTRY, [{"table": "t", **state}, {"table": "u", "code": registered}], registry)


def test_a_replay_whose_code_is_not_a_descendant_of_the_registration_is_refused(history):
    _, registry, before, registered = history
    for code in (before, "unrecorded"):
        with pytest.raises(UsageError, match=f"not a descendant of fresh's registration commit {registered[:12]}"):
            check_provenance(
                "fresh", ENTRY, [{"table": "t", "code": registered}, {"table": "u", "code": code}], registry
            )


def test_an_entry_edited_in_the_commit_of_its_results_is_refused(history):
    repo, registry, _, registered = history
    edited = {**ENTRY, "seeds": ["7000-7019"]}
    code = commit(repo, {"benchmarks/families.json": registry_text(fresh=edited), "benchmarks/results/r.json": "{}"})
    with pytest.raises(UsageError, match=f"fresh: its entry differs from the one registered in {registered[:12]}"):
        check_provenance("fresh", edited, [{"table": "t", "code": code}], registry)


def test_a_registration_commit_that_changes_other_files_is_refused(history):
    repo, registry, _, _ = history
    code = commit(repo, {"benchmarks/families.json": registry_text(fresh=ENTRY, late=ENTRY), "r.json": "{}"})
    with pytest.raises(UsageError, match=f"late: registered in {code[:12]}, which also changes r.json: a registration"):
        check_provenance("late", ENTRY, [{"table": "t", "code": code}], registry)


def test_without_git_history_or_git_a_family_gets_no_verdict_in_one_line(registry, tmp_path, monkeypatch, capsys):
    (tmp_path / "families.json").write_text(registry_text(unproven=registry["fixed"]))
    named = {"name": "unproven", "hash": entry_hash(registry["fixed"])}
    code, verdict = run(
        replay_stats, tmp_path, monkeypatch, "unproven", [result(t, i, named) for i, t in enumerate(TABLES)]
    )
    error = capsys.readouterr().err.strip()
    assert (code, verdict) == (2, None) and "\n" not in error
    assert error.startswith("--family unproven: its registration cannot be shown (fatal: not a git repository")
    with pytest.raises(UsageError, match="unproven: its registration cannot be shown"):
        replay_settings("unproven", TABLES[0], "7000-7039")  # refused before any replay
    monkeypatch.setenv("PATH", "")
    with pytest.raises(UsageError, match=r"cannot be shown \(git cannot run\): a verdict needs"):
        registration_commit("unproven", registry["fixed"], tmp_path / "families.json")


def test_time_to_quality_counts_epochs_until_the_incumbent_is_within_the_points():
    trace = [(10.0, 0.02), (20.0, 0.004), (30.0, 0.001)]  # regret as a fraction: 2, 0.4, 0.1 points
    assert time_to_within(trace, 0.5) == (2, 20.0) and time_to_within(trace, 0.2) == (3, 30.0)
    assert time_to_within(trace[:1], 0.5) == (None, None)
    figures = to_within([{"trace": trace}, {"trace": trace[:1]}, {"trace": trace[:2]}])
    assert figures["0.5"]["epochs"] == [2, None, 2] and figures["0.5"]["median_epochs"] == 2
    assert figures["0.2"]["median_epochs"] is None and figures["0.2"]["reached"] == pytest.approx(1 / 3)


def test_a_pair_reads_the_time_target_from_each_arms_epochs_to_within_half_a_point():
    """replay_pairs: A's median seed's epochs to within 0.5 points over B's, met at 2/3 or less; where B's median
    seed never gets there the family's rule reads it (None); results without times give no such figure."""

    def arms(a: list, b: list) -> dict:
        times = {"search": a, "random_asha": b}
        return {
            arm: {"final_regret_pt": [0.1, 0.2, 0.3], "median_epochs": 9, "to_within_pt": {"0.5": to_within_of(e)}}
            for arm, e in times.items()
        }

    def to_within_of(epochs: list) -> dict:
        trace = lambda e: [(1.0, 0.01)] * (e - 1) + [(1.0, 0.0)] if e else [(1.0, 0.01)]  # noqa: E731
        return to_within([{"trace": trace(e)} for e in epochs])["0.5"]

    for a, b, met, ratio in (
        ([60, 60, 70], [100, 90, 100], True, 0.6),
        ([80, 80, 70], [100, 90, 100], False, 0.8),
        ([60, None, None], [100, 90, 100], False, None),
        ([60, 60, 70], [None, None, 100], None, None),
    ):
        half = replay_pairs.compare_pair(arms(a, b), "search", "random_asha")["to_within_half_pt"]
        assert half["in_two_thirds"] is met and half["epochs_ratio"]["ratio"] == (ratio and pytest.approx(ratio))
        assert half["median_epochs"] == {"search": censored_median(a), "random_asha": censored_median(b)}
    untimed = {arm: {k: v for k, v in f.items() if k != "to_within_pt"} for arm, f in arms([1], [1]).items()}
    assert "to_within_half_pt" not in replay_pairs.compare_pair(untimed, "search", "random_asha")


def test_effects_in_points_and_ratios_of_medians_with_their_intervals():
    effect = paired_effect([1.0, 1.0, 1.0, 1.0], [1.5, 1.5, 2.0, 1.0])
    assert effect["median"] == 0.5 and effect["mean"] == 0.5
    assert effect["mean_interval"][0] <= 0.5 <= effect["mean_interval"][1]
    assert median_ratio([2, 4, 6], [4, 8, 12])["ratio"] == pytest.approx(0.5)
    endless = median_ratio([None, None, 1], [1, 2, 3])  # the search's median never got there
    assert endless["ratio"] is None and endless["interval"][1] is None


def test_a_family_corrected_over_all_its_concurrencies_adjusts_each_p_over_every_comparison(
    registry, tmp_path, monkeypatch
):
    """`"holm_over": "family"`: Holm over every (table, arm, concurrency) comparison, not over one concurrency's."""
    both = {**registry["fixed"], "concurrency": [2, 4]}
    entries = {"apart": both, "together": {**both, "holm_over": "family"}}
    (tmp_path / "families.json").write_text(json.dumps({"families": entries}))
    holm = {}
    for name, entry in entries.items():
        named = {"name": name, "hash": entry_hash(entry)}
        results = [result(t, i, named) for i, t in enumerate(TABLES)]
        for figures in results:
            figures["concurrency"]["4"] = figures["concurrency"]["2"]
        code, verdict = run(replay_stats, tmp_path, monkeypatch, name, results)
        assert code == 0
        holm[name] = verdict["concurrency"]["2"]["tables"]["one"]["p_search_lower_holm"]["random_asha"]
    assert holm["together"] > holm["apart"]  # twice the comparisons: a larger adjusted p


def test_a_family_registered_with_both_directions_as_one_corrects_over_every_one_sided_test(
    registry, tmp_path, monkeypatch
):
    """`"holm_directions": "together"`: the search lower and the search higher are one family (twice the tests);
    corrected apart, a p just under 0.05 would pass that the whole family does not let through."""
    one = {**registry["fixed"], "tables": [TABLES[0]]}
    entries = {"apart": one, "together": {**one, "holm_directions": "together"}}
    (tmp_path / "families.json").write_text(json.dumps({"families": entries}))
    holm = {}
    for name, entry in entries.items():
        figures = result(TABLES[0], 0, {"name": name, "hash": entry_hash(entry)})
        search = np.asarray(figures["concurrency"]["2"]["arms"]["random_asha"]["final_regret_pt"])
        rng = np.random.default_rng(9)  # the search a little lower than random + ASHA: p about 0.02 before Holm
        figures["concurrency"]["2"]["arms"]["search"]["final_regret_pt"] = (search - rng.normal(0.1, 0.25, 40)).tolist()
        code, verdict = run(replay_stats, tmp_path, monkeypatch, name, [figures])
        assert code == 0
        holm[name] = verdict["concurrency"]["2"]["tables"]["one"]["p_search_lower_holm"]["random_asha"]
    table = verdict["concurrency"]["2"]["tables"]["one"]
    lower, higher = table["p_search_lower"], table["p_search_higher"]
    assert 0.01 < lower["random_asha"] < 0.05 and lower["random"] < lower["random_asha"] / 2
    assert min(higher.values()) > lower["random_asha"]  # the higher tests rank after it
    assert holm["apart"] == pytest.approx(lower["random_asha"])  # second of 2 lower tests: times 1
    assert holm["together"] == pytest.approx(3 * lower["random_asha"])  # second of 4 one-sided tests: times 3
    assert holm["together"] > 0.05 > holm["apart"]


def test_the_registered_target_needs_one_table_ahead_behind_none_and_the_time_on_every_table(
    registry, tmp_path, monkeypatch
):
    """A family that registers a `target` is judged by it: ahead on one of two tables is enough (the first evidence's
    rule wanted two); the time clause missed on one table misses the target, and the JSON says where in words."""
    entry = {
        **registry["fixed"],
        "concurrency": [2, 4],
        "target": "as the held-out evidence wrote it",
        "epoch_budget": 24,
    }
    (tmp_path / "families.json").write_text(json.dumps({"families": {"fixed": entry}}))
    named = {"name": "fixed", "hash": entry_hash(entry)}
    results = [{**result(t, i, named), "epoch_budget": 24} for i, t in enumerate(TABLES)]
    for figures in results:
        figures["concurrency"]["4"] = figures["concurrency"]["2"]
    arms = results[1]["concurrency"]["2"]["arms"]
    arms["search"]["final_regret_pt"] = arms["random_asha"]["final_regret_pt"]  # level on the second table
    code, verdict = run(replay_stats, tmp_path, monkeypatch, "fixed", results)
    assert code == 0 and verdict["concurrency"]["2"]["targets"]["ahead_of_random_asha_on"] == ["one"]
    assert verdict["target"] == {
        "met": True,
        "clauses": {
            "within_half_point_in_two_thirds_epochs_on_every_table": True,
            "ahead_of_random_asha_after_holm_on_a_table": True,
            "behind_no_arm_after_holm": True,
        },
        "missed": [],
    }
    arms["search"]["to_within_pt"]["0.5"] = {**arms["random_asha"]["to_within_pt"]["0.5"]}  # as slow as random + ASHA
    code, verdict = run(replay_stats, tmp_path, monkeypatch, "fixed", results)
    assert not verdict["target"]["met"]
    assert not verdict["target"]["clauses"]["within_half_point_in_two_thirds_epochs_on_every_table"]
    assert [line.split(":")[0] for line in verdict["target"]["missed"]] == [
        "2 side by side, two",
        "4 side by side, two",
    ]
    assert verdict["replayed_seconds"]["cores"] == 2 and verdict["replayed_seconds"]["slowdown"] == {"2": 1.0, "4": 2.0}
    never = {"reached": 0.2, "median_epochs": None, "median_wall_s": None, "epochs": [None] * 40, "wall_s": [None] * 40}
    arms["random_asha"]["to_within_pt"]["0.5"] = never  # random + ASHA's median seed never there: past the 24 epochs
    for epochs, met in ((16.0, True), (17.0, False)):  # the search's median within 2/3 of the budget, or past it
        arms["search"]["to_within_pt"]["0.5"] = {**arms["search"]["to_within_pt"]["0.5"], "median_epochs": epochs}
        code, verdict = run(replay_stats, tmp_path, monkeypatch, "fixed", results)
        assert verdict["target"]["clauses"]["within_half_point_in_two_thirds_epochs_on_every_table"] is met
    arms["search"]["to_within_pt"]["0.5"] = never  # neither gets there: no time to compare, missed
    code, verdict = run(replay_stats, tmp_path, monkeypatch, "fixed", results)
    assert not verdict["target"]["clauses"]["within_half_point_in_two_thirds_epochs_on_every_table"]


def test_the_hodges_lehmann_shift_is_the_median_of_walsh_averages_with_the_signed_rank_interval():
    from benchmarks.statistics import hodges_lehmann

    assert hodges_lehmann([1.0, 2.0, 6.0])["hodges_lehmann"] == 2.75  # Walsh: 1, 1.5, 3.5, 2, 4, 6
    shifted = hodges_lehmann(np.random.default_rng(0).normal(1.0, 1.0, 300))
    low, high = shifted["hodges_lehmann_interval"]
    assert low < 1.0 < high and high - low < 0.4
    assert "hodges_lehmann" in paired_effect([0.0, 0.0, 0.0], [1.0, 2.0, 6.0])
