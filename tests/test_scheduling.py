from trainables.foundation.scheduling import TOKEN_MEMORY, place_trials


def test_a_one_worker_trial_holds_its_own_resources():
    placement = place_trials(workers=1, cpus=4, gpus=0.25, concurrency=4, max_failures=1)
    assert placement.in_process
    assert placement.resources == {"cpu": 4, "gpu": 0.25}
    assert placement.max_concurrent == 4 and placement.max_failures == 1


def test_a_cpu_trial_asks_for_no_gpu():
    assert place_trials(workers=1, cpus=0.5, gpus=0, concurrency=4, max_failures=0).resources == {"cpu": 0.5}


def test_a_ddp_trial_leaves_its_workers_to_ray_train_and_its_restarts_too():
    placement = place_trials(workers=2, cpus=1, gpus=1, concurrency=2, max_failures=3)
    assert not placement.in_process
    assert placement.resources == {"cpu": 0, "memory": TOKEN_MEMORY}
    assert placement.max_failures == 0  # Ray Train restarts the worker group; Tune does not restart the trial


def test_a_one_worker_trial_may_ask_for_a_worker_group_instead():
    placement = place_trials(workers=1, cpus=2, gpus=0, concurrency=1, max_failures=0, in_process=False)
    assert not placement.in_process and placement.resources["cpu"] == 0
