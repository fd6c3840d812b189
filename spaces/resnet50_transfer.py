"""ResNet-50 transfer learning on one ImageFolder tree split into train/val by `train_pct` (Stanford Dogs tutorial).

SGD with momentum 0.9, ReduceLROnPlateau on the validation loss, optional frozen backbone. `pretrained=true` takes
ImageNet weights from `model.weights=PATH` or, online, from torchvision's download (never a silent random init).
"""

from optuna.distributions import CategoricalDistribution, FloatDistribution

from spaces import Space

SPACE = Space(
    name="resnet50_transfer",
    description="ResNet-50 transfer learning on one ImageFolder tree split by train_pct, SGD + ReduceLROnPlateau",
    architecture="resnet50",
    model_args=lambda hp, data: {
        "in_channels": data.in_channels,
        "num_classes": data.num_classes,
        "freeze_backbone": hp["freeze_backbone"],
    },
    dataset="imagefolder_split",
    hyperparameters={
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "weight_decay": FloatDistribution(1e-6, 1e-3, log=True),
        "batch_size": CategoricalDistribution([16, 32, 64]),
    },
    cost_hyperparameters={"image_size": CategoricalDistribution([128, 160, 224])},  # with a second objective
    constants={
        "optimizer": "sgd",
        "momentum": 0.9,
        "lr_schedule": "plateau",
        "pretrained": True,
        "freeze_backbone": False,
        "train_pct": 0.8,
        "image_size": 224,
    },
)
