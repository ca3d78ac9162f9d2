"""Compare the tables (CSV) of two reproductions, e.g. before and after a refactor that must change no number.

    python scripts/compare_reports.py reports/smoke /tmp/smoke_before [--ignore-column COLUMN ...]

Every CSV under either folder is read as text cells; a file present on one side only, or a cell that differs,
is printed. Exit status 0 only when every table is identical (outside the ignored columns).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def tables(root: Path) -> dict[str, pd.DataFrame]:
    return {
        str(p.relative_to(root)): pd.read_csv(p, dtype=str, keep_default_na=False)
        for p in root.rglob("*.csv")
    }


def differences(before: pd.DataFrame, after: pd.DataFrame, ignore: set[str]) -> list[str]:
    cols_b, cols_a = [c for c in before if c not in ignore], [c for c in after if c not in ignore]
    if cols_b != cols_a:
        return [f"columns {cols_b} -> {cols_a}"]
    if len(before) != len(after):
        return [f"{len(before)} rows -> {len(after)} rows"]
    out = []
    for col in cols_b:
        for i in before.index[before[col] != after[col]]:
            out.append(f"row {i}, {col}: {before.at[i, col]!r} -> {after.at[i, col]!r}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("after", type=Path)
    parser.add_argument("before", type=Path)
    parser.add_argument("--ignore-column", action="append", default=[])
    args = parser.parse_args()
    after, before, ignore = tables(args.after), tables(args.before), set(args.ignore_column)
    bad = 0
    for name in sorted(set(after) | set(before)):
        if name not in after or name not in before:
            print(f"{name}: only {'before' if name in before else 'after'}")
            bad += 1
            continue
        diff = differences(before[name], after[name], ignore)
        bad += bool(diff)
        for line in diff[:10]:
            print(f"{name}: {line}")
    print(f"{len(set(after) | set(before))} tables, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
