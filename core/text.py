"""The one check for text the database can store: no NUL, nothing UTF-8 cannot encode.

PostgreSQL refuses both (text and jsonb cannot hold U+0000; text must be UTF-8, and a lone
surrogate such as "\\ud800" from a JSON escape is not). Caught late they are a server error; every
validator, API field or engine rule, asks here so the answer and its wording are the same.
Pure Python: the engine (policies.categories) uses it too.
"""

NUL_MESSAGE = "Must not contain null characters."
UNICODE_MESSAGE = "Must be valid Unicode text."


def text_problem_code(value: str) -> str | None:
    """``"nul"``, ``"unicode"`` or None: why the database would refuse ``value``."""
    if "\x00" in value:
        return "nul"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "unicode"
    return None


TEXT_MESSAGES = {"nul": NUL_MESSAGE, "unicode": UNICODE_MESSAGE}


def text_problem(value: str) -> str | None:
    """The message for what is wrong with ``value`` as stored text, or None if it is fine."""
    code = text_problem_code(value)
    return TEXT_MESSAGES[code] if code else None
