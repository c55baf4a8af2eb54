"""The learned decision of the default path: a multinomial logistic regression over the
features :mod:`judges.verifier.evidence` computes, giving calibrated probabilities of
``supported`` / ``contradicted`` / ``unverifiable``.

The weights live in ``combiner.json`` beside this file (a few kilobytes, shipped in the
package); ``python -m verifier_lab.fit_combiner`` refits them on the fitting half
of verifier_lab/data/devset.jsonl. Only numpy is needed at run time.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("combiner.json")
CLASSES = ("supported", "contradicted", "unverifiable")


@dataclass(frozen=True)
class Combiner:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray
    classes: tuple[str, ...]
    temperature: float = 1.0

    @classmethod
    def from_dict(cls, d: dict) -> Combiner:
        return cls(
            tuple(d["features"]),
            np.asarray(d["mean"], dtype=np.float64),
            np.asarray(d["scale"], dtype=np.float64),
            np.asarray(d["coef"], dtype=np.float64),
            np.asarray(d["intercept"], dtype=np.float64),
            tuple(d["classes"]),
            float(d.get("temperature", 1.0)),
        )

    def vector(self, features: dict[str, float]) -> np.ndarray:
        return np.array([float(features.get(name, 0.0)) for name in self.features], dtype=np.float64)

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """Probabilities, one row per feature vector, columns in ``CLASSES`` order."""
        x = (np.atleast_2d(rows) - self.mean) / self.scale
        logits = (x @ self.coef.T + self.intercept) / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        order = [self.classes.index(c) for c in CLASSES]
        return p[:, order]

    def probabilities(self, features: dict[str, float]) -> dict[str, float]:
        p = self.predict(self.vector(features))[0]
        return {c: float(p[i]) for i, c in enumerate(CLASSES)}


_lock = threading.Lock()
_cached: dict[str, Combiner] = {}


def get_combiner(path: str | Path | None = None) -> Combiner:
    """The process-wide combiner (loaded once; ``path`` picks another weights file)."""
    key = str(path or WEIGHTS)
    with _lock:
        if key not in _cached:
            _cached[key] = Combiner.from_dict(json.loads(Path(key).read_text(encoding="utf-8")))
        return _cached[key]
