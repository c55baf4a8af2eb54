"""Estimated prices of the judge models, in US dollars per million tokens.

The numbers are list prices (standard tier, no batch or cache discounts) at the time of writing and
are only used to *estimate* what a judgement cost, for the dashboard and the audit trail. They are
deliberately easy to update: one row per model family. A model matches a row when its name equals the
row's prefix or continues it with ``-`` (``gpt-4o-mini-2024-07-18`` → ``gpt-4o-mini``); the longest
matching prefix wins (``gpt-4o-mini`` before ``gpt-4o``). An unknown model has no estimate (``None``),
never a guessed one.

Orders of magnitude for a typical judgement (~500 input + ~10 output tokens), as in docs/grounding-policies.md, "Cost":
gpt-4o-mini ≈ $0.0001, llama-3.1-8b-instant ≈ $0.00003 ("near-zero"), claude-sonnet-4-* ≈ $0.002.
"""

from __future__ import annotations

from typing import NamedTuple


class Price(NamedTuple):
    input_per_million: float
    output_per_million: float


# prefix -> (input $/1M tokens, output $/1M tokens)
PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1": Price(2.00, 8.00),
    # Anthropic
    "claude-sonnet-4": Price(3.00, 15.00),  # claude-sonnet-4-20250514, claude-sonnet-4-5, ...
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-haiku-4": Price(1.00, 5.00),  # claude-haiku-4-5, ...
    # Groq
    "llama-3.1-8b-instant": Price(0.05, 0.08),
    "llama-3.3-70b-versatile": Price(0.59, 0.79),
    "mixtral-8x7b-32768": Price(0.24, 0.24),
}


def price_for_model(model: str) -> Price | None:
    """The price row of ``model`` (longest matching prefix), or ``None`` when unknown."""
    if not isinstance(model, str) or not model:
        return None
    name = model.strip().lower()
    best: str | None = None
    for prefix in PRICES:
        if name == prefix or name.startswith(prefix + "-"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return PRICES[best] if best is not None else None


def estimate_cost(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """Estimated cost in USD of one call, or ``None`` when the model or the token counts are unknown."""
    price = price_for_model(model)
    if price is None or input_tokens is None or output_tokens is None:
        return None
    cost = (max(0, input_tokens) * price.input_per_million + max(0, output_tokens) * price.output_per_million) / 1e6
    return round(cost, 8)
