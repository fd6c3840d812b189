"""Can two DDP ranks share one GPU? Two processes join a torch.distributed group on the same device (cuda:0) with
a backend and all-reduce a gradient-sized tensor; prints one JSON line: the backend, whether it worked, the error's
first line, the seconds to join and per all-reduce. What `run workers=2 gpus=0.5` refuses (NCCL's "Duplicate GPU
detected"), measured.

    python -m benchmarks.two_ranks_one_gpu nccl|gloo      (on a machine with a GPU; gloo also runs on a CPU)
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ELEMENTS = 11_000_000  # about ResNet-18's parameters
REPEATS = 10
ANSWER_S = 90  # a rank that neither joins nor fails by then is reported as hung


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def rank_main(rank: int, backend: str, port: int, results) -> None:
    started = time.perf_counter()
    try:
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")  # both ranks on the same GPU
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        tensor = torch.ones(ELEMENTS, device=device)
        dist.all_reduce(tensor)  # the first one sets up the communicator
        synchronize()
        joined = time.perf_counter() - started
        timed = time.perf_counter()
        for _ in range(REPEATS):
            dist.all_reduce(tensor)
        synchronize()
        per_reduce = (time.perf_counter() - timed) / REPEATS
        results.put({"rank": rank, "ok": True, "join_s": round(joined, 2), "all_reduce_s": round(per_reduce, 4)})
        dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - the backend's refusal is the measurement
        first = (str(exc).strip().splitlines() or [""])[0]
        results.put({"rank": rank, "ok": False, "error": f"{type(exc).__name__}: {first}"[:300]})


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "nccl"
    if backend not in ("nccl", "gloo") or (backend == "nccl" and not torch.cuda.is_available()):
        print(f"{backend}: allowed backends are nccl (on a machine with a GPU) and gloo", file=sys.stderr)
        raise SystemExit(2)
    context = mp.get_context("spawn")
    results = context.Queue()
    port = free_port()
    ranks = [context.Process(target=rank_main, args=(rank, backend, port, results)) for rank in range(2)]
    for process in ranks:
        process.start()
    rows = []
    for _ in ranks:
        try:
            rows.append(results.get(timeout=ANSWER_S))
        except queue.Empty:
            rows.append({"rank": None, "ok": False, "error": f"no answer in {ANSWER_S} s (hung)"})
            break
    for process in ranks:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(json.dumps({"backend": backend, "device": device, "ok": all(row["ok"] for row in rows), "ranks": rows}))


if __name__ == "__main__":
    main()
