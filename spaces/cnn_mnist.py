"""The PyTorch MNIST example's small CNN (conv 32, conv 64, max-pool, fc 128, fc 10), SGD, MNIST normalization. With a
second objective (`objectives=val_acc,params`) its width is searched too (8 to 64 first-layer channels)."""

from optuna.distributions import CategoricalDistribution, FloatDistribution

from spaces import Space

SPACE = Space(
    name="cnn_mnist",
    description="small CNN (2 conv 32/64, max-pool, fc 128) on MNIST, SGD",
    architecture="cnn",
    model_args=lambda hp, data: {
        "in_channels": data.in_channels,
        "num_classes": data.num_classes,
        "image_size": data.image_size,
        "dropout": hp["dropout"],
        **({"width": hp["width"]} if "width" in hp else {}),  # a cost knob: searched with a second objective
    },
    dataset="mnist",
    hyperparameters={
        "lr": FloatDistribution(1e-3, 0.3, log=True),
        "momentum": FloatDistribution(0.5, 0.99),
        "dropout": FloatDistribution(0.1, 0.5),
        "batch_size": CategoricalDistribution([32, 64, 128]),
    },
    cost_hyperparameters={"width": CategoricalDistribution([8, 16, 32, 64])},  # channels: width, 2x, fc 4x
    constants={"optimizer": "sgd", "weight_decay": 0.0},
)
