r"""The figures of benchmarks/README.md and README.md that come from a results JSON, written from that JSON.

A figure sits between markers that name its file, the value's place in it (a JSON pointer, RFC 6901: keys
separated by `/`, `~1` for a `/` inside a key, list positions as numbers; `\|` for a `|`, which a Markdown table
would take for a cell's end) and its format:

    <!-- fig:benchmarks/results/x.json#/peer/search_over_loop;.2f -->1.07<!-- /fig -->

`P1 / P2` (spaces around the slash) gives the ratio of two values, `P * 4` a value times a number. The format is
Python's format spec (`.3f`, `.0%`, `,.0f`), or `p`: a p-value in two significant digits (`0.033`, `2e-6`).
Files are named from the repository's root.

    python -m benchmarks.readme_figures            # rewrites every marked figure from its JSON
    python -m benchmarks.readme_figures --check    # exit 1 and name each figure whose text is not its JSON's

A whole table sits between block markers (benchmarks.replay_tables: `arms`, `pairs`), written from its JSON:

    <!-- block:arms benchmarks/results/x.json -->
    | ... |
    <!-- /block -->

tests/test_benchmark_readme.py runs the check, so a figure edited by hand, or a JSON rewritten without the text,
fails the suite.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path

from benchmarks.replay_tables import BLOCKS, p_text

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("benchmarks/README.md", "README.md", "docs/spaces.md", "docs/measured.md")  # where figures are quoted
BLOCK = re.compile(r"<!-- block:(?P<kind>\w+) (?P<file>[^\s]+) -->\n(?P<text>.*?)<!-- /block -->", re.S)
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
    document = _load(match["file"])
    pointers, _, factor = match["pointer"].partition(" * ")
    values = [lookup(document, pointer) for pointer in pointers.split(" / ")]
    value = values[0] / values[1] if len(values) == 2 else values[0]
    return render(value * float(factor) if factor else value, match["spec"])


def block(match: re.Match) -> str:
    """The table a block's JSON gives, ending in a newline."""
    return BLOCKS[match["kind"]](_load(match["file"])) + "\n"


def rewritten(text: str) -> str:
    def one(match: re.Match) -> str:
        return match.group(0).replace(f"-->{match['text']}<!--", f"-->{figure(match)}<!--", 1)

    def whole(match: re.Match) -> str:
        return match.group(0).replace(f"-->\n{match['text']}<!--", f"-->\n{block(match)}<!--", 1)

    return MARKER.sub(one, BLOCK.sub(whole, text))


def disagreements(text: str) -> list[str]:
    """Each marked figure or table whose text is not what its JSON gives: 'file#pointer: text "x", JSON "y"',
    'file (kind table): ...', and a block opening that the pattern cannot read."""
    wrong = []
    if text.count("<!-- block:") != len(BLOCK.findall(text)):
        wrong.append("a `<!-- block:KIND FILE -->` opening without its table and `<!-- /block -->`, or misspelt")
    for pattern, expect in ((MARKER, figure), (BLOCK, block)):
        for match in pattern.finditer(text):
            place = (
                f"{match['file']} ({match['kind']} table)"
                if pattern is BLOCK
                else f"{match['file']}#{match['pointer']}"
            )
            try:
                expected = expect(match)
            except (OSError, KeyError, IndexError, ValueError, TypeError) as error:
                wrong.append(f"{place}: unreadable ({type(error).__name__}: {error})")
                continue
            if match["text"] != expected:
                shown = (
                    f'text "{match["text"]}", JSON "{expected}"'
                    if pattern is MARKER
                    else "the text is not the table its JSON gives"
                )
                wrong.append(f"{place}: {shown}")
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme_figures", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    args = parser.parse_args()
    failed = False
    for name in DOCUMENTS:
        path = ROOT / name
        if not path.exists():
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
