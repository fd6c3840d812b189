"""The 'vanilla' baseline: a fully connected net on MNIST's 784 pixels, hidden layers (width and depth) searched; with a
second objective the widths go down to 32."""

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from spaces import Space

SPACE = Space(
    name="mlp_mnist",
    description="fully connected net on MNIST's 784 pixels, hidden layers searched, Adam",
    architecture="mlp",
    model_args=lambda hp, data: {
        "in_channels": data.in_channels,
        "num_classes": data.num_classes,
        "image_size": data.image_size,
        "hidden": hp["hidden"],
        "layers": hp["layers"],
        "dropout": hp["dropout"],
    },
    dataset="mnist",
    hyperparameters={
        "lr": FloatDistribution(1e-4, 1e-2, log=True),
        "hidden": CategoricalDistribution([128, 256, 512]),
        "layers": IntDistribution(1, 3),
        "dropout": FloatDistribution(0.0, 0.5),
        "batch_size": CategoricalDistribution([64, 128, 256]),
    },
    cost_hyperparameters={"hidden": CategoricalDistribution([32, 64, 128, 256, 512])},  # narrower, when cost counts
    constants={"optimizer": "adam", "weight_decay": 0.0},
)
