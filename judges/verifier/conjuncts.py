"""The parts of a claim that says two things of one subject ("The train runs every 10 minutes and
is fully electric"): each part is checked on its own and the claim holds only when every part
does (docs/verifier.md, "How a verdict is made", step 0).

Checked whole, such a claim borrows the support of its first half: the sources' sentence about the
train's frequency covers most of its words, and the unstated "fully electric" is a small share of
them. No tagger ships with the package, so what reads as a verb is decided by its form: an
auxiliary, a past form in "-ed", or a word in "-s" followed by what opens an object, or, after a
first verb in the present tense, by a word that is no preposition and no verb ("is open on weekdays
and accepts walk-in patients"). "sells shoes and bags in Paris", "has teachers and students from 40
countries" and "offers rooms and suites with sea views" stay whole. A second amount said as the
first was, its verb left out ("was 71% effective against infection and 85% effective against
hospitalisation"), is a part of its own with the first verb written again, and so is a clause
with a subject of its own after ", and" ("…, and the protection lasts for life").
"""

from __future__ import annotations

from .facts.lexicon import PREPOSITIONS, has_s_ending

_AUXILIARIES = frozenset("is was are were has have had can will does did cannot may must should would could".split())
#: A claim opening with one of these is a subordinate clause first: its subject is not the
#: subject of what follows "and".
_SUBORDINATORS = frozenset(
    "while although though if when whenever because unless since after before as once until whereas".split()
)
#: Words that open an object after a verb in "-s" ("circles the island", "runs every 10
#: minutes"), so that the "-s" word is a verb and not a plural noun. Prepositions are not among
#: them: a plural noun takes them as often ("students from 40 countries", "suites with a view").
_AFTER_VERB = frozenset(
    "a an the its their his her our your this that these those every all more most about around nearly almost".split()
)
_MAX_SUBJECT = 8
#: Most parts of one claim: the request's verifier budget (judges/budget.py) counts claims, so a
#: claim costs at most this many times what it did whole.
MAX_PARTS = 3
_CURRENCY_SIGNS = "$€£¥"
#: Plural nouns by their form ("facilities", "businesses", "meetings"), never a verb in "-s".
_NOUN_ENDINGS = ("ities", "nesses", "ings", "ments", "tions", "sions")
#: A first verb in the present tense, besides any in "-s".
_PRESENT = frozenset("is are has have does can will".split())
#: Verbs in the past that end in no "-ed" ("Abiy Ahmed won the prize …, and he was the first …").
_IRREGULAR_PAST = frozenset(
    "won took made gave became began held led lost ran sold built bought brought came went saw wrote grew "
    "rose fell found kept met paid told sent stood drew flew struck chose spoke broke".split()
)


def _bare(word: str) -> str:
    return word.strip(",;:()\"'“”‘’").lower()


def _first_verb(words: list[str], outside: list[bool]) -> int | None:
    """The index of the claim's first verb, outside parentheses and quotes: a word in "-s" right
    after "the" or "a" is the subject's noun ("The students from 40 countries attend …"), one after
    the noun may be followed by a preposition ("The bakery opens at 7 a.m.")."""
    for k in range(1, len(words)):
        if not outside[k]:
            continue
        if _verb(words, k):
            return k
        low = _bare(words[k])
        if (
            k + 1 < len(words)
            and len(low) >= 4
            and has_s_ending(low)
            and words[k][:1].islower()
            and _bare(words[k - 1]) not in ("the", "a", "an")
            and _bare(words[k + 1]) in PREPOSITIONS
        ):
            return k
    return None


def _verb(words: list[str], k: int, present: bool = False) -> bool:
    """Whether word ``k`` reads as a verb. ``present``: the claim's first verb is in the present
    tense, so a word in "-s" after "and" is its second verb before any object ("is open on
    weekdays and accepts walk-in patients"), unless it reads as a plural subject ("and
    facilities close", "and users can")."""
    w = words[k]
    low = _bare(w)
    if not low.isalpha() or not w[:1].islower() or not w.rstrip(",;:.").islower():
        return False  # a capital inside the word is a name ("macOS 12", "iPadOS 17"), not a verb
    if low in _AUXILIARIES or low in _IRREGULAR_PAST:
        return True
    if len(low) >= 5 and low.endswith("ed") and not low.endswith("eed"):
        return True
    if len(low) >= 4 and has_s_ending(low) and k + 1 < len(words):
        nxt = _bare(words[k + 1])
        if nxt in _AFTER_VERB or nxt[:1].isdigit() or words[k + 1][:1] in _CURRENCY_SIGNS:
            return True
        return (
            present
            and not w.endswith((",", ";", ":", "."))
            and not low.endswith(_NOUN_ENDINGS)
            and nxt[:1].isalpha()
            and nxt not in _AUXILIARIES
            and nxt not in PREPOSITIONS
            and not _verb(words, k + 1)
        )
    return False


#: Words that open a subject of its own after ", and" ("…, and the protection lasts for life").
_CLAUSE_OPENERS = frozenset(
    "the its their this these those it they he she we you his her our your all some most many there".split()
)


def _is_amount(word: str) -> bool:
    return word[:1].isdigit() or (word[:1] in _CURRENCY_SIGNS and word[1:2].isdigit())


def _parallel_amount(words: list[str], first: int, k: int) -> bool:
    """An "and" before a second amount said as the first was, its verb left out: "was 71%
    effective against infection and 85% effective against hospitalisation"."""
    if not _is_amount(words[k + 1]):
        return False
    after = _bare(words[k + 2])
    return any(_is_amount(words[j - 1]) and _bare(words[j]) == after for j in range(first + 2, k))


def claim_parts(claim: str) -> list[str]:
    """``claim`` split at each "and" that opens a second verb of its subject, the subject written
    again before each later part; ``[claim]`` when it says one thing."""
    words = claim.split()
    # words inside parentheses or quotes are an aside: no verb of the claim's subject
    outside: list[bool] = []
    depth, quoted = 0, False
    for w in words:
        opens = depth == 0 and not quoted
        depth = max(0, depth + w.count("(") - w.count(")"))
        quoted ^= w.count('"') % 2 == 1
        quoted = (quoted or "“" in w) and "”" not in w
        outside.append(opens and depth == 0 and not quoted)
    first = _first_verb(words, outside)
    if first is None or first > _MAX_SUBJECT or _bare(words[0]) in _SUBORDINATORS:
        return [claim]
    if any(_bare(w) in ("and", "or") for w in words[:first]):
        return [claim]  # a verb missed before it ("includes support and costs $10"): no subject
    subject = " ".join(words[:first])
    first_word = _bare(words[first])
    present = first_word in _PRESENT or (first_word.endswith("s") and first_word not in _AUXILIARIES)
    cuts: list[int] = []
    elliptic: set[int] = set()  # cuts whose part repeats the first verb too
    own: set[int] = set()  # cuts whose part has a subject of its own
    for k in range(first + 1, len(words) - 2):
        w = words[k]
        if (
            w == "and"
            and outside[k]
            and k - first >= 2
            and not words[k - 1].endswith((",", ";", ":"))
            and (not cuts or k - cuts[-1] >= 3)
            and len(cuts) < MAX_PARTS - 1
        ):
            if _verb(words, k + 1, present):
                cuts.append(k)
            elif _parallel_amount(words, first, k):
                cuts.append(k)
                elliptic.add(k)
        elif (
            w == "and"
            and outside[k]
            and words[k - 1].endswith(",")
            and _bare(words[k + 1]) in _CLAUSE_OPENERS
            and (not cuts or k - cuts[-1] >= 3)
            and len(cuts) < MAX_PARTS - 1
            and (verb := _first_verb(words[k + 1 :], outside[k + 1 :])) is not None
            and verb <= 3
        ):
            cuts.append(k)  # ", and the protection lasts for life": a clause with its own subject
            own.add(k)
    if not cuts:
        return [claim]
    last = claim.rstrip()[-1:]
    end = last if last and last in ".!" else "."
    parts = []
    starts = [0, *(k + 1 for k in cuts)]
    stops = [*cuts, len(words)]
    for n, (a, b) in enumerate(zip(starts, stops)):
        text = " ".join(words[a:b]).rstrip(",;")
        if n and a - 1 in elliptic:
            text = f"{subject} {words[first]} {text}"
        elif n and a - 1 in own:
            text = text[:1].upper() + text[1:]
        elif n:
            text = f"{subject} {text}"
        if text[-1:] not in ".!":
            text += end
        parts.append(text)
    return parts
