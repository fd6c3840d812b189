"""A failed trial's root cause out of the texts Ray and Ray Train wrap around it (shapes seen in real error.txt)."""

from search.running.ends.failures import plain_text, root_cause

WORKER_KILLED = """Failure # 1 (occurred at 2026-11-23_13-36-36)
\x1b[36mray::ImplicitFunc.train()\x1b[39m (pid=16999, ip=192.0.2.2, actor_id=62d8, repr=train_trial)
  File "/site-packages/ray/train/v2/api/data_parallel_trainer.py", line 192, in fit
    raise result.error
ray.train.WorkerGroupError: Training failed due to worker errors:
[Rank 0 Error Snippet]:
A worker health check failed.
The actor died unexpectedly before finishing this task.
\tclass_name: RayTrainWorker
\tpid: 17188
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR
[Rank 1 Error Snippet]:
RuntimeError: [gloo/transport/tcp/pair.cc:545] Read error [127.0.0.1]:33679: Connection reset by peer.
"""

RAISED_IN_A_RANK = """Failure # 1 (occurred at 2026-11-23_13-36-36)
ray::ImplicitFunc.train() (pid=16999, ip=192.0.2.2, actor_id=62d8, repr=train_trial)
ray.train.WorkerGroupError: Training failed due to worker errors:
[Rank 0 Error Snippet]:
Traceback (most recent call last):
  File "/work/space.py", line 9, in forward
    raise ValueError("this space's forward is broken")
ValueError: this space's forward is broken
[Rank 1 Error Snippet]:
ValueError: this space's forward is broken
"""

CHAINED = """Failure # 1
ray::ImplicitFunc.train() (pid=5, ip=1.2.3.4)
RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate 400000000000 bytes.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
trainables.worker.OutOfMemory: out of memory on cpu at batch_size=128: lower batch_size
"""


def test_our_own_named_failure_is_the_cause():
    text = (
        "Failure # 1 (occurred at 2026-11-23_13-35-06)\n\x1b[36mray::ImplicitFunc.train()\x1b[39m (pid=15304)\n"
        "trainables.driver.NonFiniteLoss: training diverged: the loss became non-finite at epoch 1\n"
    )
    assert root_cause(text) == "NonFiniteLoss: training diverged: the loss became non-finite at epoch 1"


def test_a_killed_worker_is_named_as_a_death_not_as_the_other_ranks_echo():
    cause = root_cause(WORKER_KILLED)
    assert cause.startswith("WorkerDied: a training worker process (pid 17188) died: killed by a signal")


def test_a_killed_second_rank_is_the_cause_not_the_first_ranks_broken_connection():
    first_rank_echo = WORKER_KILLED.split("[Rank 0 Error Snippet]:")[1].split("[Rank 1 Error Snippet]:")
    swapped = (
        "ray.train.WorkerGroupError: Training failed due to worker errors:\n[Rank 0 Error Snippet]:"
        + first_rank_echo[1]
        + "[Rank 1 Error Snippet]:"
        + first_rank_echo[0]
    )
    assert root_cause(swapped).startswith("WorkerDied: a training worker process (pid 17188) died")


def test_the_exception_a_rank_raised_not_ray_trains_wrapper():
    assert root_cause(RAISED_IN_A_RANK) == "ValueError: this space's forward is broken"


def test_of_chained_exceptions_the_last_raised_is_kept():
    assert root_cause(CHAINED) == "OutOfMemory: out of memory on cpu at batch_size=128: lower batch_size"


def test_text_without_an_exception_line_gives_its_last_line():
    assert root_cause("something odd\n  happened here\n") == "happened here"
    assert root_cause("") == "unknown error"


def test_a_trials_error_file_is_rewritten_as_plain_text(tmp_path):
    error = tmp_path / "error.txt"
    error.write_text(WORKER_KILLED + "\x1b[1;31mValueError: red\x1b[0m\n")
    text = plain_text(error)
    assert "\x1b" not in error.read_text() and text == error.read_text()
    assert text.splitlines()[1].startswith("ray::ImplicitFunc.train() (pid=16999") and text.endswith(
        "ValueError: red\n"
    )
    assert plain_text(tmp_path / "missing.txt") == "" and plain_text(None) == ""
