"""The layers stay one-way (import-linter runs in `make test`), and no import hides in a function.

An import placed inside a function to dodge a cycle is still a cycle; import-linter sees it, but
the habit is what this test forbids: an app imports another app at module level or not at all.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "core", "outbox", "tenants", "policies", "judges", "webhooks", "governance", "otlp")


def _function_level_cross_app_imports(path: Path, app: str, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in APPS and top != app:
                    found.append(f"{path.relative_to(root)}:{node.lineno} imports {module} inside {func.name}()")
    return found


def test_no_cross_app_import_inside_a_function():
    offenders = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                offenders += _function_level_cross_app_imports(path, app)
    assert offenders == []


def test_the_check_sees_a_hidden_import(tmp_path):
    module = tmp_path / "sample.py"
    module.write_text("import tenants.models\n\n\ndef f():\n    from governance.models import Run\n    return Run\n")
    assert _function_level_cross_app_imports(module, "tenants", root=tmp_path) == [
        "sample.py:5 imports governance.models inside f()"
    ]
