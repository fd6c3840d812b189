"""Bare training loops sharing one GPU, without Ray: N processes each train ResNet-18 (batch 128, memory feed, fp32)
at once, started together; prints each one's steady images/s and their sum. What packing trials on a GPU can give
at most, against which the search's "together" rate is read.

    python -m benchmarks.gpu_sharing ROOT N [N ...]     (ROOT: an MNIST folder; on the GPU machine $MNIST60K)
"""

from __future__ import annotations

import subprocess
import sys
import time


def one(root: str, limit: int, epochs: int) -> None:
    import torch

    from benchmarks.accelerator import memory_feed, train_rate

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    feed = memory_feed(root, 128, limit, device)
    print(round(train_rate(feed.train_batches, device, {}, epochs)["images_per_s"]), flush=True)


def together(root: str, processes: int, limit: int, epochs: int) -> list[int]:
    command = [sys.executable, "-m", "benchmarks.gpu_sharing", "--one", root, str(limit), str(epochs)]
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    return [int(p.communicate()[0].split()[-1]) for p in running]


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    if sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        for n in map(int, sys.argv[2:]):
            started = time.perf_counter()
            rates = together(sys.argv[1], n, limit=30000, epochs=5)
            print(
                f"{n} bare processes on one GPU: {sum(rates)} images/s together, per process {rates} "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
