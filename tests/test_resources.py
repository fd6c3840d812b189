import pytest

from search.errors import UsageError
from search.resources import TrialShape, plan_concurrency, trials_that_fit


def test_two_workers_fit_once_on_two_cores():
    assert plan_concurrency([{"CPU": 2}], TrialShape(2, 1, 0), 0) == 1


def test_default_concurrency_is_what_fits():
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 0) == 4
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 3) == 3
    assert plan_concurrency([{"CPU": 8}], TrialShape(2, 1, 0), 10) == 4


def test_workers_spread_over_nodes_but_not_split():
    nodes = [{"CPU": 1.5}, {"CPU": 1.5}]
    assert trials_that_fit(nodes, TrialShape(2, 1, 0)) == 1
    assert trials_that_fit(nodes, TrialShape(1, 2, 0)) == 0


def test_gpus_limit_the_fit():
    assert trials_that_fit([{"CPU": 16, "GPU": 2}], TrialShape(2, 1, 1)) == 1
    assert trials_that_fit([{"CPU": 16}], TrialShape(1, 1, 1)) == 0


def test_never_fitting_shape_is_refused_with_numbers():
    with pytest.raises(UsageError) as excinfo:
        plan_concurrency([{"CPU": 2}], TrialShape(16, 1, 0), 0)
    message = str(excinfo.value)
    assert "workers=16" in message and "16 CPUs" in message and "2 CPUs" in message
