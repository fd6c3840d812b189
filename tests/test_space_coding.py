"""The study holds the values that trained (search.running.study.coding): a study's params are the configuration's
values, which plain Optuna reads back. Pure Optuna, no Ray."""

import math

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.running.proposals.study_setup import coding_for
from search.running.study.coding import SpaceCoding, ordered_choices
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space

SPACE = {
    "lr": FloatDistribution(1e-3, 0.3, log=True),
    "shift": IntDistribution(0, 4),
    "batch_size": CategoricalDistribution([32, 64, 128, 256]),
    "optimizer": CategoricalDistribution(["sgd", "adam"]),
}


def test_a_studys_params_equal_the_configurations_values_and_tpe_proposes_as_over_positions():
    """The study holds batch_size 128 (what plain Optuna and optuna-dashboard show); the search's TPE models it in
    order (OrderedTPESampler), proposing exactly what TPE proposes over positions with the same seed."""
    from search.running.proposals.sampler import make_sampler

    space = load_space("resnet_mnist")
    values = coding_for(RunConfig(sampler="tpe"), space)  # what a search's study holds
    positions = SpaceCoding(values.space, order_numbers=True)
    assert values.ordered == {} and positions.ordered

    def objective(config):
        return -abs(math.log2(config["batch_size"]) - 6) - abs(math.log10(config["lr"]) + 1.5) + config["shift"] / 10

    for seed, directions in ((0, ["maximize"]), (1, ["maximize"]), (2, ["maximize", "minimize"])):
        proposed = []  # one objective: Optuna's multivariate TPE; several: its independent TPE
        for coding, sampler in (
            (positions, optuna.samplers.TPESampler(seed=seed, n_startup_trials=3)),
            (values, make_sampler("tpe", seed, 3, ordered_choices(values.space))),
        ):
            study = optuna.create_study(sampler=sampler, directions=directions)
            configs = []
            for _ in range(15):
                trial = study.ask(coding.distributions)
                configs.append(coding.to_config(trial.params))
                scores = [objective(configs[-1]), configs[-1]["batch_size"]]
                study.tell(trial, scores[: len(directions)])
            proposed.append(configs)
        assert proposed[0] == proposed[1]
        assert all(t.params == values.to_config(t.params) for t in study.trials)  # values, as trained
        assert {t.params["batch_size"] for t in study.trials} <= {32, 64, 128, 256}


def test_the_ordered_coding_the_replays_compare_holds_positions_and_maps_them_back():
    ordered = SpaceCoding(SPACE, order_numbers=True)
    assert ordered.distributions["batch_size"] == IntDistribution(0, 3)
    assert ordered.to_config({"batch_size": 2, "optimizer": "adam"}) == {"batch_size": 128, "optimizer": "adam"}
    assert ordered.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 2}  # unsearched keys left out
    values = SpaceCoding(SPACE)
    assert values.distributions == SPACE and values.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 128}


def test_a_search_goes_on_with_the_coding_its_study_began_with(tmp_path):
    from search.running.ends.decider import Decider
    from search.running.proposals.sampler import make_sampler
    from search.running.proposals.study_setup import open_search_study
    from search.running.settings import write_settings
    from search.running.study.endings import EndFacts, Ending
    from search.running.study.record import StudyRecord
    from search.running.trial_results import summary_so_far
    from trainables.foundation.objectives import Objective
    from trainables.foundation.storage import Experiment

    space = load_space("mlp_mnist")
    config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e", trials=8, epochs=1)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    old = SpaceCoding(dict(space.hyperparameters), order_numbers=True)  # positions, as studies held them before
    record = StudyRecord.in_folder(experiment.local, old, [Objective("val_acc", "max")], 1, dict(space.constants))
    record.study.sampler = make_sampler("random", 0, 2)
    record.create("old")
    assert isinstance(record.study.trials[0].distributions["batch_size"], IntDistribution)
    resumed = open_search_study(config, space, experiment)
    config_of_new = resumed.coding.to_config(resumed.create("new").params)  # Optuna refuses a new kind of distribution
    assert config_of_new["batch_size"] in space.hyperparameters["batch_size"].choices
    resumed.report("new", 1, 0.9)
    Decider.without_files(resumed).end("new", EndFacts(0, written=Ending("completed")))
    write_settings(experiment, {"run": config.to_dict()})
    summary, unended = summary_so_far(experiment)  # `report` and `status` read it so: values, not positions
    assert unended == 1 and summary["trials"][0]["config"]["batch_size"] == config_of_new["batch_size"]
    fresh = Experiment.at(str(tmp_path / "f"))
    fresh.local.mkdir()
    assert open_search_study(config, space, fresh).coding.distributions == space.hyperparameters  # new: values
