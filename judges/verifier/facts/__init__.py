"""Fact extraction and alignment (pure Python, no model).

``analyse`` (:mod:`.analysis`) turns a sentence into facts and alignment signals; the facts come
from one extractor module per kind (:mod:`.dates`, :mod:`.quantities`, :mod:`.entities`) over the
tokens of :mod:`.tokens` and the word tables of :mod:`.lexicon`. ``align`` (:mod:`.align`) compares
a claim with a source sentence, using :mod:`.compare` for how two facts relate.
"""

from .align import Alignment, Conflict, align, refers_back
from .analysis import Analysis, analyse, proper_vocabulary
from .compare import compare_quantities
from .entities import is_alias
from .fact import Fact
from .lexicon import WEEKDAY_NAMES, stem, words_match
from .quantities import parse_number
from .tokens import Token

__all__ = [
    "Fact",
    "Token",
    "Analysis",
    "Conflict",
    "Alignment",
    "analyse",
    "refers_back",
    "align",
    "proper_vocabulary",
    "parse_number",
    "stem",
    "words_match",
    "WEEKDAY_NAMES",
    "compare_quantities",
    "is_alias",
]
