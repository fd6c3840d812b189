"""A multi-worker trial's process group, set up as Ray Train's TorchConfig does, without importing torch."""

from __future__ import annotations

import os
from dataclasses import dataclass

import ray
from ray.train.backend import Backend, BackendConfig

from trainables.ray_private import TrainingFramework, get_address_and_port

PROCESS_GROUP_SHUTDOWN_S = 30


class DDPBackend(Backend):
    share_cuda_visible_devices: bool = True  # each rank sees the group's GPUs and picks its own (as TorchConfig)

    def on_start(self, worker_group, backend_config: DDPConfig):
        address, port = worker_group.execute_single(0, get_address_and_port)
        group = dict(backend=backend_config.backend, address=address, port=port, timeout_s=backend_config.timeout_s)
        ray.get(
            [worker_group.execute_single_async(rank, join_process_group, **group) for rank in range(len(worker_group))]
        )

    def on_shutdown(self, worker_group, backend_config: DDPConfig):
        futures = worker_group.execute_async(leave_process_group)
        try:
            ray.get(futures, timeout=PROCESS_GROUP_SHUTDOWN_S)
        except ray.exceptions.GetTimeoutError:
            pass  # the workers are killed next anyway


def join_process_group(backend: str, address: str, port: int, timeout_s: int) -> None:
    """On each rank: the environment torchrun would give it, then torch.distributed's process group."""
    from datetime import timedelta

    import torch.distributed as dist

    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    os.environ.update(MASTER_ADDR=address, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size))
    os.environ.update(LOCAL_RANK=str(context.get_local_rank()), LOCAL_WORLD_SIZE=str(context.get_local_world_size()))
    os.environ["NODE_RANK"] = str(context.get_node_rank())
    if backend == "nccl":
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")  # a timed-out collective fails, not hangs
    timeout = timedelta(seconds=timeout_s)
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world_size, timeout=timeout)


def leave_process_group() -> None:
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class WorkerDevice:
    """Around the training function on each rank: the rank's GPU is CUDA's current device (as TorchConfig does)."""

    def __enter__(self):
        import torch

        if torch.cuda.is_available():
            import ray.train.torch

            device = ray.train.torch.get_device()
            if device.type == "cuda":
                torch.cuda.set_device(device)

    def __exit__(self, *exc):
        return False


@dataclass
class DDPConfig(BackendConfig):
    """`backend`: gloo (CPU workers) or nccl (a GPU each); `timeout_s`: how long a collective may wait."""

    backend: str = "gloo"
    timeout_s: int = 1800
    backend_cls = DDPBackend  # BackendConfig's properties, as plain class attributes
    train_func_context = WorkerDevice
    framework = TrainingFramework.TORCH
