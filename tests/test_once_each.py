"""A space of finitely many configurations: the search proposes each once, and its stop rule runs no more trials than
the space has configurations left (search.running.proposals.unrun). No Ray: a real study in its journal file."""

import dataclasses
import json

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.plan import shape_words, stop_rule_words
from search.running.ends.decider import Decider
from search.running.growth import SoFar, nothing_left, refuse_idle
from search.running.proposals.study_setup import (
    configurations_left,
    enqueued_configurations,
    open_search_study,
    sampler_for,
    search_trials,
)
from search.running.proposals.unrun import OnceEachSampler, configuration_count, held_configurations
from search.running.study.coding import SpaceCoding
from search.running.study.endings import EndFacts, Ending
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.space import load_space
from trainables.foundation.storage import Experiment

SPACE = load_space("mlp_mnist")  # lr, dropout continuous; hidden 128/256/512, layers 1..3, batch_size 64/128/256
PINNED = {"lr": 0.001, "dropout": 0.1, "layers": 2}  # left: hidden x batch_size, 9 configurations


def configured(tmp_path, name="e", **keys) -> RunConfig:
    return RunConfig(space="mlp_mnist", storage=str(tmp_path), name=name, epochs=1, fixed=dict(PINNED), **keys)


def study_in(tmp_path, name="e", enqueued=(), **keys):
    experiment = Experiment.at(str(tmp_path / name))
    experiment.local.mkdir()
    return open_search_study(configured(tmp_path, name, **keys), SPACE, experiment, list(enqueued))


def score(config: dict) -> float:
    """Best at the widest net and the smallest batches: a TPE without the rule re-proposes the best it has seen."""
    return config["hidden"] / 512 - config["batch_size"] / 1024


def searched(record, trials: int) -> list[tuple]:
    """`trials` trials proposed one after another, each finished with its score; their configurations in order."""
    proposed = []
    for _ in range(trials):
        trial_id = f"t{len(record.proposed())}"
        config = record.coding.to_config(record.create(trial_id).params)
        record.report(trial_id, 1, score(config))
        Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending("completed")))
        proposed.append((config["hidden"], config["batch_size"]))
    return proposed


def test_the_configurations_a_space_holds_are_counted_only_without_a_continuous_range():
    choices = {"hidden": CategoricalDistribution([128, 256, 512]), "layers": IntDistribution(1, 3)}
    assert configuration_count(choices) == 9
    assert configuration_count({**choices, "even": IntDistribution(0, 8, step=2)}) == 45
    assert configuration_count({"wide": IntDistribution(0, 10**12)}) == 10**12 + 1  # counted, never listed
    assert configuration_count({**choices, "lr": FloatDistribution(1e-4, 1e-2, log=True)}) is None
    assert configuration_count({}) is None  # nothing searched: repeats of one configuration, each with its seed
    continuous = SpaceCoding({name: d for name, d in SPACE.hyperparameters.items() if name != "lr"})
    assert not isinstance(sampler_for("tpe", continuous, 0, 2), OnceEachSampler)  # dropout: the sampler as it is


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_finite_space_has_every_configuration_proposed_once_and_the_samplers_own_until_it_would_repeat(
    tmp_path, sampler
):
    record = study_in(tmp_path, trials=9, sampler=sampler)
    assert isinstance(record.study.sampler, OnceEachSampler)
    once = searched(record, 9)
    assert len(set(once)) == 9  # all nine, none twice

    plain = study_in(tmp_path, "plain", trials=9, sampler=sampler)
    plain.study.sampler = plain.study.sampler.base  # the same sampler and seed without the rule
    alone = searched(plain, 9)
    first_repeat = next(n for n, config in enumerate(alone) if config in alone[:n])  # it runs some twice
    assert once[:first_repeat] == alone[:first_repeat]  # until then, the sampler's own proposals

    left = configurations_left(configured(tmp_path, trials=20), SPACE, plain.proposed())
    assert left == 9 - len(set(alone)) > 0  # a study holding repeats (one made before the rule) still has some
    assert search_trials(configured(tmp_path, trials=20), SPACE, plain.proposed()) == 9 + left
    assert search_trials(configured(tmp_path, trials=20), SPACE, record.proposed()) == 9  # none left


def test_running_trials_and_a_configuration_given_in_part_count_as_proposed_a_cut_proposal_does_not(tmp_path):
    given = [{"hidden": 512}] * 2 + [{"hidden": 512, "batch_size": 64}]  # batch_size chosen for the first two
    record = study_in(tmp_path, trials=9, enqueued=given)
    names = list(record.coding.distributions)  # hidden, batch_size
    assert held_configurations(record.study.get_trials(deepcopy=False), names) == {(512, 64)}  # the whole one waits
    running = [record.coding.to_config(record.create(f"r{number}").params) for number in range(3)]  # none ends
    assert (running[2]["hidden"], running[2]["batch_size"]) == (512, 64)  # held while it waited: not chosen before
    cut = record.study.ask(record.coding.distributions)  # a proposal a kill cut short before it was named
    record.fail_unnamed(cut.number, "never started")
    running += [record.coding.to_config(record.create(f"r{number}").params) for number in range(3, 9)]
    assert {config["batch_size"] for config in running[:3]} == {64, 128, 256} and running[0]["hidden"] == 512
    assert len({(config["hidden"], config["batch_size"]) for config in running}) == 9  # the cut one's among them


def test_the_stop_rule_runs_and_says_at_most_the_configurations_the_space_holds(tmp_path):
    finite = configured(tmp_path, trials=12)
    assert search_trials(finite, SPACE) == 9
    assert shape_words(finite, SPACE).startswith("9 trials of mlp_mnist, ")
    assert stop_rule_words(finite, SPACE).endswith("the space holds 9 configurations, each run once: at most 9 trials")
    assert "configurations" not in stop_rule_words(RunConfig(space="mlp_mnist", trials=12), SPACE)
    budget = configured(tmp_path, trials=100, epoch_budget=100)
    assert shape_words(budget, SPACE).startswith("trials until 100 trial-epochs are spent, at most 9 of mlp_mnist")
    with pytest.raises(UsageError, match="already ran every one of the 9 configurations its space holds"):
        refuse_idle(finite, {"trials": "20"}, SoFar(9, 9, 0), (9, 0))
    refuse_idle(finite, {"trials": "20"}, SoFar(9, 9, 0), (9, 2))  # two a study with repeats never ran: it goes on
    refuse_idle(finite, {"trials": "20"}, SoFar(9, 9, 1), (9, 0))  # one a budget stopped: it goes on


def test_nothing_is_left_only_when_every_configuration_ran_and_no_budget_stopped_a_trial():
    assert nothing_left(SoFar(9, 9, 0), (9, 0)) == 9  # resume with no keys says so; with trials=N it refuses
    assert nothing_left(SoFar(9, 9, 0), (9, 2)) == 0  # two never ran (a study with repeats): it can grow
    assert nothing_left(SoFar(9, 9, 1), (9, 0)) == 0  # a budget stopped one: time_budget=S continues it
    assert nothing_left(SoFar(9, 9, 0), None) == 0  # a continuous space: trials=N proposes more


def test_a_configuration_the_space_no_longer_holds_takes_no_place_of_those_left(tmp_path):
    record = study_in(tmp_path, trials=9)
    searched(record, 9)
    proposed = record.proposed()
    narrowed = dataclasses.replace(
        SPACE, hyperparameters={**SPACE.hyperparameters, "hidden": CategoricalDistribution([128, 256])}
    )
    widened = dataclasses.replace(
        SPACE, hyperparameters={**SPACE.hyperparameters, "hidden": CategoricalDistribution([128, 256, 512, 1024])}
    )
    assert configurations_left(configured(tmp_path), SPACE, proposed) == 0
    assert configurations_left(configured(tmp_path), narrowed, proposed) == 0  # the trials at 512 hold no place
    assert configurations_left(configured(tmp_path), widened, proposed) == 3  # 1024 with each batch size


def test_a_study_that_holds_numeric_choices_as_positions_counts_its_configurations_in_them(tmp_path):
    from search.running.proposals.sampler import make_sampler
    from search.running.study.record import StudyRecord
    from trainables.foundation.objectives import Objective

    experiment = Experiment.at(str(tmp_path / "old"))
    experiment.local.mkdir()
    searched_keys = {name: SPACE.hyperparameters[name] for name in ("hidden", "batch_size")}
    positions = SpaceCoding(searched_keys, order_numbers=True)  # as studies held them before
    first = StudyRecord.in_folder(experiment.local, positions, [Objective("val_acc", "max")], 1, dict(SPACE.constants))
    first.study.sampler = make_sampler("random", 0, 2)
    first.create("t0")
    record = open_search_study(configured(tmp_path, "old", trials=9), SPACE, experiment)  # goes on in positions
    assert record.coding.ordered
    searched(record, 8)
    assert configurations_left(configured(tmp_path, "old"), SPACE, record.proposed()) == 0


def test_a_whole_configuration_given_twice_with_enqueue_runs_once(tmp_path):
    given = tmp_path / "given.json"
    whole, part = {"hidden": 512, "batch_size": 64}, {"hidden": 128}  # a part: the search chooses the rest each time
    given.write_text(json.dumps([whole, part, {"batch_size": 64, "hidden": 512}, part]))
    assert enqueued_configurations(configured(tmp_path, enqueue=str(given)), SPACE) == [whole, part, part]
