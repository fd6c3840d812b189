"""The sampler and the searcher on synthetic objectives (no training, no Ray instance): TPE guides most of a default
search, trials proposed side by side differ, ASHA-stopped trials are pruned with their epochs (the stopping one
included), a choice among numbers is held as its values, seeds reproduce, and a study reopened from its journal
proposes its unfinished trials again first."""

import math

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import TPESampler
from optuna.trial import TrialState

from search.running.ends.decider import Decider
from search.running.ends.reconcile import reconcile
from search.running.proposals.sampler import make_sampler, startup_trials
from search.running.proposals.searcher import StudySearcher
from search.running.study.coding import SpaceCoding
from search.running.study.endings import EndFacts, Ending
from search.running.study.queries import trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.objectives import Objective
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles

SPACE = {"lr": FloatDistribution(1e-4, 1.0, log=True), "wd": FloatDistribution(1e-5, 1e-1, log=True)}

BATCHES = [256, 32, 128, 64]  # a user's order; as numbers they are ordered all the same
SHAPED = {
    "lr": FloatDistribution(0.005, 0.5, log=True),
    "batch_size": CategoricalDistribution(BATCHES),
    "shift": IntDistribution(0, 4),
}


def shaped_score(config: dict) -> float:
    """Like resnet_mnist on few digits: smaller batches train better, the best lr grows with the batch size."""
    larger = math.log2(config["batch_size"] / 32)
    best_lr = math.log10(0.06) + 0.2 * larger
    return -0.25 * larger**1.5 - 1.4 * (math.log10(config["lr"]) - best_lr) ** 2 - 0.15 * abs(config["shift"] - 3)


def score(config: dict) -> float:
    """Best at lr=0.01, wd=1e-3 (a ridge in log space, as accuracy against lr often is)."""
    return -((math.log10(config["lr"]) + 2) ** 2) - ((math.log10(config["wd"]) + 3) ** 2)


def searcher(trials: int, seed: int = 0, sampler: str = "tpe", epochs: int = 3, space=SPACE, ordered=True):
    sampler = make_sampler(sampler, seed, startup_trials(trials))
    return StudySearcher(
        StudyRecord.in_memory(dict(space), "val_acc", "max", sampler, epochs, ordered), [], "val_acc", "max"
    )


def run_sequentially(search: StudySearcher, trials: int, score=score) -> list[float]:
    """Each trial as Tune drives it: proposed, its epoch reported, ended (the driver's TrialEnds writes the end)."""
    scores = []
    for index in range(trials):
        config = search.suggest(f"t{index}")
        value = score(config)
        search.on_trial_result(f"t{index}", {"val_acc": value, "epoch": 3})
        search.on_trial_complete(f"t{index}", {"val_acc": value, "epoch": 3})
        Decider.without_files(search.record).end(config[TRIAL_KEY], EndFacts(0, written=Ending("completed")))
        scores.append(value)
    return scores


@pytest.mark.parametrize("trials, startup", [(4, 2), (8, 2), (16, 4), (40, 10), (200, 10)])
def test_the_random_start_is_a_quarter_of_the_budget_and_the_rest_optunas_defaults(trials, startup):
    assert startup_trials(trials) == startup
    sampler, defaults = make_sampler("tpe", 0, startup_trials(trials)), TPESampler()
    assert sampler._n_startup_trials == startup
    assert (sampler._multivariate, sampler._constant_liar) == (defaults._multivariate, defaults._constant_liar)
    assert sampler._gamma is defaults._gamma


def test_a_default_budget_is_guided_and_beats_random_search():
    guided = [max(run_sequentially(searcher(16, seed), 16)) for seed in range(10)]
    random = [max(run_sequentially(searcher(16, seed, "random"), 16)) for seed in range(10)]
    assert sum(guided) > sum(random), (guided, random)


def test_trials_proposed_side_by_side_are_not_near_identical():
    search = searcher(16)
    run_sequentially(search, 6)  # past the random start: TPE proposes
    running = [search.suggest(f"r{index}") for index in range(4)]  # none has reported yet
    logs = sorted(math.log10(config["lr"]) for config in running)
    assert min(b - a for a, b in zip(logs, logs[1:])) > 1e-3, logs


def test_a_stopped_trial_reaches_the_study_with_the_epoch_that_stopped_it_and_a_failed_one_fails_with_why():
    """Tune hands the result that made ASHA stop a trial to on_trial_complete only (never to on_trial_result)."""
    search = searcher(8, epochs=3)
    search.suggest("stopped"), search.suggest("failed"), search.suggest("done")
    search.on_trial_result("stopped", {"val_acc": 0.5, "epoch": 1})
    search.on_trial_result("stopped", {"val_acc": 0.5, "epoch": 1})  # replayed after a resume: reported once
    search.on_trial_complete("stopped", {"val_acc": 0.4, "epoch": 2})  # ASHA's decision at epoch 2
    search.on_trial_complete("failed", {"val_acc": float("nan"), "epoch": 1, "diverged": True})
    search.on_trial_result("done", {"val_acc": 0.9, "epoch": 3})
    search.on_trial_complete("done", {"val_acc": 0.9, "epoch": 3})
    for trial_id, status, reason in [
        ("stopped", "stopped_early", None),
        ("failed", "failed", "NonFiniteLoss: x"),
        ("done", "completed", None),
    ]:
        Decider.without_files(search.record).end(trial_id, EndFacts(0, written=Ending(status, reason)))
    stopped, failed, done = search.record.study.trials
    assert stopped.state == TrialState.PRUNED and stopped.intermediate_values == {1: 0.5, 2: 0.4}
    assert failed.state == TrialState.FAIL and failed.user_attrs["reason"] == "NonFiniteLoss: x"
    assert done.state == TrialState.COMPLETE and done.value == 0.9 and done.user_attrs["score"] == 0.9


def test_a_trial_is_scored_by_the_summarys_rule():
    """Annealing learning rate: its last epoch; otherwise its best epoch (one definition, search.results.score)."""
    for constants, expected in [({"lr_schedule": "onecycle"}, 0.8), ({"lr_schedule": "constant"}, 0.9)]:
        sampler = make_sampler("random", 0, 2)
        record = StudyRecord.in_memory(dict(SPACE), "val_acc", "max", sampler, 3, constants=constants)
        record.create("a")
        for epoch, value in [(1, 0.5), (2, 0.9), (3, 0.8)]:
            record.report("a", epoch, value)
        Decider.without_files(record).end("a", EndFacts(0, written=Ending("completed")))
        assert record.study.trials[0].value == expected


def test_the_same_seed_proposes_the_same_trials():
    assert run_sequentially(searcher(8), 8) == run_sequentially(searcher(8), 8)


def test_a_reopened_study_knows_what_the_files_know_and_proposes_unfinished_trials_again_first(tmp_path):
    coding = SpaceCoding(dict(SPACE))
    record = StudyRecord.in_folder(tmp_path, coding, [Objective("val_acc", "max")], 3, {}, make_sampler("random", 0, 2))
    first = StudySearcher(record, [], "val_acc", "max")
    first.suggest("ended")
    cut = first.suggest("cut")
    first.on_trial_result("ended", {"val_acc": 0.7, "epoch": 1})
    for epoch in (1, 2):  # the killed driver's study heard of neither epoch of "cut"; its files hold both
        TrialFiles(str(tmp_path), "cut").append(
            TrialFiles(str(tmp_path), "cut").rows(), {"epoch": epoch, "val_acc": 0.5 + epoch / 10, "config": cut}
        )
    TrialFiles(str(tmp_path), "ended").write_ending("stopped_early")
    (tmp_path / "study.log").write_bytes((tmp_path / "study.log").read_bytes() + b'{"op_code": 5, "wor')  # cut
    reopened = StudyRecord.in_folder(tmp_path, coding, [Objective("val_acc", "max")], 3, {})
    again = reconcile(Decider(reopened, str(tmp_path)))
    assert [trial_id_of(t) for t in again] == ["cut"] and again[0].intermediate_values == {1: 0.6, 2: 0.7}
    assert reopened.frozen("ended").state == TrialState.PRUNED
    search = StudySearcher(reopened, again, "val_acc", "max")
    assert search.suggest("new tune id") == cut  # the same id and configuration
    assert search.suggest("fresh")[TRIAL_KEY] == "fresh" and len(reopened.study.trials) == 3


def test_tpe_holds_a_choice_among_numbers_as_its_values():
    search = searcher(12, space=SHAPED, ordered=False)  # the search's coding (search.running.proposals.study_setup)
    run_sequentially(search, 4, shaped_score)  # past the random start: TPE proposes
    assert search.record.study.trials[0].distributions["batch_size"] == SHAPED["batch_size"]
    assert search.suggest("next")["batch_size"] in BATCHES


def test_random_search_keeps_a_choice_among_numbers_categorical():
    search = searcher(12, sampler="random", space=SHAPED, ordered=False)
    run_sequentially(search, 2, shaped_score)
    assert search.record.study.trials[0].distributions["batch_size"] == SHAPED["batch_size"]
    assert search.suggest("next")["batch_size"] in BATCHES


def test_a_proposal_cut_short_by_a_kill_is_failed_on_resume_and_is_no_trial_of_the_search(tmp_path):
    """The sampler's proposal and its name are separate appends to the journal: a kill between them leaves a RUNNING
    trial without an id, which never reached Tune. Resume fails it with the reason; it counts for nothing."""
    coding = SpaceCoding(dict(SPACE))
    record = StudyRecord.in_folder(tmp_path, coding, [Objective("val_acc", "max")], 3, {}, make_sampler("random", 0, 2))
    record.create("named")
    record.study.ask(coding.distributions)  # killed before its name was written
    reopened = StudyRecord.in_folder(tmp_path, coding, [Objective("val_acc", "max")], 3, {})
    again = reconcile(Decider(reopened, str(tmp_path)))
    assert [trial_id_of(t) for t in again] == ["named"] and len(reopened.proposed()) == 1
    cut = reopened.study.trials[1]
    assert cut.state == TrialState.FAIL and cut.user_attrs["reason"].startswith("never started")


def test_a_trial_only_its_files_know_is_added_to_the_study_with_its_epochs_and_end(tmp_path):
    """A URI's uploaded study can lag the trials' files, and an experiment may predate the study: reconcile adds a
    trial its files name, with the hyperparameters its rows hold, every epoch, and its end."""
    coding = SpaceCoding(dict(SPACE))
    files = TrialFiles(str(tmp_path), "fromfile")
    rows = files.append([], {"epoch": 1, "val_acc": 0.6, "config": {"lr": 0.01, "wd": 0.001, "lr_schedule": "none"}})
    files.append(rows, {"epoch": 2, "val_acc": 0.7, "config": {"lr": 0.01, "wd": 0.001, "lr_schedule": "none"}})
    files.write_ending("stopped_early")
    record = StudyRecord.in_folder(tmp_path, coding, [Objective("val_acc", "max")], 3, {"lr_schedule": "none"})
    assert reconcile(Decider(record, str(tmp_path))) == []
    added = record.frozen("fromfile")
    assert added.params == {"lr": 0.01, "wd": 0.001} and added.intermediate_values == {1: 0.6, 2: 0.7}
    assert added.state == TrialState.PRUNED and added.user_attrs["score"] == 0.7


def test_a_study_write_that_fails_in_suggest_finishes_the_searcher_and_stops_the_search_not_tune(monkeypatch):
    """The study cannot be written as Tune asks for a trial (a full disk): `suggest` raises nothing into Tune; it
    answers FINISHED, the record keeps the failure (the driver's one-line error, exit 1) and the stopper stops the
    trials still running."""
    from ray.tune.search import Searcher

    from search.running.stopping import SessionStop
    from search.running.study.record import StudyWriteFailed

    search = searcher(4)
    search.suggest("first")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(search.record.study, "ask", full)
    assert search.suggest("second") == Searcher.FINISHED
    failure = search.record.failure
    assert isinstance(failure, StudyWriteFailed) and failure.exit_code == 1
    assert "proposing trial second: OSError: [Errno 28] No space left on device" in str(failure)
    assert SessionStop(failure=lambda: search.record.failure).stop_all()
    assert search.suggest("third") == Searcher.FINISHED and len(search.record.study.trials) == 1
