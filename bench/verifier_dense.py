"""Benchmark of the verifier on claims dense with values, within the request's budget.

Run from the repository root:  .venv/bin/python bench/verifier_dense.py

A claim's fact alignment costs its values times the values of each sentence it is set against,
so a "sentence" of numbers or names (a table flattened into an answer) against a source as dense
is the verifier's worst input. Before 2026-11-28 one such claim of 2,000 characters took minutes
(docs/verifier.md, "What it costs"); ``VERIFIER_MAX_CLAIM_CHARS`` (judges/budget.py) now bounds the
characters of claims checked, and ``VERIFIER_MAX_WORK`` (judges/verifier/facts/work.py) the
alignment's pairings: characters alone left such a claim of 2,900 characters at ~10 s. Measures, in
one run, CPU seconds of ``budgeted_check`` with the default settings:

* the baseline: a plain three-claim answer against three plain source sentences;
* claims of numbers, names and mixed values of 1,000 to 2,900 characters (the default budget is 3,000)
  against an 8,000-character source sentence of the same kind (the default source budget);
* one claim of 20,000 characters (past the budget: answered unchecked);
* sixteen short claims of one to ten numbers each against the dense source: as many as the work
  budget affords are checked, the rest are not (the most a caller can make the alignment spend).

Prints each figure with its ratio to the baseline, and as the last line ``ratio=<worst input /
baseline>``.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from judges.budget import budgeted_check  # noqa: E402
from judges.verification import config_for  # noqa: E402

REPEATS = 3
BASELINE = (
    "The hospital has 420 beds. It opened in 1990 in Leeds. Visiting hours end at 8 p.m.",
    ["The hospital has 420 beds and opened in 1990.", "It is in Leeds.", "Visiting hours end at 8 p.m. daily."],
)


def cpu_seconds(text: str, sources: list[str]) -> tuple[float, int, int]:
    """Best CPU seconds of ``REPEATS`` budgeted checks, with the claims checked and found."""
    best, checked, total = float("inf"), 0, 0
    for _ in range(REPEATS):
        before = resource.getrusage(resource.RUSAGE_SELF)
        result, _ = budgeted_check(text, sources, config_for())
        after = resource.getrusage(resource.RUSAGE_SELF)
        best = min(best, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        checked = sum(1 for c in result.claims if not c.reason.startswith("not checked"))
        total = len(result.claims)
    return best, checked, total


def dense(kind: str, chars: int) -> tuple[str, list[str]]:
    """A claim of about ``chars`` characters of ``kind`` values and an 8,000-character source."""
    if kind == "numbers":
        return "The hospital has " + "350 beds, " * (chars // 10) + ".", [
            "The hospital has " + "420 beds and " * 615 + "."
        ]
    if kind == "names":
        claim = "Alice Smith met " + "Bob Jones and Carol King, " * (chars // 26) + "."
        return claim, ["Alice Smith met " + "Dan Brown and Eve Adams, " * 320 + "."]
    claim = "Revenue was " + "$5 million in 2023, up 12% from 4 km in Q3 2024 at 10:30, " * (chars // 60) + "."
    return claim, ["Revenue was " + "$6 million in 2022, down 8% to 5 km in Q2 2023 at 11:00, " * 130 + "."]


def main() -> None:
    cpu_seconds(*BASELINE)  # models loaded before anything is timed
    base, _, _ = cpu_seconds(*BASELINE)
    print(f"{'input':<36} {'CPU s':>7} {'checked':>8} {'x baseline':>11}")
    print(f"{'baseline: 3 plain claims':<36} {base:>7.3f} {'3/3':>8} {1.0:>11.1f}")
    worst = 0.0
    for kind in ("numbers", "names", "mixed"):
        for chars in (1000, 2000, 2900):  # the last just under the default budget of 3,000
            seconds, checked, total = cpu_seconds(*dense(kind, chars))
            worst = max(worst, seconds)
            label = f"{kind}, {chars:,} characters"
            print(f"{label:<36} {seconds:>7.3f} {f'{checked}/{total}':>8} {seconds / base:>11.1f}")
    seconds, checked, total = cpu_seconds(*dense("numbers", 20_000))
    print(f"{'numbers, 20,000 characters':<36} {seconds:>7.3f} {f'{checked}/{total}':>8} {seconds / base:>11.1f}")
    source = dense("numbers", 1000)[1]
    for per in (1, 3, 10):
        text = " ".join(
            f"The hospital has {', '.join(f'{300 + 7 * i + k} beds' for k in range(per))}." for i in range(16)
        )
        seconds, checked, total = cpu_seconds(text, source)
        worst = max(worst, seconds)
        label = f"16 claims of {per} number(s)"
        print(f"{label:<36} {seconds:>7.3f} {f'{checked}/{total}':>8} {seconds / base:>11.1f}")
    print(f"ratio={worst / base:.1f}")


if __name__ == "__main__":
    main()
