"""The ASHA a search's settings ask for: Tune's stopping rule on one objective or on several (a Pareto front), or its
promotion variant (`asha=promote`), rebuilt from the study before Tune runs. No Ray beyond Tune's scheduler API."""

from __future__ import annotations

from search.running.asha.pareto_asha import ParetoASHA
from search.running.asha.study_asha import StudyASHA
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space


def scheduler_of(config: RunConfig, record: StudyRecord, space: Space):
    """ASHA for `config` (whose grace is resolved), on one objective or several, rebuilt from the study and writing
    its decisions into it; one objective's ASHA is given the metric and mode the Tuner gives it too (rebuilt at once:
    a session runs while a promotion is owed)."""
    rungs = dict(max_t=config.epochs, grace_period=config.grace, reduction_factor=config.reduction)
    if record.multi_objective:
        return ParetoASHA(objectives=record.objectives, history=record.proposed(), record=record, **rungs)
    promote, history = config.asha == "promote", record.proposed()
    scheduler = StudyASHA(time_attr="epoch", history=history, record=record, promote=promote, **rungs)
    scheduler.set_search_properties(space.metric, space.mode)
    return scheduler


def promotion_owed(config: RunConfig, scheduler, last: bool = False) -> bool:
    """Whether ASHA's promotion variant (asha=promote; one objective) has a paused trial to resume now; `last`: no new
    trial is left to start, so the best paused one goes on while no trial has trained its last epoch."""
    if config.asha != "promote" or not isinstance(scheduler, StudyASHA):
        return False
    return scheduler.promotion() is not None or last and scheduler.last_promotion() is not None
