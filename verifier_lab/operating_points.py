"""The verifier's published operating points: precision, recall and the share left undecided, per
label, at a sweep of thresholds, on the held-out pairs nothing was fitted or tuned on.

    python -m verifier_lab.operating_points              # runs the verifier (minutes), records, prints
    python -m verifier_lab.operating_points --recorded   # the tables again from the record, no model
    python -m verifier_lab.operating_points --check 40   # every 40th pair run again against the record

The held-out pairs: the development set's test half and every untouched half of the fresh sets
(evaluate.HELD_OUT). The verifier runs once per pair at its default thresholds; each claim's
probabilities and threshold inputs are kept in ``operating_points.jsonl`` beside this file, and every
other threshold is applied to them as replay and calibration apply it (policies.judged.claim_verdict),
so the sweep costs one verifier run. docs/verifier.md carries the tables this prints
(tests/test_verifier_operating_points.py checks they are the same).

A pair's verdict is evaluate.pair_verdict's: any contradicted claim makes it contradicted, all supported
make it supported, anything else leaves it undecided (the verifier's "unverifiable": the claims an
``nli_escalation: "llm"`` policy sends to the tenant's LLM judge).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from policies.judged import claim_verdict
from verifier_lab.evaluate import HELD_OUT, LABELS, load

RECORD = Path(__file__).resolve().parent / "operating_points.jsonl"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
DEFAULT = 0.5
#: what a claim's re-thresholding reads (policies/judged.py); nothing else is recorded
KEPT = ("verdict", "kind", "decided_by", "probabilities", "thresholds_input", "confidence")


def held_out_rows() -> list[dict]:
    rows = []
    for name, half, path in HELD_OUT:
        rows += [{**r, "set": name} for r in load(half, path)]
    return rows


def record_of(row: dict, check) -> dict:
    claims = [{k: c.to_dict()[k] for k in KEPT} for c in check.claims]
    return {"set": row["set"], "id": row["id"], "label": row["label"], "kind": row["kind"], "claims": claims}


def measure(rows: list[dict], nli_model: str | None = None) -> list[dict]:
    from judges.verifier import VerifierConfig, check_grounding

    config = VerifierConfig(nli_model_dir=nli_model) if nli_model else None
    return [record_of(r, check_grounding(r["claim"], r["sources"], config)) for r in rows]


def pair_verdict(claims: list[dict], threshold: float) -> str:
    verdicts = [claim_verdict(c, entailment=threshold, contradiction=threshold) for c in claims]
    if "contradicted" in verdicts:
        return "contradicted"
    if verdicts and all(v == "supported" for v in verdicts):
        return "supported"
    return "unverifiable"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "–"


def sweep_table(records: list[dict]) -> str:
    """One row per threshold (entailment and contradiction set alike): per label precision / recall,
    the share of each label's pairs left undecided, and the false blocks per 100 faithful answers
    (supported pairs called contradicted, which a blocking ``contradiction_action`` blocks)."""
    head = (
        "| threshold | supported P / R | contradicted P / R | undecided: all · supported · contradicted · "
        "unverifiable | false blocks per 100 faithful |"
    )
    lines = [head, "|---|---|---|---|---|"]
    truth = Counter(r["label"] for r in records)
    for t in THRESHOLDS:
        called: Counter[tuple[str, str]] = Counter((r["label"], pair_verdict(r["claims"], t)) for r in records)
        cells = []
        for label in ("supported", "contradicted"):
            said = sum(n for (_, v), n in called.items() if v == label)
            cells.append(f"{_ratio(called[(label, label)], said)} / {_ratio(called[(label, label)], truth[label])}")
        undecided = [sum(n for (_, v), n in called.items() if v == "unverifiable") / len(records)]
        undecided += [called[(label, "unverifiable")] / truth[label] for label in LABELS]
        blocks = 100 * called[("supported", "contradicted")] / truth["supported"]
        mark = " (default)" if t == DEFAULT else ""
        lines.append(
            f"| {t:.1f}{mark} | {cells[0]} | {cells[1]} | {' · '.join(f'{u:.2f}' for u in undecided)} | {blocks:.1f} |"
        )
    return "\n".join(lines)


def kind_table(records: list[dict]) -> str:
    """Recall per label and kind at the default thresholds (for unverifiable: left undecided)."""
    per: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in records:
        per[(r["label"], r["kind"])]["n"] += 1
        per[(r["label"], r["kind"])]["ok"] += pair_verdict(r["claims"], DEFAULT) == r["label"]
    lines = ["| label | kind | pairs | recall |", "|---|---|---|---|"]
    for label in LABELS:
        kinds = sorted(k for (lab, k) in per if lab == label)
        n = sum(per[(label, k)]["n"] for k in kinds)
        ok = sum(per[(label, k)]["ok"] for k in kinds)
        lines.append(f"| **{label}** | all | {n} | **{ok / n:.2f}** |")
        for k in kinds:
            c = per[(label, k)]
            lines.append(f"| {label} | {k} | {c['n']} | {_ratio(c['ok'], c['n'])} |")
    return "\n".join(lines)


def set_table(records: list[dict]) -> str:
    sizes = Counter(r["set"] for r in records)
    labels = Counter((r["set"], r["label"]) for r in records)
    lines = ["| held-out set | pairs | supported · contradicted · unverifiable |", "|---|---|---|"]
    for name, _, _ in HELD_OUT:
        lines.append(f"| {name} | {sizes[name]} | {' · '.join(str(labels[(name, lab)]) for lab in LABELS)} |")
    lines.append(
        f"| **all** | {len(records)} | {' · '.join(str(sum(labels[(s, lab)] for s in sizes)) for lab in LABELS)} |"
    )
    return "\n".join(lines)


def report(records: list[dict]) -> str:
    return "\n\n".join((set_table(records), sweep_table(records), kind_table(records)))


def read_record(path: Path = RECORD) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def write_record(records: list[dict], path: Path = RECORD) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")


def agrees(run: dict, kept: dict | None, tolerance: float = 0.01) -> bool:
    """The same verdicts at every threshold and the same probabilities up to float rounding. The int8
    products are exact on every x86 CPU, but the float parts take other kernels on other CPUs and
    onnxruntime releases (AVX-512 against AVX2: up to 0.005 seen on a pair); the verdicts at every
    threshold of the card must still be the same."""
    if kept is None or len(run["claims"]) != len(kept["claims"]):
        return False
    for a, b in zip(run["claims"], kept["claims"]):
        pa, pb = a.get("probabilities") or {}, b.get("probabilities") or {}
        if pa.keys() != pb.keys() or any(abs(pa[k] - pb[k]) > tolerance for k in pa):
            return False
    return all(pair_verdict(run["claims"], t) == pair_verdict(kept["claims"], t) for t in THRESHOLDS)


def sample(rows: list[dict], every: int) -> list[dict]:
    return rows[::every]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recorded", action="store_true", help="print the tables from the record; run nothing")
    ap.add_argument("--check", type=int, metavar="EVERY", help="run every EVERY-th pair again and compare")
    ap.add_argument("--nli-model", metavar="DIR", help="measure an operator's NLI model (the NLI path) instead")
    ap.add_argument("--record", type=Path, default=RECORD, help=f"where the record is kept (default {RECORD.name})")
    args = ap.parse_args()
    if args.nli_model and args.record == RECORD:
        ap.error("--nli-model needs --record OUT.jsonl: the packaged verifier's record stays as published")
    if args.recorded:
        print(report(read_record(args.record)))
        return
    rows = held_out_rows()
    if args.check:
        recorded = {(r["set"], r["id"]): r for r in read_record(args.record)}
        picked = sample(rows, args.check)
        differ = [r for r in measure(picked, args.nli_model) if not agrees(r, recorded.get((r["set"], r["id"])))]
        print(f"{len(picked)} pairs run again, {len(differ)} differ from the record")
        raise SystemExit(1 if differ else 0)
    started = time.perf_counter()
    records = measure(rows, args.nli_model)
    seconds = time.perf_counter() - started
    write_record(records, args.record)
    print(report(records))
    print(f"\n{len(records)} pairs in {seconds:.0f} s ({1000 * seconds / len(records):.1f} ms a pair)")
    live = sum(_live_verdict(r) != pair_verdict(r["claims"], DEFAULT) for r in records)
    print(f"re-thresholded at {DEFAULT} against the verdicts the verifier gave: {live} pairs differ")


def _live_verdict(record: dict) -> str:
    verdicts = [c["verdict"] for c in record["claims"]]
    if "contradicted" in verdicts:
        return "contradicted"
    return "supported" if verdicts and all(v == "supported" for v in verdicts) else "unverifiable"


if __name__ == "__main__":
    main()
