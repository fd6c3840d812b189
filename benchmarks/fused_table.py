"""The rows of benchmarks/README.md's fused-trials table, from results JSONs written by benchmarks/fused.py.

python -m benchmarks.fused_table benchmarks/results/2026-11-26-fused-h200.json [more.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows_of(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    machine = report["device"].split(" (")[0].removeprefix("NVIDIA ")
    state = "" if report.get("complete") else ", incomplete"
    where = f"{machine}, `{report['commit'][:7]}` (`results/{path.name}`{state})"
    lines = []
    for row in report["rows"]:
        fused, packed = row["fused"], row["packed"]
        figure = f"{fused['images_per_s']:,.0f}" if "failed" not in fused else f"failed: {fused['failed']}"
        memory = f"{fused['peak_memory_mib']:,} MiB" if "peak_memory_mib" in fused else "-"
        lines.append(
            f"| {report['date']} | {where} | `{row['space']}` | {row['members']} | {figure} | "
            f"{packed['images_per_s']:,.0f} | {row['fused_over_packed']:.2f}x | {memory} |"
        )
    return lines


def main() -> None:
    if len(sys.argv) < 2 or not all(Path(a).is_file() for a in sys.argv[1:]):
        print(
            "usage: python -m benchmarks.fused_table RESULTS.json [...] (files written by benchmarks/fused.py)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    print("| date | machine, commit | space | N | fused img/s | packed img/s | fused / packed | fused peak memory |")
    print("|---|---|---|---|---|---|---|---|")
    for path in sys.argv[1:]:
        print("\n".join(rows_of(Path(path))))


if __name__ == "__main__":
    main()
