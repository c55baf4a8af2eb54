"""docs/settings.md, generated from config/settings.py: every environment variable the settings read.

    python -m config.settings_doc            # print the page
    python -m config.settings_doc --write    # write docs/settings.md
    python -m config.settings_doc --check    # exit 1 when the settings and the page disagree

The settings module is parsed (never imported, so no key is needed) for `os.environ.get("NAME", …)`,
`os.environ["NAME"]`, `env_bool("NAME", …)` and `_allow_list("NAME")`. Each variable is described once,
in the comment block right above a statement that reads it:

    #: CONN_MAX_AGE: seconds a database connection is reused (`0` behind PgBouncer)
    #:   further lines of the same description are indented.
    conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),

The default shown is the one in the read; `#: NAME [shown default]: …` says it in words where the
code computes it (`SQLite in var/`).

A variable read but not described, a description with no read under it, and a committed page that
differs from the generated one are errors (tests/test_settings_doc.py).
"""

from __future__ import annotations

import argparse
import ast
import operator
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SETTINGS = Path(__file__).with_name("settings.py")
PAGE = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
REGENERATE = "python -m config.settings_doc --write"
DOC_LINE = re.compile(r"^\s*#:\s?(.*)$")
DOC_START = re.compile(r"^([A-Z][A-Z0-9_]*)(?:\s*\[([^\]]+)\])?:\s*(.*)$")

#: Read by the processes around Django rather than by config/settings.py: gunicorn, the image, the
#: compose file and the metrics exporter. Described here, as the generator cannot find them.
PROCESS_VARIABLES = (
    ("WEB_CONCURRENCY", "`4` (image)", "gunicorn worker processes per web container; about twice its cores"),
    (
        "GUNICORN_CMD_ARGS",
        "bind `0.0.0.0:8000`, gthread, 4 threads (image)",
        "further gunicorn options, e.g. `--timeout 60`",
    ),
    ("WORKER_CONCURRENCY", "`4` (compose)", "Celery worker processes per worker container"),
    (
        "PROMETHEUS_MULTIPROC_DIR",
        "empty",
        "a writable folder shared by a node's gunicorn workers, so `/metrics` adds up all of them "
        "(prometheus-client's multiprocess mode)",
    ),
    ("GROUNDRULE_DOMAIN", "required (compose)", "the public host name; Caddy gets its TLS certificate for it"),
    (
        "POSTGRES_PASSWORD",
        "required (compose)",
        "the database password compose gives PostgreSQL and puts into `DATABASE_URL`",
    ),
)


@dataclass
class Setting:
    name: str
    default: str
    line: int
    description: list[str] = field(default_factory=list)


class SettingsDocError(Exception):
    pass


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _constant(node: ast.expr):
    """A literal, or arithmetic on literals (32 * 1024 * 1024); anything else raises ValueError."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_constant(node.left), _constant(node.right))
    return ast.literal_eval(node)


def _default(node: ast.expr | None, source: str) -> str:
    if node is None:
        return "empty"
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "str" and len(node.args) == 1:
        node = node.args[0]  # str(400 * 1024): the number it spells
    try:
        value = _constant(node)
    except ValueError:
        return f"`{ast.get_source_segment(source, node)}`"
    if value in ("", None):
        return "empty"
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    return f"`{value}`"


# The settings' own helpers that read one variable named by their first argument, with the default shown
# when the call gives none.
HELPER_READS = {"env_bool": "`0`", "_allow_list": "empty"}


def _reads(tree: ast.AST, source: str) -> list[tuple[str, str, int]]:
    """(name, default, line) of every environment read whose name is a literal."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            is_get = (
                isinstance(func, ast.Attribute)
                and func.attr == "get"
                and ast.get_source_segment(source, func.value) == "os.environ"
            )
            helper = func.id if isinstance(func, ast.Name) and func.id in HELPER_READS else None
            if is_get or helper:
                default = node.args[1] if len(node.args) > 1 else None
                shown = _default(default, source)
                if helper and default is None:
                    shown = HELPER_READS[helper]
                found.append((node.args[0].value, shown, node.lineno))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and ast.get_source_segment(source, node.value) == "os.environ"
            and isinstance(node.slice, ast.Constant)
        ):
            found.append((node.slice.value, "empty", node.lineno))
    return sorted(found, key=lambda read: read[2])


def _innermost_statement(tree: ast.AST, line: int) -> ast.stmt:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    assert best is not None
    return best


def _doc_block(lines: list[str], first_line: int) -> dict[str, tuple[list[str], int, str | None]]:
    """The `#:` descriptions in the comment block right above line `first_line` (1-based)."""
    block: list[tuple[int, str]] = []
    index = first_line - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        block.insert(0, (index + 1, lines[index]))
        index -= 1
    docs: dict[str, tuple[list[str], int, str | None]] = {}
    current = None
    for number, text in block:
        match = DOC_LINE.match(text)
        if not match:
            current = None
            continue
        start = DOC_START.match(match.group(1).strip())
        if start:
            current = start.group(1)
            docs[current] = ([start.group(3)], number, start.group(2))
        elif current:
            docs[current][0].append(match.group(1).strip())
    return docs


def collect(path: Path = SETTINGS) -> list[Setting]:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    settings: dict[str, Setting] = {}
    attached: dict[int, set[str]] = {}  # a description's line -> the names read under it
    for name, default, line in _reads(tree, source):
        setting = settings.setdefault(name, Setting(name, default, line))
        statement = _innermost_statement(tree, line)
        for doc_name, (text, doc_line, shown_default) in _doc_block(lines, statement.lineno).items():
            attached.setdefault(doc_line, set())
            if doc_name == name:
                attached[doc_line].add(name)
                if setting.description and setting.description != text:
                    raise SettingsDocError(f"{path.name}:{doc_line}: {name} is described twice")
                setting.description = text
                if shown_default:
                    setting.default = shown_default
    errors = [
        f"{path.name}:{s.line}: {s.name} is read but not described: add `#: {s.name}: <what it does>` "
        "in the comment block right above the statement that reads it"
        for s in settings.values()
        if not s.description
    ]
    for number, text in enumerate(lines, start=1):
        match = DOC_LINE.match(text)
        start = match and DOC_START.match(match.group(1).strip())
        if start and not attached.get(number):
            errors.append(
                f"{path.name}:{number}: {start.group(1)} is described but the statement under the comment "
                "does not read it from the environment"
            )
    if errors:
        raise SettingsDocError("\n".join(errors))
    return list(settings.values())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(settings: list[Setting]) -> str:
    out = [
        "# Settings",
        "",
        "Groundrule is configured by environment variables only. This page is generated from",
        f"`config/settings.py` (`{REGENERATE}`); a test fails when it is out of date.",
        "",
        "With `DEBUG` off (the default) the server refuses to start without its own `SECRET_KEY` and",
        "`GOVERNANCE_SECRETS_KEY`; the development defaults below are for `make run` only.",
        "",
        "| variable | default | meaning |",
        "| --- | --- | --- |",
    ]
    for s in settings:
        out.append(f"| `{s.name}` | {_cell(s.default)} | {_cell(' '.join(s.description))} |")
    out += [
        "",
        "## Read by the processes around the server",
        "",
        "| variable | default | meaning |",
        "| --- | --- | --- |",
    ]
    for name, default, meaning in PROCESS_VARIABLES:
        out.append(f"| `{name}` | {_cell(default)} | {_cell(meaning)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write {PAGE.name}")
    action.add_argument("--check", action="store_true", help=f"exit 1 when {PAGE.name} is out of date")
    args = parser.parse_args(argv)
    try:
        page = render(collect())
    except SettingsDocError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.write:
        PAGE.write_text(page, encoding="utf-8")
    elif args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != page:
            print(f"docs/settings.md is out of date: run `{REGENERATE}`", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
