"""What a claim adds to its sources, as missing facts (docs/verifier.md, "How a verdict is made",
step 2): a part joined by "and" of which the sources state no word ("approved for adults and
children", "born in Dublin and studied medicine"), a doer after "by" that the sources never name
("founded by a group of local artists"). A paraphrase rewords what the source says; it does not
append a part that shares no word with it."""

from __future__ import annotations

from .analysis import Analysis
from .fact import Fact
from .lexicon import stem

#: Words that end a part: the next "and", a relative word, a preposition of time or place.
_PART_ENDS = frozenset("and or but which who that while".split())
#: ... and after "by", the prepositions that start another detail ("by artists in 1901").
_AGENT_ENDS = _PART_ENDS | frozenset("in on at for to from since until".split())


def _stated(word: str, an: Analysis) -> bool:
    return word in an.words or stem(word) in an.words


def added_items(claim: Analysis, doc: Analysis) -> list[Fact]:
    """Each part after "and" or "by" whose content words the sources (``doc``) nowhere state, as
    a missing fact named by its words."""
    out: list[Fact] = []
    tokens = claim.tokens
    content = dict(claim.content)  # token index -> content word
    for i, t in enumerate(tokens[:-1]):
        if t.low == "and":
            ends = _PART_ENDS
        elif t.low == "by":
            ends = _AGENT_ENDS
        else:
            continue
        part = []
        for k in range(i + 1, min(len(tokens), i + 9)):
            if tokens[k].low in ends or (tokens[k].kind == "sym" and tokens[k].text != "-"):
                break
            if k in content:
                part.append(k)
        if part and not any(_stated(content[k], doc) for k in part):
            a, b = tokens[part[0]].start, tokens[part[-1]].end
            text = claim.text[a:b]
            out.append(Fact("entity", text.lower(), text, a, b, dim="item", tokens=tuple(part)))
    return out
