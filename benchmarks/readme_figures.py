r"""The figures of benchmarks/README.md and README.md that come from a results JSON, written from that JSON.

A figure sits between markers that name its file, the value's place in it (a JSON pointer, RFC 6901; `\|` for a
`|`) and its format (Python's format spec, or `p`: a p-value in two significant digits):

    <!-- fig:benchmarks/results/x.json#/peer/search_over_loop;.2f -->1.07<!-- /fig -->

`P1 / P2` gives the ratio of two values, `P * 4` a value times a number. A whole table sits between block markers
(`arms`, `pairs`: replay_stats', replay_pairs' results; `pays`: a family's, about the arm after its file, or `search`):

    <!-- block:arms benchmarks/results/x.json -->
    | ... |
    <!-- /block -->

    python -m benchmarks.readme_figures            # rewrites every marked figure from its JSON
    python -m benchmarks.readme_figures --check    # exit 1 and name each figure whose text is not its JSON's
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections import Counter
from pathlib import Path

from benchmarks.families import RUNGS

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("benchmarks/README.md", "README.md", "docs/spaces.md", "docs/measured.md")  # where figures are quoted
BLOCK = re.compile(r"<!-- block:(?P<kind>\w+) (?P<file>\S+) ?(?P<arm>\S*) -->\n(?P<text>.*?)<!-- /block -->", re.S)
MARKER = re.compile(r"<!-- fig:(?P<file>[^#\s]+)#(?P<pointer>[^;]*);(?P<spec>[^;<>]*?) -->(?P<text>.*?)<!-- /fig -->")


@functools.cache
def _load(path: str):
    return json.loads((ROOT / path).read_text())


def lookup(document, pointer: str):
    """The value at a JSON pointer (RFC 6901)."""
    value = document
    for part in pointer.replace("\\|", "|").split("/")[1:] if pointer else []:
        key = part.replace("~1", "/").replace("~0", "~")
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def render(value, spec: str) -> str:
    return p_text(value) if spec == "p" else format(value, spec)


def figure(match: re.Match) -> str:
    """The figure a marker's JSON gives."""
    pointers, _, factor = match["pointer"].partition(" * ")
    values = [lookup(_load(match["file"]), pointer) for pointer in pointers.split(" / ")]
    value = values[0] / values[1] if len(values) == 2 else values[0]
    return render(value * float(factor) if factor else value, match["spec"])


def block(match: re.Match) -> str:
    """The table a block's JSON gives, ending in a newline."""
    return BLOCKS[match["kind"]](_load(match["file"]), *[match["arm"]][: bool(match["arm"])]) + "\n"


def rewritten(text: str) -> str:
    def one(match: re.Match) -> str:
        return match.group(0).replace(f"-->{match['text']}<!--", f"-->{figure(match)}<!--", 1)

    def whole(match: re.Match) -> str:
        return match.group(0).replace(f"-->\n{match['text']}<!--", f"-->\n{block(match)}<!--", 1)

    return MARKER.sub(one, BLOCK.sub(whole, text))


def disagreements(text: str) -> list[str]:
    """Each marked figure or table whose text is not what its JSON gives, and a block opening it cannot read."""
    wrong = []
    if text.count("<!-- block:") != len(BLOCK.findall(text)):
        wrong.append("a `<!-- block:KIND FILE -->` opening without its table and `<!-- /block -->`, or misspelt")
    for pattern, expect in ((MARKER, figure), (BLOCK, block)):
        for match in pattern.finditer(text):
            one = pattern is MARKER
            place = f"{match['file']}#{match['pointer']}" if one else f"{match['file']} ({match['kind']} table)"
            try:
                expected = expect(match)
            except (OSError, KeyError, IndexError, ValueError, TypeError) as error:
                wrong.append(f"{place}: unreadable ({type(error).__name__}: {error})")
            else:
                if match["text"] != expected and one:
                    wrong.append(f'{place}: text "{match["text"]}", JSON "{expected}"')
                elif match["text"] != expected:
                    wrong.append(f"{place}: the text is not the table its JSON gives")
    return wrong


def p_text(value: float) -> str:
    """A p-value in two significant digits (`0.033`, `2e-6`): the `p` format of every figure and table."""
    return f"{value:.2g}".replace("e-0", "e-")


def arms_table(stats: dict, concurrency: str = "2") -> str:
    figures = stats["concurrency"][concurrency]
    tables = figures["tables"]
    names = list(tables)
    header = ["arm", *(f"`{name}`: normalised, p lower (higher), r" for name in names), "mean rank over tables"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm in tables[names[0]]["normalised_iqm"]:
        cells = [f"`{arm}`".replace("|", "\\|"), *(arm_cell(tables[name], arm) for name in names)]
        lines.append("| " + " | ".join([*cells, f"{figures['by_table']['mean_rank'][arm]:.2f}"]) + " |")
    return "\n".join(lines)


def arm_cell(table: dict, arm: str) -> str:
    value = f"{table['normalised_iqm'][arm]:.2f}"
    if arm not in table["p_search_lower_holm"]:
        return value
    lower, higher = table["p_search_lower_holm"][arm], table["p_search_higher_holm"][arm]
    effect = table["effect_vs_search"][arm]
    return f"{value}, {p_text(lower)} ({p_text(higher)}), {effect['rank_biserial']:+.2f}{points_text(effect)}"


def points_text(effect: dict) -> str:
    """`, +0.12 pt [-0.01, +0.25], HL +0.06 [+0.00, +0.12]`: the mean paired difference and the Hodges-Lehmann shift."""
    if "points" not in effect and "effect_pt" not in effect:
        return ""
    points = effect.get("points") or effect["effect_pt"]
    low, high = points["mean_interval"]
    return f", {points['mean']:+.2f} pt [{low:+.2f}, {high:+.2f}]{shift_text(points)}"


def shift_text(points: dict) -> str:
    """`, HL +0.06 [+0.00, +0.12]` ('' where the result has none)."""
    if "hodges_lehmann" not in points:
        return ""
    low, high = points["hodges_lehmann_interval"]
    return f", HL {points['hodges_lehmann']:+.2f} [{low:+.2f}, {high:+.2f}]"


def pairs_table(pairs: dict) -> str:
    results = pairs["results"]
    names = list(next(iter(results.values()))["pairs"])
    header = ["table, seeds", *(name.replace(">", " against ").replace("|", "\\|") for name in names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in results.values():
        last = result["first_seed"] + result["seeds"] - 1
        where = f"`{result['space']}`, {result['seed_set']} {result['first_seed']}-{last}"
        lines.append("| " + " | ".join([where, *(pair_cell(result["pairs"][name]) for name in names)]) + " |")
    return "\n".join(lines)


def pair_cell(pair: dict) -> str:
    (first, a), (second, b) = pair["regret_iqm_pt"].items()
    epochs = pair["median_epochs"]
    return (
        f"{a:.3f} / {b:.3f}, p {p_text(pair['p_first_lower'])} ({p_text(pair['p_first_higher'])}), "
        f"{epochs[first]:.0f} / {epochs[second]:.0f} epochs{points_text(pair)}"
    )


LABELS = {"search": "**the search** (default then)", "random_asha": "random + ASHA", "random": "random search"}
LABELS.update(optuna_tpe_hyperband="TPE + Hyperband", peer_dehb="DEHB", peer_smac="SMAC3")
LABELS.update(peer_synetune_bohb="Syne Tune BOHB", peer_priorband="NePS PriorBand")
LABELS["search|asha=promote"] = "the search, `asha=promote`"
# a table about the default since asha=promote became it: (its name in words, the labels that change)
DEFAULT = {"search": "`asha=stop` (default then)", "search|asha=promote": "**the default** (`asha=promote`)"}
OURS = {"search": ("the search", {}), "search|asha=promote": ("the default", DEFAULT)}
OURS[RUNGS] = ("the default", {RUNGS: DEFAULT["search|asha=promote"], "search|asha=promote": "`asha=promote` then"})
SIDES = ("lower", "higher")


def pays_table(stats: dict, ours: str = "search") -> str:
    """Per table each arm's regret IQM (points) and median epochs to within 0.5 points at every concurrency; `*`: arm
    `ours` lower after Holm, `!`: higher; last, its place by regret IQM as shown (ties share the better). `stats`:
    replay_stats' verdict (about the search), or replay_pairs' (its results read for the figures, `ours>B` for B's)."""
    stats = pays_of_pairs(stats, ours) if isinstance(stats.get("results"), dict) else {"search": stats}[ours]
    who, labels = OURS[ours][0], {**LABELS, **OURS[ours][1]}
    at_k = list(stats["concurrency"].values())
    names = list(at_k[0]["tables"])
    header = [f"method ({' / '.join(stats['concurrency'])} side by side)"]
    header += [f"`{n.rsplit('.', 1)[-1]}`: {h}" for n in names for h in ("regret", "epochs to 0.5 pt")]
    lines, places = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)], []
    for name in names:
        shown = [{a: round(v, 2) for a, v in f["tables"][name]["regret_iqm_pt"].items()} for f in at_k]
        places += [" / ".join(f"{sum(v < r[ours] for v in r.values()) + 1} of {len(r)}" for r in shown), ""]
    for arm in at_k[0]["tables"][names[0]]["regret_iqm_pt"]:
        cells = [labels.get(arm, f"`{arm}`")]
        for tables in ([figures["tables"][name] for figures in at_k] for name in names):
            cells.append(" / ".join(f"{t['regret_iqm_pt'][arm]:.2f}{holm_mark(t, arm)}" for t in tables))
            epochs = [t["to_within_pt"]["0.5"][arm]["median_epochs"] for t in tables]
            cells.append(" / ".join("never" if e is None else f"{e:g}" for e in epochs))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("| " + " | ".join([f"{who}'s place", *places]) + " |")
    return "\n".join([*lines, "", holm_words([t for figures in at_k for t in figures["tables"].values()], who, labels)])


def pays_of_pairs(verdict: dict, ours: str = "search") -> dict:
    """replay_pairs' verdict as `pays_table` reads replay_stats': per concurrency and table, its results' arms."""
    several = isinstance(verdict["concurrency"], list)  # each key then ends ", K side by side"
    stats = {"concurrency": {}}
    for where, found in verdict["results"].items():
        k = where.rsplit(", ", 1)[1].split()[0] if several else str(verdict["concurrency"])
        against = {name.split(">")[1]: pair for name, pair in found["pairs"].items() if name.startswith(f"{ours}>")}
        table = {f"p_search_{s}_holm": {b: p[f"p_first_{s}_holm"] for b, p in against.items()} for s in SIDES}
        for arm, figures in _load(found["result"])["concurrency"][k]["arms"].items():
            table.setdefault("regret_iqm_pt", {})[arm] = figures["regret_iqm_pt"]
            table.setdefault("to_within_pt", {"0.5": {}})["0.5"][arm] = figures["to_within_pt"]["0.5"]
        stats["concurrency"].setdefault(k, {"tables": {}})["tables"][found["space"]] = table
    return stats


def holm_words(tables: list[dict], who: str = "the search", labels: dict = LABELS) -> str:
    """In words, over every (table, concurrency): the arms `who` is lower than after Holm, and higher than."""
    counts = [Counter(a for t in tables for a, p in t[f"p_search_{side}_holm"].items() if p < 0.05) for side in SIDES]
    said = [", ".join(f"{labels.get(a, a)} ({n} of {len(tables)})" for a, n in c.items()) or "no arm" for c in counts]
    return f"After Holm, {who}'s final regret is lower than {said[0]}; it is higher than {said[1]}."


def holm_mark(table: dict, arm: str) -> str:
    """`*`: the search's regret lower than the arm's after Holm; `!`: higher; '' neither (or the search itself)."""
    lower, higher = table["p_search_lower_holm"].get(arm, 1.0), table["p_search_higher_holm"].get(arm, 1.0)
    return "*" if lower < 0.05 else "!" if higher < 0.05 else ""


BLOCKS = {"arms": arms_table, "pairs": pairs_table, "pays": pays_table}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme_figures", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    args, failed = parser.parse_args(), False
    for name in DOCUMENTS:
        if not (path := ROOT / name).exists():
            continue
        text = path.read_text()
        if args.check:
            for line in disagreements(text):
                print(f"{name}: {line}")
                failed = True
        elif rewritten(text) != text:
            path.write_text(rewritten(text))
            print(f"{name}: figures rewritten")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
