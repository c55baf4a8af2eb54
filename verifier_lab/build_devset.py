"""Build verifier_lab/data/devset.jsonl from public claim/evidence data and hand-written pairs.

Run (re-runnable; the public repositories are read from local git snapshots)::

    python -m verifier_lab.build_devset --mirror /work/.mirror

Sources (origin and licence are recorded on every row; see verifier_lab/data/README.md):

* WiCE (github.com/ryokamoi/wice, oracle_chunks/claim dev+test): Wikipedia claims checked
  against the web page they cite; annotations ODC-BY, text CC BY-SA / Common Crawl terms.
* CLIMATE-FEVER (github.com/tdiggelm/climate-fever-dataset): claim vs one Wikipedia sentence
  with a unanimous label; text CC BY-SA 3.0 (Wikipedia), no separate licence for annotations.
* derived: contradictions made from the supported public pairs above by changing one fact
  (a number, a year, a name, or negating the verb) -- public data has few contradictions that
  hinge on a changed fact, and those are what the verifier must catch.
* hand-written pairs (verifier_lab/data/handwritten.jsonl) across every kind of issue 10's table,
  and the older labelled set (verifier_lab/data/verifier_pairs.jsonl).
* independent pairs (verifier_lab/data/independent.jsonl): 300 pairs across the same kinds,
  written by a second author who saw neither the verifier nor any of its data.

Every row: id, group (rows made from one public pair share it, so they fall in one half),
half ("fit" or "test", from a hash of the group: deterministic), label, kind, origin, licence,
claim, sources.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "devset.jsonl"
HANDWRITTEN = DATA / "handwritten.jsonl"
OLD_SET = DATA / "verifier_pairs.jsonl"
INDEPENDENT = DATA / "independent.jsonl"

WICE_LICENCE = "ODC-BY 1.0 (annotations); CC BY-SA (Wikipedia claims); Common Crawl terms (web evidence)"
CF_LICENCE = "CC BY-SA 3.0 (Wikipedia text); annotations carry no separate licence"
OWN_LICENCE = "project's own (hand-written for this repository)"

INDEPENDENT_ORIGIN = "independent: written for issue 10 by a second author who never saw the verifier"

MAX_SOURCE_CHARS = 1600


def half_of(group: str) -> str:
    return "fit" if int(hashlib.sha256(group.encode()).hexdigest(), 16) % 2 == 0 else "test"


def _git_bytes(mirror: Path, repo: str, path: str) -> bytes:
    """A file of a snapshot's newest commit, as stored."""
    return subprocess.run(
        ["git", "-C", str(mirror / repo / "repo"), "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout


def _git_show(mirror: Path, repo: str, path: str) -> str:
    return _git_bytes(mirror, repo, path).decode("utf-8")


def _clip(sentences: list[str]) -> str:
    out: list[str] = []
    n = 0
    for s in sentences:
        s = s.strip()
        if not s or s.startswith("#"):
            continue
        if n + len(s) > MAX_SOURCE_CHARS and out:
            break
        out.append(s)
        n += len(s) + 1
    return " ".join(out)


def wice_rows(mirror: Path, rng: random.Random) -> list[dict]:
    rows: list[dict] = []
    seen: set[str] = set()
    quota = {"supported": 140, "partially_supported": 70, "not_supported": 70}
    for split in ("dev", "test"):
        data = [
            json.loads(x)
            for x in _git_show(
                mirror, "ryokamoi+wice", f"code_and_resources/entailment_inputs/oracle_chunks/claim/{split}.jsonl"
            ).splitlines()
            if x.strip()
        ]
        rng.shuffle(data)
        for r in data:
            label = r["label"]
            if quota.get(label, 0) <= 0 or len(r["claim"]) > 260 or len(r["claim"].split()) < 6:
                continue
            meta = r["meta"]
            if meta["id"] in seen:
                continue
            seen.add(meta["id"])
            pos = {ci: k for k, ci in enumerate(meta["chunk_idx"])}
            oracle = [pos[i] for i in meta.get("oracle_idx") or [] if i in pos]
            ev = r["evidence"]
            if label == "not_supported" or not oracle:
                keep = list(range(min(6, len(ev))))
            else:
                keep = sorted(set(oracle) | {k for o in oracle for k in (o - 1, o + 1) if 0 <= k < len(ev)})
            if label == "supported" and len(oracle) >= 2 and quota[label] % 2 == 0:
                cut = sorted(oracle)[len(oracle) // 2]
                sources = [_clip([ev[k] for k in keep if k < cut]), _clip([ev[k] for k in keep if k >= cut])]
                sources = [s for s in sources if s]
                kind = "two_sources" if len(sources) == 2 else "paraphrase"
            else:
                sources = [_clip([ev[k] for k in keep])]
                kind = "paraphrase"
            if label == "partially_supported":
                kind = "partial_overlap"
            elif label == "not_supported":
                kind = "missing_fact"
            if not all(sources):
                continue
            quota[label] -= 1
            gid = f"wice-{meta['id']}"
            rows.append(
                {
                    "id": gid,
                    "group": gid,
                    "label": {"supported": "supported"}.get(label, "unverifiable"),
                    "kind": kind,
                    "origin": f"WiCE oracle_chunks/claim/{split} {meta['id']}",
                    "licence": WICE_LICENCE,
                    "claim": r["claim"],
                    "sources": sources,
                }
            )
    return rows


def climate_fever_rows(mirror: Path, rng: random.Random) -> list[dict]:
    data = [
        json.loads(x)
        for x in _git_show(mirror, "tdiggelm+climate-fever-dataset", "dataset/climate-fever.jsonl").splitlines()
        if x.strip()
    ]
    rng.shuffle(data)
    quota = {"SUPPORTS": 80, "REFUTES": 80, "NOT_ENOUGH_INFO": 60}
    label = {"SUPPORTS": "supported", "REFUTES": "contradicted", "NOT_ENOUGH_INFO": "unverifiable"}
    kind = {"SUPPORTS": "paraphrase", "REFUTES": "refuted", "NOT_ENOUGH_INFO": "missing_fact"}
    rows: list[dict] = []
    for r in data:
        for e in r["evidences"]:
            lab = e["evidence_label"]
            if e["entropy"] != 0 or quota[lab] <= 0:
                continue
            votes = [v for v in e["votes"] if v]
            if len(votes) < 2:
                continue
            quota[lab] -= 1
            gid = f"cf-{r['claim_id']}"
            rows.append(
                {
                    "id": f"cf-{e['evidence_id']}-{r['claim_id']}".replace(" ", "_"),
                    "group": gid,
                    "label": label[lab],
                    "kind": kind[lab],
                    "origin": f"CLIMATE-FEVER claim {r['claim_id']} / {e['evidence_id']}",
                    "licence": CF_LICENCE,
                    "claim": r["claim"],
                    "sources": [e["evidence"]],
                }
            )
            break  # one evidence per claim: claims stay independent
    return rows


# --------------------------------------------------------------------------- derived contradictions

_YEAR = re.compile(r"\b(1[89]\d\d|20[0-3]\d)\b")
_NUM = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d,])")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_AUX = re.compile(r"\b(is|was|are|were|has been|have been|had been|will|can|could)\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})*)\b")


def _numbers_in(text: str) -> set[str]:
    return {m.group(1).replace(",", "") for m in _NUM.finditer(text)}


def perturb(row: dict, rng: random.Random) -> dict | None:
    claim, src = row["claim"], " ".join(row["sources"])
    src_years = set(_YEAR.findall(src))
    options = []
    years = [m for m in _YEAR.finditer(claim) if m.group(1) in src_years]
    if years:
        options.append("date")
    nums = [
        m
        for m in _NUM.finditer(claim)
        if not _YEAR.fullmatch(m.group(1))
        and m.group(1).replace(",", "") in _numbers_in(src)
        and float(m.group(1).replace(",", "")) >= 2
    ]
    if nums:
        options.append("number")
    months = [m for m in _MONTHS if re.search(rf"\b{m}\b", claim) and m in src]
    if months:
        options.append("month")
    claim_names = [m for m in _NAME.finditer(claim) if m.group(1) in src and m.group(1) not in _MONTHS]
    other_names = sorted(
        {
            m.group(1)
            for m in _NAME.finditer(src)
            if m.group(1) not in claim and m.group(1) not in _MONTHS and len(m.group(1)) > 3
        }
    )
    if claim_names and other_names:
        options.append("entity")
    if _AUX.search(claim) and not re.search(r"\bnot\b|n't\b|\bnever\b", claim):
        options.append("negation")
    if not options:
        return None
    kind = rng.choice(options)
    if kind == "date":
        m = rng.choice(years)
        y = int(m.group(1))
        new = str(y + rng.choice([-7, -4, -3, -2, 2, 3, 5, 11]))
        text = claim[: m.start()] + new + claim[m.end() :]
    elif kind == "number":
        m = rng.choice(nums)
        v = float(m.group(1).replace(",", ""))
        nv = v * rng.choice([0.5, 0.7, 1.4, 1.8, 2.5, 3])
        new = f"{nv:,.0f}" if "," in m.group(1) else (f"{nv:.0f}" if v.is_integer() else f"{nv:.1f}")
        if new.replace(",", "") == m.group(1).replace(",", ""):
            return None
        text = claim[: m.start()] + new + claim[m.end() :]
    elif kind == "month":
        mo = rng.choice(months)
        new = _MONTHS[(_MONTHS.index(mo) + rng.choice([2, 3, 5, 7])) % 12]
        text = re.sub(rf"\b{mo}\b", new, claim, count=1)
        kind = "date"
    elif kind == "entity":
        m = rng.choice(claim_names)
        new = rng.choice(other_names)
        text = claim[: m.start()] + new + claim[m.end() :]
    else:
        aux = _AUX.search(claim)
        assert aux is not None
        word = aux.group(1)
        neg = {
            "has been": "has not been",
            "have been": "have not been",
            "had been": "had not been",
            "can": "cannot",
        }.get(word, f"{word} not")
        text = claim[: aux.start()] + neg + claim[aux.end() :]
    return {
        **row,
        "id": f"{row['id']}-x{kind}",
        "label": "contradicted",
        "kind": kind,
        "origin": f"derived ({kind} changed) from {row['origin']}",
        "claim": text,
    }


#: the older labelled set's finer kinds, mapped onto issue 10's table
OLD_KINDS = {
    "supported": {
        k: "number_format"
        for k in "approx_number bounds currency date_formats date_range duration_units "
        "number number_format number_words percent percent_words time unit_conversion units".split()
    }
    | {
        k: "paraphrase"
        for k in "comparative negation_both negation_paraphrase paraphrase superlative entity date".split()
    },
    "contradicted": {"antonym": "negation", "comparative": "comparison", "time": "date"},
    "unverifiable": {"missing_detail": "partial_overlap"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mirror", default="/work/.mirror", type=Path, help="folder holding the git snapshots <owner>+<name>/repo"
    )
    args = ap.parse_args()
    rng = random.Random(10)
    public = wice_rows(args.mirror, rng) + climate_fever_rows(args.mirror, rng)
    derived = []
    for row in public:
        if row["label"] == "supported":
            d = perturb(row, rng)
            if d is not None:
                derived.append(d)
    own = []
    for line in HANDWRITTEN.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            own.append({"group": r["id"], "origin": "hand-written for issue 10", "licence": OWN_LICENCE, **r})
    for line in OLD_SET.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            own.append(
                {
                    "id": f"old-{r['id']}",
                    "group": f"old-{r['id']}",
                    "label": r["label"],
                    "kind": OLD_KINDS[r["label"]].get(r["kind"], r["kind"]),
                    "origin": f"verifier_lab/data/verifier_pairs.jsonl set {r['set']} (by the rules' author)",
                    "licence": OWN_LICENCE,
                    "claim": r["claim"],
                    "sources": r["sources"],
                }
            )
    for line in INDEPENDENT.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            own.append({"group": r["id"], "origin": INDEPENDENT_ORIGIN, "licence": OWN_LICENCE, **r})
    rows = public + derived + own
    seen = set()
    with OUT.open("w", encoding="utf-8") as fh:
        for r in rows:
            assert r["id"] not in seen, r["id"]
            seen.add(r["id"])
            r = {
                "id": r["id"],
                "group": r["group"],
                "half": half_of(r["group"]),
                "label": r["label"],
                "kind": r["kind"],
                "origin": r["origin"],
                "licence": r["licence"],
                "claim": r["claim"],
                "sources": r["sources"],
            }
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows -> {OUT.relative_to(ROOT)} (public {len(public)}, derived {len(derived)}, own {len(own)})")


if __name__ == "__main__":
    main()
