"""The named choices of a trial's training, without torch: a bad value is refused before torch or Ray loads."""

from trainables.foundation.schedules import LR_SCHEDULES

OPTIMIZER_NAMES = ("sgd", "adam", "adamw")
STEMS = ("imagenet", "small")
CHOICES = {"optimizer": OPTIMIZER_NAMES, "lr_schedule": LR_SCHEDULES, "stem": STEMS}
