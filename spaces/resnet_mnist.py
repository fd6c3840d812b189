"""ResNet-18 on MNIST, 1-channel conv1, SGD with momentum (the Ray Train ResNet-18/MNIST tutorial)."""

from optuna.distributions import CategoricalDistribution, FloatDistribution

from search.space import Space

SPACE = Space(
    name="resnet_mnist",
    description="ResNet-18 (1-channel conv1) on MNIST",
    architecture="resnet18",
    model_args=lambda hp, data: {"in_channels": data.in_channels, "num_classes": data.num_classes,
                                 "stem": hp.get("stem", "imagenet")},  # fmt: skip
    dataset="mnist",
    hyperparameters={
        "lr": FloatDistribution(1e-3, 0.3, log=True),
        "momentum": FloatDistribution(0.5, 0.99),
        "weight_decay": FloatDistribution(1e-6, 1e-2, log=True),
        "batch_size": CategoricalDistribution([32, 64, 128, 256]),
    },
    constants={"optimizer": "sgd"},
    metric="val_acc",
    mode="max",
)
