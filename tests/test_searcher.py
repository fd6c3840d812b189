"""The sampler and the searcher on synthetic objectives (no training, no Ray instance): TPE guides most of a default
search, trials proposed side by side differ, ASHA-stopped trials are pruned with their epochs, a choice among
numbers is modelled as ordered, seeds reproduce."""

import math

import pytest
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState

from benchmarks.samplers import BATCHES, SHAPED, shaped_score
from search.running.searcher import StudySearcher, good_group, make_sampler, startup_trials

SPACE = {"lr": FloatDistribution(1e-4, 1.0, log=True), "wd": FloatDistribution(1e-5, 1e-1, log=True)}


def score(config: dict) -> float:
    """Best at lr=0.01, wd=1e-3 (a ridge in log space, as accuracy against lr often is)."""
    return -((math.log10(config["lr"]) + 2) ** 2) - ((math.log10(config["wd"]) + 3) ** 2)


def searcher(trials: int, seed: int = 0, sampler: str = "tpe", epochs: int = 3) -> StudySearcher:
    return StudySearcher(dict(SPACE), "val_acc", "max", make_sampler(sampler, seed, trials), epochs)


def run_sequentially(search: StudySearcher, trials: int, score=score) -> list[float]:
    scores = []
    for index in range(trials):
        config = search.suggest(f"t{index}")
        value = score(config)
        search.on_trial_result(f"t{index}", {"val_acc": value, "epoch": 3})
        search.on_trial_complete(f"t{index}", {"val_acc": value, "epoch": 3})
        scores.append(value)
    return scores


@pytest.mark.parametrize("trials, startup", [(4, 2), (8, 2), (16, 4), (40, 10), (200, 10)])
def test_the_random_start_is_a_quarter_of_the_budget(trials, startup):
    assert startup_trials(trials) == startup
    sampler = make_sampler("tpe", 0, trials)
    assert sampler._n_startup_trials == startup and sampler._multivariate and sampler._constant_liar


@pytest.mark.parametrize("finished, good", [(4, 1), (12, 3), (16, 4), (200, 25)])
def test_tpe_models_a_fifth_of_the_finished_trials_as_good(finished, good):
    assert good_group(finished) == good and make_sampler("tpe", 0, 12)._gamma is good_group


def test_a_default_budget_is_guided_and_beats_random_search():
    guided = [max(run_sequentially(searcher(16, seed), 16)) for seed in range(10)]
    random = [max(run_sequentially(searcher(16, seed, "random"), 16)) for seed in range(10)]
    assert sum(guided) > sum(random), (guided, random)


def test_trials_proposed_side_by_side_are_not_near_identical():
    search = searcher(16)
    run_sequentially(search, 6)  # past the random start: TPE proposes
    running = [search.suggest(f"r{index}") for index in range(4)]  # none has reported yet
    logs = sorted(math.log10(config["lr"]) for config in running)
    assert min(b - a for a, b in zip(logs, logs[1:])) > 1e-3, logs


def test_an_asha_stopped_trial_is_pruned_with_its_epochs_and_a_failed_one_fails():
    search = searcher(8, epochs=3)
    search.suggest("stopped"), search.suggest("failed"), search.suggest("done")
    search.on_trial_result("stopped", {"val_acc": 0.5, "epoch": 1})
    search.on_trial_result("stopped", {"val_acc": 0.5, "epoch": 1})  # replayed after a resume: reported once
    search.on_trial_complete("stopped", {"val_acc": 0.5, "epoch": 1})
    search.on_trial_complete("failed", {"val_acc": float("nan"), "epoch": 1, "diverged": True})
    search.on_trial_complete("done", {"val_acc": 0.9, "epoch": 3})
    stopped, failed, done = search.study.trials
    assert stopped.state == TrialState.PRUNED and stopped.intermediate_values == {1: 0.5}
    assert failed.state == TrialState.FAIL
    assert done.state == TrialState.COMPLETE and done.value == 0.9


def test_the_same_seed_proposes_the_same_trials_and_a_restored_searcher_goes_on(tmp_path):
    first, second = searcher(8), searcher(8)
    assert run_sequentially(first, 8) == run_sequentially(second, 8)
    first.save(str(tmp_path / "state.pkl"))
    restored = searcher(8, seed=99)
    restored.restore(str(tmp_path / "state.pkl"))
    assert restored.suggest("next") == second.suggest("next")


def test_a_choice_among_numbers_is_ordered_for_tpe_and_that_finds_more():
    def best(seed: int, order_numbers: bool) -> float:
        search = StudySearcher(SHAPED, "val_acc", "max", make_sampler("tpe", seed, 12), 3, order_numbers)
        return max(run_sequentially(search, 12, shaped_score))

    ordered = [best(seed, order_numbers=True) for seed in range(20)]
    unordered = [best(seed, order_numbers=False) for seed in range(20)]  # what Optuna does with a categorical
    assert sum(ordered) > sum(unordered), (ordered, unordered)
    search = StudySearcher(SHAPED, "val_acc", "max", make_sampler("tpe", 0, 12), 3)
    run_sequentially(search, 4, shaped_score)  # past the random start: TPE proposes
    assert search.study.trials[0].distributions["batch_size"] == IntDistribution(0, 3)
    assert search.suggest("next")["batch_size"] in BATCHES


def test_random_search_keeps_a_choice_among_numbers_categorical():
    search = StudySearcher(SHAPED, "val_acc", "max", make_sampler("random", 0, 12), 3)
    run_sequentially(search, 2, shaped_score)
    assert search.study.trials[0].distributions["batch_size"] == SHAPED["batch_size"]
    assert search.suggest("next")["batch_size"] in BATCHES
