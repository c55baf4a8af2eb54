"""The model card's operating points (docs/verifier.md) are what `python -m verifier_lab.operating_points`
prints, and its record is what the verifier gives today.

The full run takes the verifier over 2,500 held-out pairs: measured 1,584 s of wall time (633 ms a
pair) on a shared, heavily loaded two-core machine, where a 25-pair sample took 52 ms a pair of its
own. So the test runs every 100th pair again against the record (about 9 s there) and rebuilds the
card's tables from the whole record.
"""

import re
import subprocess
import sys
from pathlib import Path

from verifier_lab import operating_points as op

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "docs" / "verifier.md"


def card_tables() -> str:
    text = CARD.read_text(encoding="utf-8")
    found = re.search(r"<!-- operating-points:start -->\n(.*?)\n<!-- operating-points:end -->", text, re.S)
    assert found, "docs/verifier.md has no operating-points block"
    return found.group(1)


def test_the_model_cards_tables_are_what_the_command_prints_from_its_record():
    printed = subprocess.run(
        [sys.executable, "-m", "verifier_lab.operating_points", "--recorded"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert card_tables() == printed.strip()


def test_the_record_covers_every_held_out_pair_and_nothing_fitted_on():
    record = op.read_record()
    rows = op.held_out_rows()
    assert [(r["set"], r["id"]) for r in record] == [(r["set"], r["id"]) for r in rows]
    assert len(record) == 2500
    halves = {(name, half) for name, half, _ in op.HELD_OUT}
    assert ("devset test", "test") in halves and all(half in ("test", "untouched") for _, half in halves)


def test_the_record_is_what_the_verifier_gives_today_on_a_sample():
    recorded = {(r["set"], r["id"]): r for r in op.read_record()}
    picked = op.sample(op.held_out_rows(), 100)
    assert len(picked) == 25
    differ = [r["id"] for r in op.measure(picked) if not op.agrees(r, recorded[(r["set"], r["id"])])]
    assert differ == []


def test_re_thresholding_the_record_at_the_default_gives_the_verifiers_own_verdicts():
    for r in op.read_record():
        live = [c["verdict"] for c in r["claims"]]
        expected = (
            "contradicted"
            if "contradicted" in live
            else "supported"
            if live and all(v == "supported" for v in live)
            else "unverifiable"
        )
        assert op.pair_verdict(r["claims"], op.DEFAULT) == expected, r["id"]


def test_the_default_row_states_the_false_blocks_the_card_quotes():
    default_row = next(line for line in card_tables().splitlines() if line.startswith("| 0.5 (default)"))
    blocks = default_row.rsplit("|", 2)[-2].strip()
    assert f"at the default 0.5, {blocks} of 100" in CARD.read_text(encoding="utf-8")
