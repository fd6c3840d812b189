"""ResNet-18 with a 1-channel conv1 on FashionMNIST, Adam, normalized with (0.5, 0.5) (the Ray Train tutorial)."""

from optuna.distributions import CategoricalDistribution, FloatDistribution

from spaces import Space

SPACE = Space(
    name="resnet_fashion_mnist",
    description="ResNet-18 (1-channel conv1) on FashionMNIST, Adam",
    architecture="resnet18",
    dataset="fashion_mnist",
    hyperparameters={
        "lr": FloatDistribution(1e-4, 1e-2, log=True),
        "weight_decay": FloatDistribution(1e-6, 1e-3, log=True),
        "batch_size": CategoricalDistribution([32, 64, 128, 256]),
    },
    constants={"optimizer": "adam"},
)
