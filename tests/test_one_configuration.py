"""One configuration is one trial: a search with every searched hyperparameter pinned plans and runs one trial, and
`trials=N` given with it N repeats with seeds run seed + 0, 1, ...; the study keeps each repeat's seed, a resumed or
continued trial trains on with it, and the repeat's seed moves its weights and batch order but not its validation
split. Unit tests (no Ray instance) and one small end-to-end run."""

import json
import re

import optuna
import pytest
import torch

from search.__main__ import main
from search.commands import parse_run, resumed_config
from search.running.ends.reconcile import continue_stopped_by_budget
from search.running.proposals.searcher import StudySearcher
from search.running.proposals.study_setup import coding_for
from search.running.study.endings import STOPPED_BY_BUDGET, Ending
from search.running.study.record import StudyRecord
from search.running.trial_results import trial_results
from tests.conftest import MNIST_MINI
from tests.e2e_helpers import run_cli
from trainables.feeds import make_feed
from trainables.foundation.repeats import SEED_KEY, training_seed
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TRIAL_KEY
from trainables.foundation.warm import TRIAL_MODULES

MLP_PINS = ["space=mlp_mnist", "lr=0.001", "hidden=128", "layers=1", "dropout=0.1", "batch_size=64"]
CNN_PINS = ["space=cnn_mnist", "lr=0.01", "momentum=0.9", "dropout=0.2", "batch_size=64"]


def plan(capsys, tmp_path, *words) -> list[str]:
    code = main(["run", *words, f"data.root={MNIST_MINI}", "data.limit=256", f"storage={tmp_path}", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.splitlines()


def test_with_nothing_left_to_search_the_plan_is_one_trial_without_early_stopping(capsys, tmp_path):
    config, _ = parse_run([*MLP_PINS, "epochs=3", f"storage={tmp_path}"])
    assert (config.trials, config.grace) == (1, 3)  # not the default 12 trials of one configuration, not raced
    lines = plan(capsys, tmp_path, *MLP_PINS, "epochs=3")
    search = next(line for line in lines if line.startswith("search: "))
    assert search.startswith("search: 1 trial of mlp_mnist, ") and search.endswith("no early stopping")
    stop = next(line for line in lines if line.startswith("stop rule: "))
    assert stop == (
        "stop rule: 1 trial of up to 3 epochs (trials=); nothing left to search: every searched hyperparameter is "
        "pinned, so one trial (trials=N: N repeats)"
    )
    assert not any(tmp_path.iterdir())


def test_trials_given_with_nothing_to_search_are_repeats_with_their_seeds(capsys, tmp_path):
    config, _ = parse_run([*MLP_PINS, "trials=3", f"storage={tmp_path}"])
    assert config.trials == 3 and config.grace == config.epochs
    stop = next(line for line in plan(capsys, tmp_path, *MLP_PINS, "trials=3", "seed=5") if "stop rule" in line)
    assert stop.endswith("; nothing left to search: 3 repeats of one configuration, seeds 5, 6, 7")
    under_budget, _ = parse_run([*MLP_PINS, "epoch_budget=9", f"storage={tmp_path}"])
    assert under_budget.trials == 1  # the budget caps the one trial; it buys no copies of it


def test_a_search_with_something_left_keeps_its_trials_and_asha(capsys, tmp_path):
    partly, _ = parse_run([*MLP_PINS[:-1], f"storage={tmp_path}"])  # batch_size still searched
    assert partly.trials == 12 and partly.grace < partly.epochs
    assert not any("nothing left" in line for line in plan(capsys, tmp_path, *MLP_PINS[:-1]))
    alone, _ = parse_run([*CNN_PINS, f"storage={tmp_path}"])
    costs, _ = parse_run([*CNN_PINS, "objectives=val_acc,params", f"storage={tmp_path}"])
    assert alone.trials == 1 and costs.trials == 12  # with a second objective the width is searched


def test_from_python_a_pinned_search_plans_repeats_and_warns_of_a_pin_outside_the_range(capsys, tmp_path):
    import search.api

    pins = {"lr": 0.5, "hidden": 128, "layers": 1, "dropout": 0.1, "batch_size": 64}
    search.api.run("mlp_mnist", dry_run=True, trials=2, data={"root": str(MNIST_MINI)}, storage=str(tmp_path), **pins)
    out, err = capsys.readouterr()
    assert "nothing left to search: 2 repeats of one configuration, seeds 0, 1" in out
    assert err.splitlines() == ["warning: lr=0.5 is outside the searched range (float, log scale, 0.0001 .. 0.01)"]


def test_resume_with_a_budget_keeps_a_pinned_search_one_configuration(tmp_path):
    config, _ = parse_run([*MLP_PINS, "epoch_budget=1", "epochs=1", f"storage={tmp_path}"])
    assert config.trials == 1
    grown = resumed_config(config.to_dict(), {"epoch_budget": "5"})
    assert grown.trials == 1 and grown.epoch_budget == 5
    searched, _ = parse_run([*MLP_PINS[:-1], "epoch_budget=1", "epochs=1", f"storage={tmp_path}"])
    assert resumed_config(searched.to_dict(), {"epoch_budget": "5"}).trials == 5  # trials follow the budget


def record_of(config, space) -> StudyRecord:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, direction="maximize")
    coding = coding_for(config, space)
    return StudyRecord(study, storage, coding, "val_acc", "max", config.epochs, config.constants(space))


def test_each_repeat_carries_its_seed_into_its_configuration_the_study_and_the_summary(tmp_path):
    config, space = parse_run([*MLP_PINS, "trials=3", "seed=4", f"storage={tmp_path}"])
    record = record_of(config, space)
    searcher = StudySearcher(record, [], "val_acc", "max", config.seed)
    proposed = [searcher.suggest(f"t{number}") for number in range(3)]
    assert [trial[SEED_KEY] for trial in proposed] == [4, 5, 6]
    assert [trial.user_attrs[SEED_KEY] for trial in record.proposed()] == [4, 5, 6]  # kept in the study
    assert record.config_of("t1")[SEED_KEY] == 5 and record.config_of("t1")["lr"] == 0.001
    results = trial_results(record, Experiment.at(str(tmp_path / "x")))
    assert [result.config[SEED_KEY] for result in results] == [4, 5, 6]  # the trial table's column

    again = StudySearcher(record, [record.frozen("t1")], "val_acc", "max", config.seed)  # `resume` runs it again
    assert again.suggest("other")[SEED_KEY] == 5
    record.write_end("t0", Ending(STOPPED_BY_BUDGET))  # a budget stopped it; a grown search continues it
    continued = continue_stopped_by_budget(record)
    assert [trial.user_attrs[SEED_KEY] for trial in continued] == [4]  # a continuation trains on with its seed
    assert StudySearcher(record, [], "val_acc", "max", config.seed).suggest("t3")[SEED_KEY] == 7


def test_a_repeat_a_crash_left_without_its_seed_gets_the_seed_its_place_gives(tmp_path):
    """The study trial is created before its seed is written: a kill between the two leaves a repeat without one,
    which `resume` runs with the seed its place among the trials gives, not the run's (a copy of the first)."""
    config, space = parse_run([*MLP_PINS, "trials=3", "seed=4", f"storage={tmp_path}"])
    record = record_of(config, space)
    searcher = StudySearcher(record, [], "val_acc", "max", config.seed)
    searcher.suggest("t0")
    record.create("t1")  # killed here: no seed written
    again = StudySearcher(record, [record.frozen("t1")], "val_acc", "max", config.seed)
    assert again.suggest("other")[SEED_KEY] == 5


def test_a_search_proposes_no_seed(tmp_path):
    config, space = parse_run([*MLP_PINS[:-1], f"storage={tmp_path}"])
    record = record_of(config, space)
    suggested = StudySearcher(record, [], "val_acc", "max", config.seed).suggest("t0")
    assert SEED_KEY not in suggested and TRIAL_KEY in suggested and "batch_size" in suggested
    assert SEED_KEY not in record.config_of("t0")


def test_a_repeats_seed_moves_its_batch_order_not_its_validation_split(tmp_path):
    config, space = parse_run([*MLP_PINS, "data.limit=256", "data.val_limit=64", f"data.root={MNIST_MINI}"])
    hp = config.constants(space)
    assert training_seed(config.seed, hp) == config.seed and training_seed(config.seed, {SEED_KEY: 3}) == 3
    feeds = [make_feed(space, config, {**hp, SEED_KEY: seed}, 0, 1, torch.device("cpu")) for seed in (0, 1)]
    first_batches = [next(iter(feed.train_batches(1)))[1] for feed in feeds]
    validation = [torch.cat([labels for _, labels in feed.val_batches()]) for feed in feeds]
    assert not torch.equal(*first_batches)
    assert torch.equal(*validation)


def test_repeats_report_the_mean_and_spread_of_validation_and_test_accuracy(tmp_path):
    """Repeats are measured as mean and standard deviation across the seeds (table, summary.json, report, the
    API's result), not by one "best" seed; each repeat's test accuracy is measured, the best's not twice."""
    from search.results.repeat_spread import add_repeats
    from search.results.summary import format_table
    from search.start import SearchResult

    trials = [
        {"trial_id": f"r{seed}", "status": "completed", "epochs_run": 1, "config": {SEED_KEY: seed, "lr": 0.001}}
        for seed in range(3)
    ]
    for trial, value in zip(trials, (0.90, 0.92, 0.94)):
        trial.update(val_acc=value, checkpoint=f"c{trial['trial_id']}")
    best = {"trial_id": "r2", "test_acc": 0.93, "test_samples": 100}
    summary = {"metric": "val_acc", "mode": "max", "best": best, "trials": trials}
    tested = []

    def test_of(trial):
        tested.append(trial["trial_id"])
        return {"test_acc": {"r0": 0.89, "r1": 0.91}[trial["trial_id"]], "test_samples": 100}

    add_repeats(summary, test_of)
    assert tested == ["r0", "r1"] and [trial["test_acc"] for trial in trials] == [0.89, 0.91, 0.93]
    figures = summary["repeats"]
    assert figures["count"] == 3 and figures["val_acc"]["n"] == figures["test_acc"]["n"] == 3
    assert figures["val_acc"]["mean"] == pytest.approx(0.92) and figures["val_acc"]["std"] == pytest.approx(0.02)
    assert figures["test_acc"]["mean"] == pytest.approx(0.91) and figures["test_acc"]["std"] == pytest.approx(0.02)
    assert format_table(summary).splitlines()[-1] == (
        "repeats: 3 seeds of one configuration, mean ± standard deviation: val_acc 0.9200 ± 0.0200 (n=3), "
        "test_acc 0.9100 ± 0.0200 (n=3)"
    )
    assert SearchResult(summary, Experiment.at(str(tmp_path))).repeats == figures
    searched = {**summary, "trials": [{**trial, "config": {"lr": 0.001}} for trial in trials]}
    searched.pop("repeats")
    add_repeats(searched, test_of)
    assert "repeats" not in searched and "repeats:" not in format_table(searched)  # a search has no spread


@pytest.mark.e2e
def test_a_fully_pinned_search_trains_its_repeats(python_searches):
    """Two repeats of mlp_mnist with every key pinned, lr outside its range (tests/python_searches.py's PINNED)."""
    experiment = python_searches["runs"] / "one"
    assert re.search(r"search: 2 trials of mlp_mnist, [^\n]*log in \S*/one/search\.log", python_searches["stdout"])
    assert (
        "warning: lr=0.02 is outside the searched range (float, log scale, 0.0001 .. 0.01)\n"
        in (python_searches["stderr"])
    )
    summary = json.loads((experiment / "summary.json").read_text())
    assert sorted(trial["config"][SEED_KEY] for trial in summary["trials"]) == [0, 1]
    assert {trial["config"]["lr"] for trial in summary["trials"]} == {0.02}
    assert [trial["status"] for trial in summary["trials"]] == ["completed", "completed"]
    assert len([path for path in experiment.glob("trial_*") if path.is_dir()]) == 2
    # each repeat tested, and their spread in summary.json and at the end of the table
    assert all(0 < trial["test_acc"] <= 1 for trial in summary["trials"])
    figures = summary["repeats"]
    assert figures["count"] == 2 and figures["val_acc"]["n"] == figures["test_acc"]["n"] == 2
    tests = [trial["test_acc"] for trial in summary["trials"]]
    assert figures["test_acc"]["mean"] == pytest.approx(sum(tests) / 2)
    assert "repeats: 2 seeds of one configuration, mean ± standard deviation: val_acc " in python_searches["stdout"]
    # The trial's process had torch imported before the trial began (preloaded), not yet the rest of its modules.
    trial_id = next(trial["trial_id"] for trial in summary["trials"] if trial["config"][SEED_KEY] == 0)
    first = json.loads((experiment / f"trial_{trial_id}" / "result.json").read_text().splitlines()[0])
    assert first["torch_found"] == 1 and first["warm_imports"] < len(TRIAL_MODULES), first


@pytest.mark.e2e
def test_a_space_of_three_configurations_runs_each_once_and_then_has_nothing_to_grow(python_searches):
    """mlp_mnist with hidden left to search, trials=5 asked (tests/python_searches.py's THREE)."""
    experiment = python_searches["runs"] / "three"
    said = "search: 3 trials (the space holds 3 configurations, each run once) of mlp_mnist, "
    assert said in python_searches["stdout"]
    summary = json.loads((experiment / "summary.json").read_text())
    assert sorted(trial["config"]["hidden"] for trial in summary["trials"]) == [128, 256, 512]
    assert {trial["status"] for trial in summary["trials"]} == {"completed"}
    grown = run_cli("resume", str(experiment), "trials=8")
    assert grown.returncode == 2, grown.stdout[-2000:] + grown.stderr[-2000:]
    assert "already ran every one of the 3 configurations its space holds" in grown.stderr
    idle = run_cli("resume", str(experiment))  # nothing asked: where the result is, and that nothing grows it
    assert idle.returncode == 0, idle.stdout[-2000:] + idle.stderr[-2000:]
    assert "it ran every one of the 3 configurations its space holds: nothing is left to search" in idle.stdout
    assert "trials=N" not in idle.stdout
