"""The process-wide embedder's vector cache (judges/verifier/embedder.py): a cached vector is the
one the model gives, the cache is bounded, and only the process-wide embedder has one.
Pure: no database, no Django."""

import numpy as np
import pytest

from judges.verifier.embedder import CACHE_SIZE, Embedder, get_embedder

SENTENCES = [
    "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023.",
    "The IMF projected global growth of 2.8 percent for 2023.",
    "Rates went up.",
    "A much longer sentence about something else entirely, with many words in it, pads the batch out.",
]


@pytest.fixture(scope="module")
def uncached() -> Embedder:
    return Embedder()


def test_a_vector_does_not_depend_on_its_batch(uncached):
    # What makes caching exact: the same text alone and padded beside longer ones.
    alone = np.stack([uncached.encode([text])[0] for text in SENTENCES])
    together = uncached.encode(SENTENCES)
    np.testing.assert_array_equal(alone, together)


def test_the_packaged_graph_scales_a_batch_together_so_texts_run_alone():
    # Why Embedder.max_batch is 1: padded into one run, a text's vector moves with its neighbours.
    batched = Embedder(max_batch=len(SENTENCES)).encode(SENTENCES)
    alone = np.stack([Embedder().encode([text])[0] for text in SENTENCES])
    assert not np.array_equal(batched, alone)
    assert float(np.min(np.sum(batched * alone, axis=1))) > 0.9  # the same sentences, nearly


def test_cached_vectors_equal_the_models_and_skip_it(uncached):
    cached = Embedder(cache_size=8)
    first = cached.encode(SENTENCES[:2])
    runs, hits = cached.runs, cached.cache_hits
    # Two known texts, one new one, and a repeat inside the call: one run, for the new text only.
    again = cached.encode([SENTENCES[1], SENTENCES[2], SENTENCES[0], SENTENCES[2]])
    assert cached.runs == runs + 1
    assert cached.cache_hits == hits + 2
    np.testing.assert_array_equal(again, uncached.encode([SENTENCES[1], SENTENCES[2], SENTENCES[0], SENTENCES[2]]))
    np.testing.assert_array_equal(first, again[[2, 0]])
    runs = cached.runs
    cached.encode(SENTENCES[:3])
    assert cached.runs == runs  # everything known: no model run at all


def test_the_cache_is_bounded_least_recently_used_first_out():
    cached = Embedder(cache_size=2)
    cached.encode(SENTENCES[:2])
    cached.encode([SENTENCES[0]])  # SENTENCES[0] is now the most recently used
    cached.encode([SENTENCES[2]])  # evicts SENTENCES[1]
    runs = cached.runs
    cached.encode([SENTENCES[0], SENTENCES[2]])
    assert cached.runs == runs
    cached.encode([SENTENCES[1]])
    assert cached.runs == runs + 1
    assert len(cached._cache) == 2


def test_a_long_text_is_kept_under_its_digest_and_still_exact(uncached):
    cached = Embedder(cache_size=4)
    long_a = "The committee met in Geneva to discuss the budget. " * 20  # over CACHE_KEY_CHARS
    long_b = long_a + "Its decision was postponed."
    first = cached.encode([long_a, long_b])
    runs = cached.runs
    again = cached.encode([long_b, long_a])
    assert cached.runs == runs
    np.testing.assert_array_equal(again, first[[1, 0]])
    np.testing.assert_array_equal(again, uncached.encode([long_b, long_a]))
    assert all(isinstance(key, bytes) and len(key) == 16 for key in cached._cache)


def test_only_the_process_wide_embedder_caches(uncached):
    runs = uncached.runs
    uncached.encode(SENTENCES[:1])
    uncached.encode(SENTENCES[:1])
    assert uncached.runs == runs + 2 and uncached.cache_hits == 0
    assert get_embedder().cache_size == CACHE_SIZE > 0
