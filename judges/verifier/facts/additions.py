"""What a claim adds to its sources, as missing facts (docs/verifier.md, "How a verdict is made",
step 2): an item appended to a list of the source, a doer after "by" that the sources never name."""

from __future__ import annotations

from .analysis import Analysis
from .fact import Fact
from .lexicon import has_s_ending


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
        first = content.get(i - 1)
        # the added item closes the list ("adults and children." / "free return shipping and free
        # next-day delivery."): its words up to the sentence's end or a comma, at most four
        k, item = i + 1, []
        while k < len(tokens) and tokens[k].kind != "sym" and k - i <= _ITEM_WORDS:
            if k in content:
                item.append(k)
            k += 1
        closes = k >= len(tokens) or tokens[k].kind == "sym"
        if first is None or not item or not closes or not span.states(first):
            continue
        if len(item) > 1 and has_s_ending(tokens[i + 1].low):
            continue  # a second verb ("is free and works offline"), a part of its own (conjuncts.py)
        before = {content[j] for j in range(max(0, i - _ITEM_WORDS), i) if j in content}
        new = [j for j in item if content[j] not in before]  # "free" of "free … and free …" is said
        if new and not any(doc.states(content[j]) for j in new):
            a, b = tokens[new[0]].start, tokens[new[-1]].end
            text = claim.text[a:b]
            out.append(Fact("entity", text.lower(), text, a, b, dim="item", tokens=tuple(new)))
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


#: The most words of an item appended to a list.
_ITEM_WORDS = 4
#: Words that end the phrase after "by".
_AGENT_ENDS = frozenset("and or but which who that while in on at for to from since until".split())
