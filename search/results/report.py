"""`python -m search report`: the trials, what early stopping saved, and plots (PNG, plus an HTML page)."""

from __future__ import annotations

import html
import shutil
import warnings
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

from search.results.files import publish_folder, staging_folder
from search.results.summary import format_front, format_table, objectives_words, read_summary
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_run_space
from trainables.foundation.trial_files import TrialFiles

REPORT_FOLDER = "report"
if TYPE_CHECKING:
    from matplotlib.axes import Axes

PLOTS = ("optimization_history.png", "learning_curves.png", "importance.png")
FRONT_PLOT = "pareto_front.png"  # a search with two or three objectives


def savings_line(savings: dict) -> str:
    return (
        f"early stopping: {savings['epochs_run']} epochs run of {savings['epochs_if_all_ran']} if every trial had "
        f"run to the end; {savings['saved']} saved ({savings['saved_fraction']:.0%})"
    )


def build_report(
    experiment: Path, location: str | None = None, summary: dict | None = None, unended: int | None = None
) -> dict:
    """Write <experiment>/report/ (plots and index.html) and return what it found: of its summary.json, or of the
    `summary` so far of an unfinished search with `unended` trials still to end; `location`: the trials' files' URI."""
    summary = summary or read_summary(experiment)
    # every epoch each trial reported, from the result.json in its folder
    histories = {
        t["trial_id"]: TrialFiles(str(location or experiment), t["trial_id"]).rows() for t in summary["trials"]
    }
    run, full = sum(t["epochs_run"] for t in summary["trials"]), summary["run"]["epochs"] * len(summary["trials"])
    savings = {
        "epochs_run": run,
        "epochs_if_all_ran": full,
        "saved": full - run,
        "saved_fraction": (full - run) / full if full else 0.0,
    }
    out = experiment / REPORT_FOLDER
    staging = staging_folder(out)
    try:
        save(plot_optimization_history(summary, histories), staging / PLOTS[0])
        save(draw_learning_curves(new_axes(7, 4), summary, histories), staging / PLOTS[1])
        importances = hyperparameter_importance(summary)
        save(plot_importance(importances, f"{summary['metric']} ({summary['mode']})"), staging / PLOTS[2])
        plots = list(PLOTS)
        if summary.get("front") and len(summary["objectives"]) <= 3:
            axes = pareto_axes(summary)
            axes.figure.set_size_inches(7, 4.5)
            save(axes, staging / FRONT_PLOT)
            plots.append(FRONT_PLOT)
        table = format_table(summary, limit=len(summary["trials"]))
        (staging / "index.html").write_text(render_html(summary, table, savings, importances, plots, unended))
        publish_folder(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {
        "plots": plots,
        "table": table,
        "savings": savings,
        "importances": importances,
        "importance_line": importance_words(summary["metric"], importances, len(completed_trials(summary))),
        "folder": str(out),
        "best": summary["best"],
        "metric": summary["metric"],
        "front": format_front(summary) if summary.get("front") else "",
        "trials": len(summary["trials"]),
    }


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_axes(width: float, height: float) -> Axes:
    """Axes on a new figure, drawn off-screen (Agg)."""
    return _pyplot().subplots(figsize=(width, height))[1]


def save(ax: Axes, path: Path) -> None:
    """Write the axes' figure as a PNG and free it."""
    ax.figure.tight_layout()
    ax.figure.savefig(path, format="png")
    _pyplot().close(ax.figure)


def plot_optimization_history(summary: dict, histories: dict) -> Axes:
    metric, mode = summary["metric"], summary["mode"]

    def started(trial):  # the start order: each trial's first epoch's wall clock
        rows = histories[trial["trial_id"]]
        return rows[0].get("started_at", float("inf")) if rows else float("inf")

    scored = [(i, t[metric]) for i, t in enumerate(sorted(summary["trials"], key=started), 1) if t[metric] is not None]
    xs, ys = [i for i, _ in scored], [value for _, value in scored]
    ax = new_axes(7, 4)
    ax.scatter(xs, ys, label=f"trial's best {metric}")
    ax.step(xs, list(accumulate(ys, max if mode == "max" else min)), where="post", color="tab:red", label="best so far")
    ax.set_xlabel("trial (in start order)")
    ax.set_ylabel(metric)
    ax.set_title("Optimization history")
    ax.legend()
    return ax


def trial_styles(count: int, markers: str = "os^DvP*<>h") -> list[tuple[str, str]]:
    """A (colour, marker) of its own for each of `count` trials, 200 before one repeats: tab20's dark colours, then
    its light ones, then the same with the next marker."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    colours = [to_hex(colormaps["tab20"](i)) for i in (*range(0, 20, 2), *range(1, 20, 2))]
    return [(colours[i % 20], markers[i // 20 % len(markers)]) for i in range(count)]


LEGEND_TRIALS = 48  # the learning curves name each trial in a legend up to this many trials (3 columns of 16)


def draw_learning_curves(ax: Axes, summary: dict, histories: dict) -> Axes:
    """Every trial's curve on `ax` (returned), its line style saying how it ended."""
    metric = summary["metric"]
    for trial, (colour, marker) in zip(summary["trials"], trial_styles(len(summary["trials"]))):
        rows = [r for r in histories[trial["trial_id"]] if isinstance(r.get(metric), (int, float))]
        if not rows:
            continue
        epochs = [r["epoch"] for r in rows]
        values = [r[metric] for r in rows]
        style = {"completed": "-", "stopped_early": "--", "failed": ":"}.get(trial["status"], "-")
        label = f"{trial['trial_id']} ({trial['status']})"
        ax.plot(epochs, values, style, color=colour, marker=marker, markersize=3, label=label)
        if trial["status"] != "completed":
            ax.plot(epochs[-1], values[-1], "x", color=colour, markersize=9)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric)
    labelled = len(ax.get_legend_handles_labels()[0])  # none before a trial has reported an epoch
    many = labelled > LEGEND_TRIALS  # a legend of thousands hides the curves and took half a minute to draw
    ax.set_title(f"Learning curves{f' of {labelled} trials' if many else ''} (x: stopped early or failed)")
    if labelled and not many:
        ax.legend(fontsize=7, loc="best", ncol=1 + labelled // 16)
    return ax


# The importance the report gives is the one optuna-dashboard shows for the same study: Optuna's PED-ANOVA evaluator
# (deterministic: no seed) over the trials the study holds complete, each with the value that stands for it. Trials
# stopped early are PRUNED in the study, which both leave out; counting them gave other figures than the dashboard's.
IMPORTANCE_EVALUATOR = "Optuna's PED-ANOVA, as optuna-dashboard computes it"


def importance_words(metric: str, importances: dict[str, float], completed: int) -> str:
    """The report's line: the importances, with the evaluator and the trials they come from."""
    ranked = ", ".join(f"{name} {value:.2f}" for name, value in importances.items())
    return f"hyperparameter importance for {metric} ({IMPORTANCE_EVALUATOR}, {completed} completed trials): {ranked}"


def hyperparameter_importance(summary: dict) -> dict[str, float]:
    """The importance of each searched hyperparameter for the metric ({} when it cannot be computed): PED-ANOVA
    over the completed trials (IMPORTANCE_EVALUATOR)."""
    import optuna

    run = RunConfig.from_dict(summary["run"])
    space = load_run_space(run)
    searched = {k: d for k, d in space.hyperparameters.items() if k not in run.fixed}
    scored = completed_trials(summary)
    if len(scored) < 2 or not searched:
        return {}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize" if summary["mode"] == "max" else "minimize")
    for trial in scored:
        params = {k: trial["config"][k] for k in searched}
        study.add_trial(
            optuna.trial.create_trial(params=params, distributions=searched, value=trial[summary["metric"]])
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # too few trials: equal importances, which it warns of
            return dict(
                optuna.importance.get_param_importances(
                    study, evaluator=optuna.importance.PedAnovaImportanceEvaluator()
                )
            )
    except (RuntimeError, ValueError):
        return {}


def completed_trials(summary: dict) -> list[dict]:
    """The trials the study holds complete (trained to the end) with a value: those the importance counts."""
    return [t for t in summary["trials"] if t["status"] == "completed" and t[summary["metric"]] is not None]


def pareto_axes(summary: dict) -> Axes:
    """Optuna's `plot_pareto_front` of the completed trials, on a study rebuilt from the summary; with two
    objectives, the trials stopped early drawn too, at the epoch that stands for them."""
    import optuna
    from optuna.visualization.matplotlib import plot_pareto_front as optuna_plot

    _pyplot()
    names = [o["name"] for o in summary["objectives"]]
    study = optuna.create_study(
        directions=["maximize" if o["mode"] == "max" else "minimize" for o in summary["objectives"]]
    )
    others = []
    for trial in summary["trials"]:
        values = [(trial.get("objectives") or {}).get(name) for name in names]
        if not all(isinstance(v, (int, float)) for v in values):
            continue
        if trial["status"] == "completed":
            study.add_trial(optuna.trial.create_trial(values=values))
        else:
            others.append(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        axes = optuna_plot(study, target_names=names)
    for points in axes.collections:  # Optuna's labels: "Best Trial" for the front, "Trial" for the others
        label = {"Best Trial": "Pareto front", "Trial": "dominated (completed)"}.get(points.get_label())
        if label:
            points.set_label(label)
    if others and len(names) == 2:
        axes.scatter(*zip(*others), marker="x", color="grey", label="stopped before the end")
    axes.legend()
    axes.set_title(f"Pareto front: {len(summary['front'])} of {len(study.trials)} completed trials")
    return axes


def plot_importance(importances: dict[str, float], metric: str) -> Axes:
    ax = new_axes(7, 3.5)
    if importances:
        names = list(importances)[::-1]
        ax.barh(names, [importances[n] for n in names])
        ax.set_xlabel(f"importance ({IMPORTANCE_EVALUATOR})")
    else:
        ax.text(0.5, 0.5, "not enough scored trials to estimate importance", ha="center", va="center")
        ax.set_axis_off()
    ax.set_title(f"Hyperparameter importance for {metric}")
    return ax


def render_html(summary: dict, table: str, savings: dict, importances: dict, plots: list, unended: int | None) -> str:
    images = "\n".join(f'<p><img src="{name}" alt="{name}"></p>' for name in plots)
    best, best_line = summary["best"], ""
    if best:
        test = f", test_acc {best['test_acc']:.4f} on {best['test_samples']} test images" if "test_acc" in best else ""
        best_line = f"best {summary['metric']}: trial {best['trial_id']} epoch {best['epoch']}{test}, checkpoint "
        best_line += str(best["checkpoint"])
    front = f"<h2>Pareto front</h2><pre>{html.escape(format_front(summary))}</pre>" if summary.get("front") else ""
    completed = len(completed_trials(summary))
    importance = importance_words(summary["metric"], importances, completed) if importances else ""
    importance = f"<p>{html.escape(importance)}</p>" if importance else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>search report</title></head><body>"
        f"<h1>{html.escape(summary['space'])}: {html.escape(objectives_words(summary))}</h1>"
        f"{unended_words(unended, len(summary['trials']), html_tags=True)}"
        f"<p>{html.escape(best_line)}</p><p>{html.escape(savings_line(savings))}</p>{front}"
        f"<h2>Trials</h2><pre>{html.escape(table)}</pre>{importance}{images}</body></html>\n"
    )


def unended_words(unended: int | None, ended: int, html_tags: bool = False) -> str:
    """What a report of a search that has not finished says first (`unended`: its trials not ended yet, which may
    be none the study has heard of yet); nothing for a finished search (None)."""
    if unended is None:
        return ""
    not_yet = f"; {unended} {'has' if unended == 1 else 'have'} not yet" if unended else ""
    words = (
        f"the search has not finished: it is still running (or was interrupted; `python -m search resume` "
        f"continues it). This report draws the {ended} trials that have ended{not_yet}."
    )
    return f"<p><strong>{html.escape(words)}</strong></p>" if html_tags else words
