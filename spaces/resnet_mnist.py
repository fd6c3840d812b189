"""ResNet-18 on MNIST (the Ray Train ResNet-18/MNIST tutorial's model), trained the way a practitioner would: SGD
with nesterov momentum under a OneCycle learning rate, label smoothing and random shifts of whole batches on the
device, and a 3x3 stride-1 stem that suits 28x28 digits (`stem=imagenet` restores the tutorial's 7x7 stride-2 one).

The ranges are the ones a person would write before knowing the answer (a decade and more around the usual values),
so that the search has something to find. The recipe the measured runs favoured (8 epochs on 5,400 training digits,
2,000 test digits: 99.20-99.55% test accuracy over the runs and seeds measured; benchmarks/README.md) is a set of
pins, not the ranges:

    python -m search run space=resnet_mnist lr=0.06 weight_decay=0.0005 label_smoothing=0.1 shift=3 batch_size=32
"""

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from spaces import Space

SPACE = Space(
    name="resnet_mnist",
    description="ResNet-18 (1-channel, 3x3 stem) on MNIST: SGD nesterov, OneCycle, label smoothing, random shifts",
    architecture="resnet18",
    model_args=lambda hp, data: {
        "in_channels": data.in_channels,
        "num_classes": data.num_classes,
        "stem": hp.get("stem", "small"),
        **({"width": hp["width"]} if "width" in hp else {}),  # a cost knob: searched with a second objective
    },
    dataset="mnist",
    hyperparameters={
        "lr": FloatDistribution(0.005, 0.5, log=True),
        "weight_decay": FloatDistribution(1e-5, 1e-2, log=True),
        "label_smoothing": FloatDistribution(0.0, 0.2),
        "shift": IntDistribution(0, 4),
        "batch_size": CategoricalDistribution([32, 64, 128, 256]),
    },
    cost_hyperparameters={"width": CategoricalDistribution([16, 32, 64])},  # first-stage channels, with a 2nd objective
    constants={"optimizer": "sgd", "momentum": 0.9, "nesterov": True, "lr_schedule": "onecycle", "stem": "small"},
    metric="val_acc",
    mode="max",
)
