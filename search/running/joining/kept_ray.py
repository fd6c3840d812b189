"""One Ray per Python process for `search.api`: a script or notebook that runs several searches starts Ray once (its
start takes 10-60 s) and every later search reuses it. The command line runs one search a process and stops the Ray
it started at its end. Ray's own exit hook stops a kept instance when the interpreter exits; `search.api.shutdown()`
stops it sooner. Nothing here imports Ray until Ray is to be stopped."""

from __future__ import annotations


class KeptRay:
    """Whether a Ray instance this process starts stays up for its next search, and the one kept (the `address=` it
    answers, "" for a local instance; None while none is kept)."""

    keep = False
    address: str | None = None


def keep_ray_up() -> None:
    """From now on, a Ray instance a search of this process starts stays up for the next one."""
    KeptRay.keep = True


def reusable(address: str) -> bool:
    """Whether the Ray connection this process has serves a search of `address` ("" for local): the caller's own
    (never replaced), or the kept instance when it answers that address."""
    return KeptRay.address is None or KeptRay.address == address


def kept(address: str) -> None:
    KeptRay.address = address


def stop_kept_ray() -> bool:
    """Stop the Ray instance kept for this process's next search; False when none is kept (a connection the caller
    made with its own `ray.init` is left alone)."""
    if KeptRay.address is None:
        return False
    import ray

    KeptRay.address = None
    ray.shutdown()
    return True
