"""The rows of benchmarks/README.md's fused-trials table, from results JSONs written by benchmarks/fused.py: per
space, for each group size N, fused img/s / packed img/s (in thousands) and their ratio.

    python -m benchmarks.fused_table benchmarks/results/2026-11-26-fused-h200.json [more.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks import REPOSITORY


def cell(row: dict) -> str:
    fused, packed = row["fused"], row["packed"]
    if "failed" in fused:
        return f"failed ({fused['failed'][:60]}) / {packed['images_per_s'] / 1000:.1f}k"
    return (
        f"{fused['images_per_s'] / 1000:.1f}k / {packed['images_per_s'] / 1000:.1f}k = {row['fused_over_packed']:.2f}x"
    )


def rows_of(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    machine = report["device"].split(" (")[0].removeprefix("NVIDIA ")
    shown = path.resolve().relative_to(REPOSITORY / "benchmarks") if path.resolve().is_relative_to(REPOSITORY) else path
    where = f"{machine}, `{report['commit'][:7]}` (`{shown}`{'' if report.get('complete') else ', incomplete'})"
    by_space: dict[str, dict[int, dict]] = {}
    for row in report["rows"]:
        by_space.setdefault(row["space"], {})[row["members"]] = row
    sizes = sorted({row["members"] for row in report["rows"]})
    return [
        f"| {report['date']} | {where} | `{space}` | "
        + " | ".join(cell(rows[n]) if n in rows else "-" for n in sizes)
        + " |"
        for space, rows in by_space.items()
    ]


def main() -> None:
    if len(sys.argv) < 2 or not all(Path(a).is_file() for a in sys.argv[1:]):
        print(
            "usage: python -m benchmarks.fused_table RESULTS.json [...] (files of benchmarks/fused.py)", file=sys.stderr
        )
        raise SystemExit(2)
    sizes = sorted({row["members"] for a in sys.argv[1:] for row in json.loads(Path(a).read_text())["rows"]})
    print("| date | machine, commit (file) | space | " + " | ".join(f"N = {n}" for n in sizes) + " |")
    print("|---|---|---|" + "---|" * len(sizes))
    for path in sys.argv[1:]:
        print("\n".join(rows_of(Path(path))))


if __name__ == "__main__":
    main()
