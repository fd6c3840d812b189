"""What TPE reads of a large study: its good group exactly as over every trial, against the most recent others.

Optuna's TPE models every finished trial at every proposal, so its cost grows with the study (the proposals alone:
`benchmarks/scale.py`'s `sampler_alone`, figures in benchmarks/README.md; docs/design.md, "Many trials"). TPE splits
the trials into a good group, the best `gamma(n) = min(ceil(n / 10), 25)` (the finished ones by value first, then the
stopped ones by the last epoch they reached and their value there), and the others, whose older members its own
weights already fade. Past `RECENT` trials it is handed the `RECENT` most recent ones and every older trial that
stands among the best `GOOD` of its kind, and every running trial (Optuna's constant liar): its good group is then
exactly the one the whole study gives (a window of at least 250 finished trials has the same `gamma`, 25), and only
the others are fewer. Up to `RECENT` finished trials it reads every trial and proposes exactly what Optuna's TPE
proposes (the registered replays never pass it: at 648 trial-epochs about 100 to 200 trials), but for one thing: a
paused trial ASHA's promotion variant continued is read once, as its continuation (`asha=promote`). Each call costs
the same at any size: it looks from the newest trial back to the last one it has not seen. Optuna only: no Ray.
"""

from __future__ import annotations

import bisect
import math

from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from search.running.study.queries import CONTINUES_ATTR, PROMOTED_ATTR

GOOD = 25  # Optuna's default gamma caps the good group at 25 trials
RECENT = 250  # a window of at least 250 trials keeps gamma at 25: ceil(250 / 10)


def pruned_rank(trial: FrozenTrial, minimize: bool) -> tuple[float, float]:
    """TPE's order of stopped trials (Optuna's `_get_pruned_trial_score`): the furthest epoch first, then its value."""
    if not trial.intermediate_values:
        return 1, 0.0
    step, value = max(trial.intermediate_values.items())
    if math.isnan(value):
        return -step, math.inf
    return -step, value if minimize else -value


class RecentAndBest:
    """The trials TPE reads: all of them up to `recent`, else the `recent` latest and the older best `good` of each
    kind. Keeps the best of each kind as trials end, so no call sorts the study."""

    def __init__(self, recent: int = RECENT, good: int = GOOD):
        if recent < 10 * good:
            raise ValueError(f"a window of {recent} recent trials would shrink TPE's good group below {good}")
        self.recent, self.good = recent, good
        self.seen: set[int] = set()
        self.failed: set[int] = set()  # finished trials TPE never models (failed): walked past, never looked at again
        self.superseded: set[int] = set()  # paused trials a promotion continues (the same trial id): never read
        self.best: dict[TrialState, list[tuple]] = {TrialState.COMPLETE: [], TrialState.PRUNED: []}

    def __call__(self, trials: list[FrozenTrial], directions: list[StudyDirection], states=None) -> list[FrozenTrial]:
        """Of `trials` (every trial of the study, in number order), those in `states` (TPE asks for the finished ones,
        and the running ones with Optuna's constant liar; None: all) that TPE reads; `directions`: the study's."""
        wanted = lambda trial: states is None or trial.state in states  # noqa: E731
        if len(directions) != 1:
            return trials if states is None else [t for t in trials if wanted(t)]
        minimize, running = directions[0] == StudyDirection.MINIMIZE, []
        unseen, at = len(trials) - len(self.seen) - len(self.failed), len(trials)
        while unseen > 0 and at > 0:  # from the newest: the trials that ended since the last call are few, and late
            at -= 1
            trial = trials[at]
            if PROMOTED_ATTR in trial.user_attrs and trial.user_attrs[CONTINUES_ATTR] not in self.superseded:
                self._supersede(trial.user_attrs[CONTINUES_ATTR])
            if trial.number not in self.seen and trial.number not in self.failed:
                unseen -= 1
                if trial.number in self.superseded:
                    self.seen.add(trial.number)
                elif trial.state in self.best:
                    self.seen.add(trial.number)
                    self._keep(trial, minimize)
                elif trial.state.is_finished():
                    self.failed.add(trial.number)
                elif wanted(trial):  # running: looked at again next time
                    running.append(trial)
        if self.superseded:
            wanted = lambda trial: trial.number not in self.superseded and (states is None or trial.state in states)  # noqa: E731
        if len(self.seen) <= self.recent:
            return trials if states is None and not self.superseded else [t for t in trials if wanted(t)]
        start, finished = len(trials), 0
        while finished < self.recent and start > 0:  # the `recent` latest finished trials, and the running among them
            start -= 1
            finished += trials[start].state in self.best
        first = trials[start].number
        older = [t for kept in self.best.values() for *_, t in kept if t.number < first]
        older += [t for t in running if t.number < first and wanted(t)]  # every running one, as TPE's liar reads
        return sorted(older, key=lambda t: t.number) + [t for t in trials[start:] if wanted(t)]

    def _supersede(self, number: int) -> None:
        """The paused trial `number` is promoted: its continuation stands for it, read in its place, as the replays'
        arm shows TPE each trial once (a budget's continuation is read beside the trial it continues, as before)."""
        self.superseded.add(number)
        for kept in self.best.values():
            kept[:] = [entry for entry in kept if entry[-2] != number]

    def _keep(self, trial: FrozenTrial, minimize: bool) -> None:
        if trial.state == TrialState.COMPLETE:
            rank = (trial.value if minimize else -trial.value,)
        else:
            rank = pruned_rank(trial, minimize)
        kept = self.best[trial.state]
        bisect.insort(kept, (*rank, trial.number, trial))  # among equal ranks the earlier trial first, as TPE's sort
        del kept[self.good :]
