"""The named choices of a trial's training (optimizer, lr schedule, ResNet stem), without torch: a bad value is
refused before torch or Ray is imported. trainables.training and trainables.models implement them."""

from trainables.foundation.schedules import LR_SCHEDULES

OPTIMIZER_NAMES = ("sgd", "adam", "adamw")
STEMS = ("imagenet", "small")
CHOICES = {"optimizer": OPTIMIZER_NAMES, "lr_schedule": LR_SCHEDULES, "stem": STEMS}
