"""Policy files: one YAML file per policy, as `groundrule policies pull` writes them and `plan` /
`apply` read them (docs/policies-as-code.md).

Only the file side lives here (names, key order, YAML, where in a file a field is); what a policy
may hold is the server's to say: it validates files with the same checks as its policy API and
answers with the file's position and the field, which ``locate`` turns back into a file and line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# A file's keys, in the order a pulled file lists them.
FILE_KEYS = ("name", "description", "category", "mode", "enabled", "scope", "rules")
SUFFIXES = (".yaml", ".yml")


class PolicyFileError(Exception):
    """Files that cannot be sent: each problem already names its file (and line, when known)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class PolicyFile:
    path: Path
    data: dict[str, Any]
    # Dotted field path ("rules.min_grounding_score") -> line number (1-based) of its key.
    lines: dict[str, int] = field(default_factory=dict)

    def where(self, field_path: str) -> str:
        """``path:line`` of the field, or of its nearest parent the file has; the path alone if none."""
        parts = field_path.split(".")
        while parts:
            line = self.lines.get(".".join(parts))
            if line is not None:
                return f"{self.path}:{line}"
            parts.pop()
        return str(self.path)


def slugify(name: str) -> str:
    """A stable file name stem for a policy name: "Strict Research (v2)" -> "strict-research-v2"."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return text[:80].strip("-") or "policy"


def rule_orders(schema: dict[str, Any]) -> dict[str, list[str]]:
    """{category: its rule names in the server's order}, from the policy-file JSON Schema."""
    orders: dict[str, list[str]] = {}
    for branch in schema.get("allOf") or []:
        try:
            category = branch["if"]["properties"]["category"]["const"]
            rules = branch["then"]["properties"]["rules"]["anyOf"][0]["properties"]
        except (KeyError, IndexError, TypeError):
            continue
        orders[category] = list(rules)
    return orders


def ordered_rules(rules: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """The rules in the category's order (the dashboard's), any others after them by name: the
    server's JSON column may give them back in another order, and a pulled file must not churn."""
    known = [name for name in order if name in rules]
    return {name: rules[name] for name in known + sorted(set(rules) - set(known))}


def file_data(policy: dict[str, Any], order: list[str] | None = None) -> dict[str, Any]:
    """A policy as the API gives it, as its file holds it: the rules it sets (not the defaults),
    keys in FILE_KEYS order, rules in ``order``."""
    scope = policy.get("scope") or {}
    data = {
        "name": policy["name"],
        "description": policy.get("description") or "",
        "category": policy["category"],
        "mode": policy.get("mode", "enforce"),
        "enabled": policy.get("enabled", True),
        "scope": {"agents": list(scope.get("agents") or [])},
        "rules": ordered_rules(dict(policy.get("rules") or {}), order or []),
    }
    return {key: data[key] for key in FILE_KEYS}


def dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)


def file_names(names: list[str], taken: dict[str, Path]) -> dict[str, str]:
    """{policy name: file name}: the file already holding the policy where there is one (``taken``),
    else its slug, made unique with -2, -3, ... in the order given."""
    used = {path.name for path in taken.values()}
    out: dict[str, str] = {}
    for name in names:
        if name in taken:
            out[name] = taken[name].name
            continue
        stem, n = slugify(name), 1
        candidate = f"{stem}.yaml"
        while candidate in used:
            n += 1
            candidate = f"{stem}-{n}.yaml"
        used.add(candidate)
        out[name] = candidate
    return out


def _lines(node: yaml.Node, prefix: str = "", duplicates: list[tuple[str, int]] | None = None) -> dict[str, int]:
    """{dotted path: line of its key}; a key given twice in one mapping goes to ``duplicates``
    (YAML loaders keep the last one silently, which would hide an edit)."""
    found: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                path = f"{prefix}.{key.value}" if prefix else str(key.value)
                if path in found and duplicates is not None:
                    duplicates.append((path, key.start_mark.line + 1))
                found[path] = key.start_mark.line + 1
                found.update(_lines(value, path, duplicates))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            path = f"{prefix}.{index}" if prefix else str(index)
            found[path] = item.start_mark.line + 1
            found.update(_lines(item, path, duplicates))
    return found


def _not_json(value: Any, path: str) -> str | None:
    """The first value JSON cannot carry (YAML reads 2026-01-01 as a date, for one)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}.{key}" if path else str(key)
            problem = _not_json(item, f"{path}.{key}" if path else key)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _not_json(item, f"{path}.{index}")
            if problem:
                return problem
        return None
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    return path or "(top level)"


def read_file(path: Path) -> PolicyFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyFileError([f"{path}: cannot read: {error}"]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise PolicyFileError([f"{where}: invalid YAML: {error.problem or error.context}"]) from None
    except yaml.YAMLError as error:
        raise PolicyFileError([f"{path}: invalid YAML: {error}"]) from None
    if not isinstance(data, dict):
        raise PolicyFileError([f"{path}: must be a mapping of policy fields (name, category, rules, ...)."])
    duplicates: list[tuple[str, int]] = []
    policy = PolicyFile(path, data, _lines(node, "", duplicates) if node is not None else {})
    if duplicates:
        raise PolicyFileError([f"{path}:{line}: {key}: given twice." for key, line in duplicates])
    bad = _not_json(data, "")
    if bad:
        raise PolicyFileError([f"{policy.where(bad)}: {bad}: not a string, number, true/false or null."])
    return policy


def policy_paths(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and p.is_file())


def read_directory(directory: Path) -> list[PolicyFile]:
    """Every policy file of the directory, in file name order; every file's problems at once."""
    if not directory.is_dir():
        raise PolicyFileError([f"{directory}: no such directory."])
    files, problems = [], []
    for path in policy_paths(directory):
        try:
            files.append(read_file(path))
        except PolicyFileError as error:
            problems += error.problems
    if problems:
        raise PolicyFileError(problems)
    return files


def payload(files: list[PolicyFile]) -> list[dict[str, Any]]:
    # Through JSON once, so what is sent is exactly what the server will read.
    return [json.loads(json.dumps(f.data)) for f in files]
