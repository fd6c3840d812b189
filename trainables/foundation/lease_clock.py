"""The one clock of an experiment's lease on a URI, for the driver that holds it (search.running.writer.lock) and the
trials it started (trainables.foundation.trial_lease) alike.

The driver renews its lease every `renew_s()`; a lease not renewed for `STALE_S` is stale and another driver may take
it. The lease names both (`timing()`), so a trial on another machine goes by the clock of the driver that started
it. A trial stops when the lease is another's or removed, or when it could not read the lease for as long as its
driver keeps it (`unread_limit_s`: the renewal period plus the staleness); a store hiccup shorter than that ends no
trial. Pure: no Ray, no torch.
"""

from __future__ import annotations

import math
import os

# Seconds a lease not renewed is stale (SEARCH_LEASE_STALE_S shortens it for the tests of a takeover)
STALE_S = float(os.environ.get("SEARCH_LEASE_STALE_S", "60"))
RENEWALS_PER_STALENESS = 4  # a holder misses three renewals in a row before its lease goes stale


def renew_s() -> float:
    """Seconds between two renewals of a held lease."""
    return STALE_S / RENEWALS_PER_STALENESS


def timing() -> dict:
    """What a lease says of its clock, written into it by its holder."""
    return {"renew_s": renew_s(), "stale_s": STALE_S}


def unread_limit_s(holder: dict) -> float:
    """How long a trial reads again a lease it cannot read before it stops: as long as the driver that wrote `holder`
    keeps it without another driver taking it (its renewal period plus its staleness; this process's clock for a
    lease that names none)."""
    renew, stale = holder.get("renew_s"), holder.get("stale_s")
    if not (_seconds(renew) and _seconds(stale)):
        renew, stale = renew_s(), STALE_S
    return renew + stale


def _seconds(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
