"""Recall per label and per kind of the verifier on the development set's halves.

    python -m verifier_lab.evaluate [--half fit|test|both]
    python -m verifier_lab.evaluate --fresh     # the fresh independent pairs' halves
                                                            # (fresh.jsonl .. fresh5.jsonl)

A pair's verdict is the verdict of ``check_grounding`` on its claim text, as the API gives it:
when the claim text splits into several claims, any contradicted claim makes the pair
contradicted, all supported make it supported, anything else is unverifiable.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judges.verifier import GroundingCheck

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
DEVSET = DATA / "devset.jsonl"
#: 160 pairs an independent author wrote on 2026-11-26 (verifier_lab/data/README.md): the
#: "looked" half's failures were read to find what to mend, the "untouched" half's never were
FRESH = DEVSET.with_name("fresh.jsonl")
#: 600 pairs four more independent authors wrote on 2026-11-27, split the same way (the README there)
FRESH2 = DEVSET.with_name("fresh2.jsonl")
#: 600 pairs four further authors wrote later that day, on other domains, split the same way
FRESH3 = DEVSET.with_name("fresh3.jsonl")
#: 600 pairs four more authors wrote later on 2026-11-27 as an evaluation set only:
#: every pair is in the untouched half, none was read, none is trained or fitted on
FRESH4 = DEVSET.with_name("fresh4.jsonl")
#: 600 pairs four more authors wrote from a shorter brief (only issue 10's table of kinds), also an
#: evaluation set only
FRESH5 = DEVSET.with_name("fresh5.jsonl")
FRESH_SETS = (FRESH, FRESH2, FRESH3, FRESH4, FRESH5)
#: 2,880 pairs eighteen further authors wrote on 2026-11-27 as training data: the cross-encoder is
#: adapted and the combiner fitted on them (adapt_cross_encoder.py), so they measure nothing after that
WRITTEN = DEVSET.with_name("written.jsonl")
#: 1,600 more training pairs by eight authors, kept apart: a model adapted with them was not shipped
#: (verifier_lab/NOTES.md, "A third adaptation, not shipped"); read by the GPU sweep and the overlap tests
WRITTEN_ROUND4 = DEVSET.with_name("written_round4.jsonl")
#: 1,260 contrast triples by six more authors (one source set, a supported claim, the same claim
#: with the rival value, the same with an unstated detail), kept apart like the fourth round
WRITTEN_CONTRAST = DEVSET.with_name("written_contrast.jsonl")
#: the kept-apart training sets by the name sweep_adaptation.py gives them
KEPT_APART = {"r4": WRITTEN_ROUND4, "r5": WRITTEN_CONTRAST}
LABELS = ("supported", "contradicted", "unverifiable")
#: the pairs nothing was fitted, tuned or adapted on, read by operating_points.py: (name, half, file)
HELD_OUT = (("devset test", "test", DEVSET),) + tuple(
    (f"{path.stem} untouched", "untouched", path) for path in FRESH_SETS
)


def load(half: str | None = None, path: Path = DEVSET) -> list[dict]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r for r in rows if half in (None, "both") or r["half"] == half]


def pair_verdict(check) -> str:
    verdicts = [c.verdict for c in check.claims]
    if not verdicts:
        return "unverifiable"
    if "contradicted" in verdicts:
        return "contradicted"
    if all(v == "supported" for v in verdicts):
        return "supported"
    return "unverifiable"


def run(rows: list[dict], config=None) -> list[tuple[dict, str, GroundingCheck]]:
    from judges.verifier import check_grounding

    out = []
    for r in rows:
        check = check_grounding(r["claim"], r["sources"], config)
        out.append((r, pair_verdict(check), check))
    return out


def origin_group(row: dict) -> str:
    origin = row["origin"]
    for prefix, name in (
        ("WiCE", "WiCE"),
        ("CLIMATE-FEVER", "CLIMATE-FEVER"),
        ("derived", "derived (public)"),
        ("hand-written", "hand-written"),
        ("independent", "independent"),
        ("tests/data", "older labelled set"),
    ):
        if origin.startswith(prefix):
            return name
    return "other"


def recall_table(results) -> dict:
    per_label: defaultdict[str, Counter[str]] = defaultdict(Counter)
    per_kind: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r, verdict, _ in results:
        ok = verdict == r["label"]
        per_label[r["label"]]["n"] += 1
        per_label[r["label"]]["ok"] += ok
        key = (r["label"], r["kind"])
        per_kind[key]["n"] += 1
        per_kind[key]["ok"] += ok
    return {"label": per_label, "kind": per_kind}


def format_table(name: str, results) -> str:
    t = recall_table(results)
    lines = [f"{name}: {len(results)} pairs"]
    for label in LABELS:
        c = t["label"][label]
        if c["n"]:
            kinds = " · ".join(
                f"{k} {t['kind'][(lab, k)]['ok']}/{t['kind'][(lab, k)]['n']}"
                for (lab, k) in sorted(t["kind"])
                if lab == label
            )
            lines.append(f"  {label:<13} {c['ok']:>3}/{c['n']:<3} recall {c['ok'] / c['n']:.3f}   {kinds}")
    ok = sum(c["ok"] for c in t["label"].values())
    lines.append(
        f"  {'overall':<13} {ok:>3}/{len(results):<3} {ok / max(1, len(results)):.3f}   "
        f"balanced {sum(t['label'][lab]['ok'] / max(1, t['label'][lab]['n']) for lab in LABELS) / 3:.3f}"
    )
    by_origin: dict[str, Counter] = defaultdict(Counter)
    for r, v, _ in results:
        by_origin[origin_group(r)][f"{r['label']}_n"] += 1
        by_origin[origin_group(r)][f"{r['label']}_ok"] += v == r["label"]
    for name, c in sorted(by_origin.items()):
        lines.append(
            f"  from {name:<22} "
            + " · ".join(f"{label} {c[label + '_ok']}/{c[label + '_n']}" for label in LABELS if c[label + "_n"])
        )
    confusion = Counter((r["label"], v) for r, v, _ in results if v != r["label"])
    lines.append(
        "  confusion (label -> verdict): " + ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(confusion.items()))
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", default="both", choices=["fit", "test", "both"])
    ap.add_argument("--misses", action="store_true", help="print every wrong verdict")
    ap.add_argument("--fresh", action="store_true", help="the fresh independent pairs (looked / untouched halves)")
    ap.add_argument("--written", action="store_true", help="the written training pairs (trained on: no test)")
    ap.add_argument("--kept-apart", choices=sorted(KEPT_APART), help="a kept-apart round of training pairs")
    ap.add_argument(
        "--threshold", type=float, default=None, help="entailment and contradiction threshold (default: the verifier's)"
    )
    args = ap.parse_args()
    config = None
    if args.threshold is not None:
        from judges.verifier import VerifierConfig

        config = VerifierConfig(entailment_threshold=args.threshold, contradiction_threshold=args.threshold)
    halves: list[tuple[str, str | None, Path]]
    if args.written:
        halves = [("written", None, WRITTEN)]
    elif args.kept_apart:
        halves = [(args.kept_apart, None, KEPT_APART[args.kept_apart])]
    elif args.fresh:
        halves = [(f"{path.stem} {half}", half, path) for path in FRESH_SETS for half in ("looked", "untouched")]
    else:
        picked = ("fit", "test") if args.half == "both" else (args.half,)
        halves = [(half, half, DEVSET) for half in picked]
    for name, half, path in halves:
        rows = load(half, path)
        if not rows:  # fresh4.jsonl and fresh5.jsonl have no looked half
            continue
        results = run(rows, config)
        print(format_table(name if half is None else f"{name} half", results))
        if args.misses:
            for r, v, check in results:
                if v != r["label"]:
                    why = "; ".join(c.reason for c in check.claims)
                    print(
                        f"    miss {r['id']} [{r['kind']}] want {r['label']} got {v}: {r['claim'][:90]} -- {why[:160]}"
                    )


if __name__ == "__main__":
    main()
