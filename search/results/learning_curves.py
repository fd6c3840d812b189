"""The report's learning-curve plot: every trial's curve, each in a colour and marker of its own (200 trials before
one repeats), its line style saying how it ended. matplotlib only."""

from __future__ import annotations


def trial_styles(count: int, markers: str = "os^DvP*<>h") -> list[tuple[str, str]]:
    """A (colour, marker) of its own for each of `count` trials, for 200 of them: tab20's ten dark colours, then
    its ten light ones, then the same with the next marker (the line style tells how a trial ended)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    colours = [to_hex(colormaps["tab20"](i)) for i in (*range(0, 20, 2), *range(1, 20, 2))]
    return [(colours[i % 20], markers[i // 20 % len(markers)]) for i in range(count)]


def draw_learning_curves(ax, summary: dict, histories: dict):
    """Every trial's curve on `ax` (returned), each in a colour and marker of its own, its line style saying how it
    ended."""
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
    ax.set_title("Learning curves (x: stopped early or failed)")
    if ax.lines:  # none before a trial has reported an epoch
        ax.legend(fontsize=7, loc="best", ncol=1 + len(ax.get_legend_handles_labels()[0]) // 16)
    return ax
