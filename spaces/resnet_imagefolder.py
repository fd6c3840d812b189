"""ResNet-18 on an ImageFolder tree with train/ and val/ (Tiny ImageNet layout); classes from the folders.

Train: random resized crop + horizontal flip; val: resize + center crop; `image_size` is a key (64 for Tiny ImageNet).
"""

from optuna.distributions import CategoricalDistribution, FloatDistribution

from spaces import Space

SPACE = Space(
    name="resnet_imagefolder",
    description="ResNet-18 on an ImageFolder tree (train/, val/; Tiny ImageNet layout), SGD",
    architecture="resnet18",
    dataset="imagefolder",
    hyperparameters={
        "lr": FloatDistribution(1e-3, 0.3, log=True),
        "momentum": FloatDistribution(0.5, 0.99),
        "weight_decay": FloatDistribution(1e-6, 1e-2, log=True),
        "batch_size": CategoricalDistribution([16, 32, 64]),
    },
    cost_hyperparameters={"image_size": CategoricalDistribution([32, 48, 64])},  # with a second objective
    constants={"optimizer": "sgd", "image_size": 64},
)
