"""A space of finitely many configurations: the search proposes each once, and its stop rule runs at most as many
trials as the space holds (search.running.proposals.unrun). No Ray: a real study in its journal file."""

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.plan import shape_words, stop_rule_words
from search.running.ends.decider import Decider
from search.running.growth import SoFar, refuse_idle
from search.running.proposals.study_setup import finite_count, open_search_study, sampler_for, search_trials
from search.running.proposals.unrun import OnceEachSampler, configuration_count
from search.running.study.endings import EndFacts, Ending
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.space import load_space
from trainables.foundation.storage import Experiment

SPACE = load_space("mlp_mnist")  # lr, dropout continuous; hidden 128/256/512, layers 1..3, batch_size 64/128/256
PINNED = {"lr": 0.001, "dropout": 0.1, "layers": 2}  # left: hidden x batch_size, 9 configurations


def configured(tmp_path, name="e", **keys) -> RunConfig:
    return RunConfig(space="mlp_mnist", storage=str(tmp_path), name=name, epochs=1, **keys)


def score(config: dict) -> float:
    """Best at the widest net and the smallest batches: a TPE without the rule re-proposes the best it has seen."""
    return config["hidden"] / 512 - config["batch_size"] / 1024


def searched(record, trials: int) -> list[tuple]:
    """`trials` trials proposed one after another, each finished with its score; their configurations in order."""
    proposed = []
    for number in range(trials):
        trial_id = f"t{number}"
        config = record.coding.to_config(record.create(trial_id).params)
        record.report(trial_id, 1, score(config))
        Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending("completed")))
        proposed.append((config["hidden"], config["batch_size"]))
    return proposed


def test_the_configurations_a_space_holds_are_counted_only_without_a_continuous_range():
    choices = {"hidden": CategoricalDistribution([128, 256, 512]), "layers": IntDistribution(1, 3)}
    assert configuration_count(choices) == 9
    assert configuration_count({**choices, "even": IntDistribution(0, 8, step=2)}) == 45
    assert configuration_count({**choices, "lr": FloatDistribution(1e-4, 1e-2, log=True)}) is None
    assert configuration_count({}) is None  # nothing searched: repeats of one configuration, each with its seed


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_finite_space_has_every_configuration_proposed_once_before_any_twice(tmp_path, sampler):
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    config = configured(tmp_path, trials=9, sampler=sampler, fixed=dict(PINNED))
    record = open_search_study(config, SPACE, experiment)
    assert isinstance(record.study.sampler, OnceEachSampler)
    assert len(set(searched(record, 9))) == 9  # all nine, none twice

    without = Experiment.at(str(tmp_path / "without"))
    without.local.mkdir()
    plain = open_search_study(
        configured(tmp_path, name="without", trials=9, sampler=sampler, fixed=dict(PINNED)), SPACE, without
    )
    plain.study.sampler = plain.study.sampler.base  # the same sampler and seed without the rule: it runs some twice
    assert len(set(searched(plain, 9))) < 9


def test_running_and_enqueued_configurations_count_as_proposed(tmp_path):
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    config = configured(tmp_path, trials=9, fixed=dict(PINNED))
    record = open_search_study(config, SPACE, experiment, [{"hidden": 512, "batch_size": 64}])
    running = [record.coding.to_config(record.create(f"r{number}").params) for number in range(9)]  # none ends
    assert (running[0]["hidden"], running[0]["batch_size"]) == (512, 64)  # the configuration given first
    assert len({(config["hidden"], config["batch_size"]) for config in running}) == 9


def test_a_space_with_a_continuous_range_keeps_the_sampler_as_it_is():
    config = configured("/tmp", trials=9, fixed={"lr": 0.001})  # dropout stays continuous
    coding_space = {name: d for name, d in SPACE.hyperparameters.items() if name not in config.fixed}
    from search.running.study.coding import SpaceCoding

    sampler = sampler_for("tpe", SpaceCoding(coding_space), 0, 2)
    assert not isinstance(sampler, OnceEachSampler)
    assert search_trials(config, SPACE) == 9


def test_the_stop_rule_runs_and_says_at_most_the_configurations_the_space_holds(tmp_path):
    finite = configured(tmp_path, trials=12, fixed=dict(PINNED))
    assert search_trials(finite, SPACE) == 9
    assert shape_words(finite, SPACE).startswith("9 trials of mlp_mnist, ")
    assert stop_rule_words(finite, SPACE).endswith("the space holds 9 configurations, each run once: at most 9 trials")
    assert "configurations" not in stop_rule_words(configured(tmp_path, trials=12), SPACE)
    resumed = configured(tmp_path, trials=20, fixed=dict(PINNED))
    with pytest.raises(UsageError, match="already ran every one of the 9 configurations its space holds"):
        refuse_idle(resumed, {"trials": "20"}, SoFar(9, 9, 0), finite_count(resumed, SPACE))
    refuse_idle(resumed, {"trials": "20"}, SoFar(9, 9, 1), 9)  # one a budget stopped: it goes on
