"""What two training processes reach on this machine without Ray (part `ddp`): side by side with no gradient
exchange, and as DDP over gloo, against one process using every core."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from benchmarks import throughput
from search.results.tensorboard import free_port


def _rank_rate(
    rank: int, world_size: int, port: int, ddp: bool, root: str, limit: int, epochs: int, batch: int, results
) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    wrap = torch.nn.parallel.DistributedDataParallel if ddp else None
    rate = torch.tensor([throughput.bare_loop(root, limit, epochs, batch, 1, rank, world_size, wrap)])
    dist.all_reduce(rate)  # images/s of the pair
    if rank == 0:
        results.put(rate.item())
    dist.destroy_process_group()


def two_processes(root: str, limit: int, epochs: int, batch: int, ddp: bool) -> float:
    context = mp.get_context("spawn")
    results, port = context.Queue(), free_port()
    args = (2, port, ddp, root, limit, epochs, batch, results)
    processes = [context.Process(target=_rank_rate, args=(rank, *args)) for rank in range(2)]
    for process in processes:
        process.start()
    rate = results.get(timeout=600)
    for process in processes:
        process.join()
    return rate


def measure(root: str, limit: int = 2048, epochs: int = 5, batch: int = 128) -> dict:
    """images/s: one process with 2 threads; two 1-thread processes (batch/2 each) without and with DDP."""
    figures = {
        "one_process_2_threads": throughput.bare_loop(root, limit, epochs, batch, threads=2),
        "two_processes_no_gradient_exchange": two_processes(root, limit, epochs, batch, ddp=False),
        "two_processes_ddp_gloo": two_processes(root, limit, epochs, batch, ddp=True),
    }
    figures["one_process_2_threads_again"] = throughput.bare_loop(root, limit, epochs, batch, threads=2)
    return figures
