"""Build judges/verifier/facts/wordnet_relations.tsv.gz, the verifier's English word-relation table.

Run (re-runnable and byte-reproducible; Open English WordNet is read from a local git snapshot)::

    python -m judges.verifier.training.build_wordnet_relations --mirror /work/.mirror

Source: Open English WordNet (github.com/globalwordnet/english-wordnet), its YAML sources under
src/yaml at the snapshot's HEAD (or --commit). Licence CC BY 4.0 plus the Princeton WordNet licence;
the data card is judges/verifier/facts/WORDNET.md.

Rules (precise rather than permissive: a wrong relation can turn an unsupported claim "supported"):

* lemmas: one word (hyphens allowed), written in lower-case ASCII letters; no stop-words, filler,
  negation or quantifier words of judges.verifier.facts.lexicon; at least 3 letters. Capitalised
  lemmas (proper names, acronyms, nationalities) are left out rather than lower-cased, which
  would merge "March"/"march", "AIDS"/"aids".
* senses: per lemma and part of speech only the first two. The YAML lists an entry's senses in
  sense order (scripts/from_yaml.py numbers them by list position); a lemma split into homograph
  entries ("n-1", "n-2") is ordered across them by src/sense-orders.csv.
* relations, each through a first-two sense at *both* ends: members of the same synset
  (synonyms); a `pertainym` or `derivation` sense relation; for nouns, a direct hypernym (one level).
* never related: any pair that WordNet calls antonyms in any sense, or that the verifier's own
  lexicon puts on opposite sides (direction words, negative/positive states).
* a lemma with more than MAX_RELATED related words is too ambiguous and is dropped; symmetric.

Output: gzip (mtime 0, no file name) of a "#" header line and one line per lemma,
``lemma<TAB>rel1 rel2 ...``, lemmas and relations sorted.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import io
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from judges.verifier.facts import lexicon

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "judges" / "verifier" / "facts" / "wordnet_relations.tsv.gz"
REPO = "globalwordnet+english-wordnet"

SENSES_PER_POS = 2
MAX_RELATED = 40
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
EXCLUDED = (
    lexicon.STOPWORDS | lexicon._FILLER | lexicon._NEGATIONS | lexicon._UNIVERSAL | lexicon._PARTIAL
)

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def _load(repo: Path, commit: str, path: str) -> Any:
    return yaml.load(_git(repo, "show", f"{commit}:{path}"), Loader=_Loader)


def _ok(word: str) -> bool:
    return len(word) > 2 and WORD.fullmatch(word) is not None and word not in EXCLUDED


def _opposed(a: str, b: str) -> bool:
    """The verifier's lexicon already reads a and b as opposites."""
    da, db = lexicon._DIRECTION_WORDS.get(a), lexicon._DIRECTION_WORDS.get(b)
    if da and db and da[0] == db[0] and da[1] != db[1]:
        return True
    neg, pos = lexicon._NEGATIVE_STATES, lexicon._POSITIVE_STATES
    return (a in neg and b in pos) or (a in pos and b in neg)


def build(repo: Path, commit: str) -> tuple[bytes, dict[str, int]]:
    names = _git(repo, "ls-tree", "-r", "--name-only", commit, "src/yaml").decode().split()
    entries: dict[str, Any] = {}
    synsets: dict[str, Any] = {}
    for name in sorted(names):
        if name.endswith("frames.yaml"):
            continue
        data = _load(repo, commit, name)
        (entries if name.rsplit("/", 1)[-1].startswith("entries-") else synsets).update(data)

    orders: dict[tuple[str, str], list[str]] = {}
    for line in _git(repo, "show", f"{commit}:src/sense-orders.csv").decode().splitlines():
        lemma, pos, offsets = line.split(",", 2)
        orders[(lemma, pos)] = offsets.split()

    sense_lemma: dict[str, str] = {}  # sense id -> lemma, every sense
    top_senses: set[str] = set()  # sense ids among their lemma's first senses of that part of speech
    top_synsets: set[tuple[str, str]] = set()  # (lemma, synset) through such a sense
    firsts: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for lemma, by_key in entries.items():
        by_pos: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for key, props in by_key.items():  # "n", "v", "a", "r"; homographs "n-1", "n-2"
            by_pos[key[0]].extend(props["sense"])
        for pos, senses in by_pos.items():
            if sum(1 for key in by_key if key[0] == pos) > 1 and (lemma, pos) in orders:
                rank = {offset: i for i, offset in enumerate(orders[(lemma, pos)])}
                senses = sorted(senses, key=lambda s: rank.get(s["synset"][:8], len(rank)))
            for i, sense in enumerate(senses):
                sense_lemma[sense["id"]] = lemma
                if i < SENSES_PER_POS:
                    top_senses.add(sense["id"])
                    top_synsets.add((lemma, sense["synset"]))
                    firsts[lemma].append(sense)

    antonyms: set[frozenset[str]] = set()
    for lemma, by_key in entries.items():
        for props in by_key.values():
            for sense in props["sense"]:
                for target in sense.get("antonym", []):
                    if target in sense_lemma:
                        antonyms.add(frozenset((lemma.lower(), sense_lemma[target].lower())))

    kinds: collections.Counter[str] = collections.Counter()
    pairs: set[frozenset[str]] = set()

    def add(a: str, b: str, kind: str) -> None:
        if a != b and _ok(a) and _ok(b):
            pair = frozenset((a, b))
            if pair not in pairs:
                kinds[kind] += 1
                pairs.add(pair)

    for lemma in sorted(firsts):
        if not _ok(lemma):
            continue
        for sense in firsts[lemma]:
            synset = synsets[sense["synset"]]
            for member in synset["members"]:
                if (member, sense["synset"]) in top_synsets:
                    add(lemma, member, "synonym")
            for rel in ("pertainym", "derivation"):
                for target in sense.get(rel, []):
                    if target in top_senses:
                        add(lemma, sense_lemma[target], rel)
            if synset["partOfSpeech"] == "n":
                for hyper in synset.get("hypernym", []):
                    for member in synsets[hyper]["members"]:
                        if (member, hyper) in top_synsets:
                            add(lemma, member, "hypernym")

    stats: dict[str, int] = {f"pairs_{k}": v for k, v in sorted(kinds.items())}
    stats["pairs_found"] = len(pairs)
    removed = {p for p in pairs if p in antonyms or _opposed(*sorted(p))}
    stats["antonym_pairs_removed"] = len(removed)
    pairs -= removed

    related: dict[str, set[str]] = collections.defaultdict(set)
    for pair in pairs:
        a, b = sorted(pair)
        related[a].add(b)
        related[b].add(a)
    ambiguous = {w for w, rel in related.items() if len(rel) > MAX_RELATED}
    stats["lemmas_dropped_ambiguous"] = len(ambiguous)
    table = {w: sorted(rel - ambiguous) for w, rel in related.items() if w not in ambiguous}
    table = {w: rel for w, rel in table.items() if rel}
    stats["lemmas"] = len(table)
    stats["pairs"] = sum(len(rel) for rel in table.values()) // 2

    header = (
        f"# Open English WordNet {commit} (github.com/globalwordnet/english-wordnet), CC BY 4.0 and the "
        f"Princeton WordNet licence; built by judges.verifier.training.build_wordnet_relations; "
        f"see judges/verifier/facts/WORDNET.md\n"
    )
    return _gzip(header, (f"{w}\t{' '.join(table[w])}\n" for w in sorted(table))), stats


def _gzip(header: str, lines: Iterable[str]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(header.encode())
        for line in lines:
            gz.write(line.encode())
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mirror", default="/work/.mirror", type=Path, help="folder holding the git snapshots <owner>+<name>/repo"
    )
    ap.add_argument("--commit", default="HEAD", help="commit of the Open English WordNet snapshot (default HEAD)")
    ap.add_argument("--out", default=OUT, type=Path)
    args = ap.parse_args()
    repo = args.mirror / REPO / "repo"
    commit = _git(repo, "rev-parse", f"{args.commit}^{{commit}}").decode().strip()
    data, stats = build(repo, commit)
    args.out.write_bytes(data)
    for key, value in stats.items():
        print(f"{key}: {value}", file=sys.stderr)
    print(f"commit: {commit}", file=sys.stderr)
    print(f"wrote {args.out} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})", file=sys.stderr)


if __name__ == "__main__":
    main()
