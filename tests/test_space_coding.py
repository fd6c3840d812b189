"""The study holds the values that trained (search.running.space_coding): a study's params are the configuration's
values, which plain Optuna reads back. Pure Optuna, no Ray."""

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from search.running.space_coding import SpaceCoding
from search.running.study_setup import coding_for
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space

SPACE = {
    "lr": FloatDistribution(1e-3, 0.3, log=True),
    "shift": IntDistribution(0, 4),
    "batch_size": CategoricalDistribution([32, 64, 128, 256]),
    "optimizer": CategoricalDistribution(["sgd", "adam"]),
}


def test_the_search_holds_a_numeric_choice_as_its_position_for_tpe_and_gives_back_its_value():
    """Positions let TPE see the order of 32 < 64 < 128 < 256 (far better on the resnet_mnist table); the
    configuration a trial trains with is the values, whichever the study holds."""
    coding = coding_for(RunConfig(sampler="tpe"), load_space("resnet_mnist"))  # what a search's study holds
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=2), direction="maximize")
    for _ in range(6):
        trial = study.ask(coding.distributions)
        config = coding.to_config(trial.params)
        study.tell(trial, float(config["batch_size"] == 128))
        assert config["batch_size"] in (16, 32, 64, 128, 256) and coding.to_params(config) == trial.params
    assert all(isinstance(t.distributions["batch_size"], IntDistribution) for t in study.trials)
    assert coding_for(RunConfig(sampler="random"), load_space("resnet_mnist")).ordered == {}  # random: the values


def test_the_ordered_coding_the_replays_compare_holds_positions_and_maps_them_back():
    ordered = SpaceCoding(SPACE, order_numbers=True)
    assert ordered.distributions["batch_size"] == IntDistribution(0, 3)
    assert ordered.to_config({"batch_size": 2, "optimizer": "adam"}) == {"batch_size": 128, "optimizer": "adam"}
    assert ordered.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 2}  # unsearched keys left out
    values = SpaceCoding(SPACE)
    assert values.distributions == SPACE and values.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 128}


def test_a_search_goes_on_with_the_coding_its_study_began_with(tmp_path):
    from search.running.sampler import make_sampler
    from search.running.study import StudyRecord
    from search.running.study_setup import open_search_study
    from trainables.foundation.objectives import Objective
    from trainables.foundation.storage import Experiment

    space = load_space("mlp_mnist")
    config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e", trials=8, epochs=1)
    experiment = Experiment.at(str(tmp_path / "e"))
    experiment.local.mkdir()
    old = SpaceCoding(dict(space.hyperparameters), order_numbers=False)  # values, as studies held them for a while
    record = StudyRecord.in_folder(experiment.local, old, [Objective("val_acc", "max")], 1, dict(space.constants))
    record.study.sampler = make_sampler("random", 0, 2)
    record.create("old")
    assert isinstance(record.study.trials[0].distributions["batch_size"], CategoricalDistribution)
    resumed = open_search_study(config, space, experiment)
    config_of_new = resumed.coding.to_config(resumed.create("new").params)  # Optuna refuses a new kind of distribution
    assert config_of_new["batch_size"] in space.hyperparameters["batch_size"].choices
    fresh = Experiment.at(str(tmp_path / "f"))
    fresh.local.mkdir()
    assert open_search_study(config, space, fresh).coding.ordered  # a new search: positions
