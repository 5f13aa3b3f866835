"""Render docs/benchmarks.md from the benchmark records in bench-results/ (written by `make bench`).

Every measured number in docs/benchmarks.md comes from a record (`--record FILE.json` on a benchmark
command: command, date, machine, result, the table it printed); nothing is typed by hand. The
Makefile's `bench` target is the list of benchmarks: one it names that has no record yet is listed
with the command that makes it.

    python scripts/render_benchmarks.py [--records bench-results] [--makefile Makefile] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FORMAT = "workbench-bench-record"
RECORD_FLAG = re.compile(r"\s+--record\s+(\S+)")


@dataclass(frozen=True)
class Planned:
    """One line of the Makefile's bench target that writes a record."""

    name: str  # the record's file stem, e.g. "attention"
    command: str  # as a user types it, without --record


@dataclass(frozen=True)
class Record:
    name: str
    command: str
    date: str
    machine: dict[str, Any]
    commit: str | None
    result: dict[str, Any]
    table: str | None


def planned_benchmarks(makefile: Path) -> tuple[list[Planned], list[str]]:
    """The commands of the `bench:` target that pass --record, in the Makefile's order, and the
    workbench commands without one (set-up, such as writing the segmentation rooms)."""
    planned: list[Planned] = []
    setup: list[str] = []
    in_bench = False
    for line in makefile.read_text().splitlines():
        if re.match(r"^bench\s*:", line):
            in_bench = True
            continue
        if in_bench and not line.startswith("\t"):
            if line.strip() and not line.startswith("#"):
                break
            continue
        if in_bench:
            command = RECORD_FLAG.sub("", line.strip()).replace("$(WB)", "workbench")
            match = RECORD_FLAG.search(line)
            if match:
                planned.append(Planned(Path(match.group(1)).stem, command))
            elif command.startswith("workbench "):
                setup.append(command)
    return planned, setup


def read_records(folder: Path) -> dict[str, Record]:
    """Every record of the folder by file stem; a file that is no record is refused by name."""
    records: dict[str, Record] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            raise SystemExit(f"error: {path} is not a benchmark record (format {data.get('format')!r})")
        records[path.stem] = Record(
            path.stem, data["command"], data["date"], data.get("machine", {}), data.get("commit"), data.get("result", {}), data.get("table")
        )
    return records


def describe_machine(machine: dict[str, Any]) -> str:
    parts = [str(machine.get("cpu") or "unknown CPU"), f"{machine.get('cores', '?')} cores"]
    if machine.get("gpu"):
        parts.append(str(machine["gpu"]))
    if machine.get("threads"):
        parts.append(f"torch threads {machine['threads']}")
    if machine.get("load") is not None:
        parts.append(f"load {machine['load']} at the end")
    return ", ".join(parts)


def busy(machine: dict[str, Any]) -> bool:
    """More runnable processes than cores when it ended: every timing is stretched by the others' work."""
    load, cores = machine.get("load"), machine.get("cores")
    return isinstance(load, (int, float)) and isinstance(cores, int) and load > cores


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|")


def render_record(record: Record, records_dir: str) -> list[str]:
    lines = [
        f"## {record.name}",
        "",
        f"`{record.command}`",
        "",
        f"Measured {record.date.replace('T', ' ')} on {describe_machine(record.machine)}"
        + (f", commit {record.commit}" if record.commit else "")
        + f". Record: [`{records_dir}/{record.name}.json`](../{records_dir}/{record.name}.json).",
        "",
    ]
    if busy(record.machine):
        lines += [
            f"**Measured on a busy machine** (load {record.machine['load']} on {record.machine['cores']} cores): times and rates here say more",
            "about the other jobs than about this code. Rerun the command on a quiet machine before comparing them with a target.",
            "",
        ]
    scalars = {k: v for k, v in record.result.items() if isinstance(v, (int, float, str, bool)) or v is None}
    if scalars:
        lines += ["| measure | value |", "|---|---|"] + [f"| {_cell(k)} | {_cell(v)} |" for k, v in scalars.items()] + [""]
    if record.table:
        lines += ["```text", record.table.rstrip("\n"), "```", ""]
    return lines


def render(records_dir: Path, makefile: Path) -> str:
    """The whole page: an index, one section per record, then what is not recorded yet."""
    planned, setup = planned_benchmarks(makefile)
    records = read_records(records_dir)
    order = [p.name for p in planned if p.name in records] + sorted(set(records) - {p.name for p in planned})
    missing = [p for p in planned if p.name not in records]
    shown_dir = records_dir.name
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by scripts/render_benchmarks.py from bench-results/*.json: do not edit by hand; run `make bench` or the script. -->",
        "",
        "Every number on this page comes from a benchmark record: the JSON a benchmark command writes with",
        "`--record FILE.json` (the command, the date, the machine, its result and the table it printed).",
        "`make bench` runs every benchmark of the Makefile, writes the records to `bench-results/` and renders",
        "this page. Ratios compare methods within one run, on one machine; machines differ between records.",
        "The dated experiments behind each method are in [docs/history/](history/).",
        "",
        "| benchmark | date (UTC) | machine | command |",
        "|---|---|---|---|",
    ]
    for name in order:
        r = records[name]
        note = " (busy)" if busy(r.machine) else ""
        lines.append(f"| [{name}](#{name}) | {r.date[:10]} | {_cell(describe_machine(r.machine))}{note} | `{_cell(r.command)}` |")
    for p in missing:
        lines.append(f"| {p.name} | not recorded yet | | `{_cell(p.command)}` |")
    lines.append("")
    for name in order:
        lines += render_record(records[name], shown_dir)
    if missing:
        lines += [
            "## Not recorded yet",
            "",
            "These benchmarks of `make bench` have no record yet; each command below makes one. Until then, their",
            "last numbers, typed by hand with their dates when they were measured, are in [docs/history/](history/).",
            "",
        ]
        if setup:
            lines += ["First the set-up the bench target does: " + "; ".join(f"`{c}`" for c in setup) + ".", ""]
        lines += [f"- `{p.command} --record {shown_dir}/{p.name}.json`" for p in missing] + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render docs/benchmarks.md from benchmark records.")
    parser.add_argument("--records", type=Path, default=ROOT / "bench-results")
    parser.add_argument("--makefile", type=Path, default=ROOT / "Makefile")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    text = render(args.records, args.makefile)
    tmp = args.out.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(args.out)  # never half a page
    sys.stdout.write(f"wrote {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
