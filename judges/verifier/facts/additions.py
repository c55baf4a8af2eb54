"""What a claim adds to its sources, as missing facts (docs/verifier.md, "How a verdict is made",
step 2): an item appended to a list of the source, a doer after "by" that the sources never name."""

from __future__ import annotations

from .analysis import Analysis
from .fact import Fact


def added_items(claim: Analysis, span: Analysis, doc: Analysis) -> list[Fact]:
    """What the claim adds, as missing facts: an item appended to a list the span gives
    ("children" in "approved for adults and children" against "approved for adults"), or the doer
    after "by" of which the sources state no word. A paraphrase rewords; it does not append."""
    out: list[Fact] = []
    tokens = claim.tokens
    content = dict(claim.content)  # token index -> content word
    for i in range(1, len(tokens) - 1):
        if tokens[i].low not in ("and", "or"):
            continue
        first, added = content.get(i - 1), content.get(i + 1)
        if first is None or added is None:
            continue
        # the added item closes the list ("adults and children." / "adults and children, …")
        closes = i + 2 >= len(tokens) or tokens[i + 2].kind == "sym"
        if closes and span.states(first) and not doc.states(added):
            tok = tokens[i + 1]
            out.append(Fact("entity", added, tok.text, tok.start, tok.end, dim="item", tokens=(i + 1,)))
    # who or what did it, when the sources name no part of it: "founded in 1901 by a group of
    # local artists" against "founded in 1901"
    for i, t in enumerate(tokens[:-1]):
        if t.low != "by":
            continue
        agent = []
        for k in range(i + 1, min(len(tokens), i + 7)):
            if tokens[k].low in _AGENT_ENDS or tokens[k].kind == "sym":
                break
            if k in content:
                agent.append(k)
        if agent and not any(doc.states(content[k]) for k in agent):
            a, b = tokens[agent[0]].start, tokens[agent[-1]].end
            text = claim.text[a:b]
            out.append(Fact("entity", text.lower(), text, a, b, dim="item", tokens=tuple(agent)))
    return out


#: Words that end the phrase after "by".
_AGENT_ENDS = frozenset("and or but which who that while in on at for to from since until".split())
