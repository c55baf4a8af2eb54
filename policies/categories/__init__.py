"""The category registry: one Category instance per name. Only grounding for now."""

from __future__ import annotations

from .base import Category, RuleSpec, RuleValidationError
from .grounding import GroundingCategory

__all__ = [
    "CATEGORIES",
    "Category",
    "RuleSpec",
    "RuleValidationError",
    "UnknownCategory",
    "get_category",
    "register",
]


class UnknownCategory(KeyError):
    def __init__(self, name):
        self.name = name
        super().__init__(name)

    def __str__(self):
        return f"Unknown category: {self.name!r}"


CATEGORIES: dict[str, Category] = {}


def register(category: Category) -> Category:
    CATEGORIES[category.name] = category
    return category


def get_category(name: str) -> Category:
    try:
        return CATEGORIES[name]
    except (KeyError, TypeError):
        raise UnknownCategory(name) from None


register(GroundingCategory())
