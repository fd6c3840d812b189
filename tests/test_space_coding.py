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


def test_a_studys_params_equal_the_configurations_values():
    coding = coding_for(RunConfig(sampler="tpe"), load_space("resnet_mnist"))  # what a search's study holds
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=2), direction="maximize")
    for _ in range(6):
        trial = study.ask(coding.distributions)
        config = coding.to_config(trial.params)
        study.tell(trial, float(config["batch_size"] == 128))
        assert trial.params == config and coding.to_params(config) == config
    assert all(t.params["batch_size"] in (32, 64, 128, 256) for t in study.trials)


def test_the_ordered_coding_the_replays_compare_holds_positions_and_maps_them_back():
    ordered = SpaceCoding(SPACE, order_numbers=True)
    assert ordered.distributions["batch_size"] == IntDistribution(0, 3)
    assert ordered.to_config({"batch_size": 2, "optimizer": "adam"}) == {"batch_size": 128, "optimizer": "adam"}
    assert ordered.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 2}  # unsearched keys left out
    values = SpaceCoding(SPACE)
    assert values.distributions == SPACE and values.to_params({"batch_size": 128, "epochs": 3}) == {"batch_size": 128}
