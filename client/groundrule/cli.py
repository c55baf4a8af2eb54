"""The `groundrule` command: policies as code (docs/policies-as-code.md).

    groundrule policies pull DIR
    groundrule policies plan DIR [--prune] [--replay-days N] [--json]
    groundrule policies apply DIR [--prune] [--replay-days N] [--yes]

The server is --url / GROUNDRULE_URL, the key --key / GROUNDRULE_API_KEY (plan needs the read scope,
apply the admin scope). Exit codes: plan 0 when nothing would change, 2 when something would;
apply 0 when applied (or nothing to do); 1 for any error, which names the file and the field.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import httpx

from ._config import resolve_config
from ._version import __version__
from .errors import ConfigurationError
from .policy_files import (
    PolicyFile,
    PolicyFileError,
    dump,
    file_data,
    file_names,
    payload,
    policy_paths,
    read_directory,
    read_file,
    rule_orders,
)

OK, ERROR, CHANGES = 0, 1, 2
SYMBOLS = {"create": "+", "update": "~", "delete": "-", "unchanged": " "}
EXAMPLES_SHOWN = 3


class CommandError(Exception):
    """A failure to report on stderr (already worded for the user) and exit 1."""


class Api:
    def __init__(self, url: str | None, key: str | None, timeout: float):
        try:
            config = resolve_config(
                base_url=url,
                api_key=key,
                timeout=timeout,
                fail_open=False,
                max_retries=0,
                backoff_base=0,
                backoff_max=0,
            )
        except ConfigurationError as error:
            text = str(error).replace("pass base_url=...", "pass --url").replace("pass api_key=...", "pass --key")
            raise CommandError(text) from None
        self.root = config.api_root
        self.http = httpx.Client(
            base_url=config.api_root + "/",
            timeout=config.timeout,
            headers={"Authorization": f"Bearer {config.api_key}", "User-Agent": f"groundrule-cli/{__version__}"},
        )

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError as error:
            raise CommandError(f"Cannot reach {self.root}: {error}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code in (401, 403, 404, 413) or response.status_code >= 500 or data is None:
            detail = data.get("detail") if isinstance(data, dict) else None
            status = response.status_code
            raise CommandError(f"{method} {self.root}/{path}: HTTP {status}: {detail or response.text[:200]}")
        return response.status_code, data


def _files_by_index(files: list[PolicyFile]) -> dict[int, PolicyFile]:
    return dict(enumerate(files))


def _refusal(data: Any, files: list[PolicyFile]) -> str:
    """A 400's body as lines naming each file, line and field."""
    lines = []
    if not isinstance(data, dict):
        return f"Refused: {data}"
    by_index = _files_by_index(files)
    for key, problems in data.items():
        if key == "policies" and isinstance(problems, list):
            for problem in problems:
                if not isinstance(problem, dict):
                    lines.append(f"policies: {problem}")
                    continue
                file = by_index.get(problem.get("index", -1))
                where = file.where(problem["field"]) if file else f"policy {problem.get('index')}"
                message = problem["message"]
                other = by_index.get(problem.get("duplicate_of", -1))
                if other is not None:
                    message = f"{other.path} names the same policy."
                lines.append(f"{where}: {problem['field']}: {message}")
        else:
            lines.append(f"{key}: {json.dumps(problems, ensure_ascii=False)}")
    return "\n".join(lines)


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _transitions(impact: dict[str, Any]) -> str:
    return ", ".join(f"{k.replace('→', ' → ')} {v}" for k, v in impact["transitions"].items()) or "none"


def render_plan(plan: dict[str, Any], files: list[PolicyFile], out: TextIO) -> None:
    by_index = _files_by_index(files)
    counts = plan["changes"]
    out.write(
        f"Plan: {counts['create']} to create, {counts['update']} to update, {counts['delete']} to delete, "
        f"{counts['unchanged']} unchanged.\n"
    )
    for policy in plan["policies"]:
        if policy["action"] == "unchanged":
            continue
        file = by_index.get(policy["index"]) if policy["index"] is not None else None
        version = policy["current_version"]
        label = {
            "create": "create",
            "update": f"update (v{version} → v{(version or 0) + 1})",
            "delete": f"delete (v{version})",
        }[policy["action"]]
        out.write(f"\n{SYMBOLS[policy['action']]} {policy['name']}: {label}{f'  [{file.path}]' if file else ''}\n")
        for row in policy["diff"]:
            before = _show(row["before"]) + (" (default)" if row.get("before_default") else "")
            after = _show(row["after"]) + (" (default)" if row.get("after_default") else "")
            change = after if policy["action"] == "create" else f"{before} → {after}"
            out.write(f"    {row['field']}: {change}\n")
        impact = policy.get("impact")
        if impact is not None:
            out.write(
                f"    would have changed {impact['changed_decisions']} of {impact['decisions']} decisions "
                f"({impact['changed_runs']} runs): {_transitions(impact)}\n"
            )
            for example in impact["examples"][:EXAMPLES_SHOWN]:
                out.write(
                    f"      run {example['run_id']} {example['phase']}: {example['before']} → {example['after']}"
                    f" ({example['reason']})\n"
                )
    replay = plan.get("replay")
    if replay is None:
        return
    sampled = f", the latest {replay['reports']} of {replay['reports_in_window']} reports" if replay["sampled"] else ""
    out.write(
        f"\nImpact over the last {replay['days']} days ({replay['runs']} runs, {replay['reports']} reports, "
        f"{replay['decisions']} decisions{sampled}):\n\n"
    )
    rows = [(p["name"], p["action"], p["impact"]) for p in plan["policies"] if p.get("impact") is not None]
    if len(rows) > 1 and plan.get("impact") is not None:
        rows.append(("(all changes together)", "", plan["impact"]))
    header = ("policy", "change", "decisions changed", "from → to")
    table = [header] + [
        (name, action, str(impact["changed_decisions"]), _transitions(impact)) for name, action, impact in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        out.write(f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}\n")


def _plan(api: Api, files: list[PolicyFile], prune: bool, days: int) -> dict[str, Any]:
    status, data = api.call("POST", "policies/plan/", {"policies": payload(files), "prune": prune, "replay_days": days})
    if status == 400:
        raise CommandError(_refusal(data, files))
    if status != 200:
        raise CommandError(f"plan: HTTP {status}: {data}")
    plan: dict[str, Any] = data
    return plan


def cmd_pull(api: Api, args: argparse.Namespace, out: TextIO) -> int:
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    policies: list[dict[str, Any]] = []
    path: str | None = "policies/?page_size=100"
    while path:
        _, data = api.call("GET", path)
        policies += data["results"]
        path = data.get("next")
        if path and path.startswith(api.root + "/"):
            path = path[len(api.root) + 1 :]
    taken: dict[str, Path] = {}
    for existing in policy_paths(directory):
        try:
            name = read_file(existing).data.get("name")
        except PolicyFileError:
            continue
        if isinstance(name, str) and name not in taken:
            taken[name] = existing
    names = file_names(sorted((p["name"] for p in policies), key=str.lower), taken)
    _, schema = api.call("GET", "schema/policy-file.json")
    orders = rule_orders(schema)
    for policy in policies:
        data = file_data(policy, orders.get(policy["category"]))
        (directory / names[policy["name"]]).write_text(dump(data), encoding="utf-8")
    out.write(f"Wrote {len(policies)} policy file{'s' if len(policies) != 1 else ''} to {directory}.\n")
    pulled = {names[p["name"]] for p in policies}
    for stale in policy_paths(directory):
        if stale.name not in pulled:
            out.write(f"  {stale} names no policy on the server (left as it is).\n")
    return OK


def cmd_plan(api: Api, args: argparse.Namespace, out: TextIO) -> int:
    files = read_directory(Path(args.dir))
    plan = _plan(api, files, args.prune, args.replay_days)
    if args.json:
        by_index = _files_by_index(files)
        for policy in plan["policies"]:
            file = by_index.get(policy["index"]) if policy["index"] is not None else None
            policy["file"] = str(file.path) if file else None
        out.write(json.dumps(plan, indent=2, ensure_ascii=False) + "\n")
    else:
        render_plan(plan, files, out)
    return CHANGES if plan["changed"] else OK


def cmd_apply(api: Api, args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    files = read_directory(Path(args.dir))
    plan = _plan(api, files, args.prune, args.replay_days)
    render_plan(plan, files, out)
    if not plan["changed"]:
        # Still applied: policies whose files match become managed by code (no version, no change).
        if any(not p["managed_by_code"] for p in plan["policies"] if p["action"] == "unchanged"):
            _apply(api, files, args.prune, plan)
        out.write("\nNothing to apply.\n")
        return OK
    if not args.yes:
        if not stdin.isatty():
            raise CommandError("Not applied: confirm with --yes (standard input is not a terminal).")
        out.write("\nApply these changes? Only 'yes' applies: ")
        out.flush()
        if stdin.readline().strip() != "yes":
            out.write("Not applied.\n")
            return ERROR
    result = _apply(api, files, args.prune, plan)
    counts = result["changes"]
    out.write(
        f"\nApplied: {counts['create']} created, {counts['update']} updated, {counts['delete']} deleted, "
        f"{counts['unchanged']} unchanged.\n"
    )
    return OK


def _apply(api: Api, files: list[PolicyFile], prune: bool, plan: dict[str, Any]) -> dict[str, Any]:
    body = {"policies": payload(files), "prune": prune, "expected_versions": plan["expected_versions"]}
    status, data = api.call("POST", "policies/apply/", body)
    if status == 400:
        raise CommandError(_refusal(data, files))
    if status == 409:
        moved = ", ".join(
            f"{m['name']} (planned at {_version(m['expected_version'])}, now {_version(m['current_version'])})"
            for m in data.get("policies", [])
        )
        raise CommandError(f"{data.get('detail')}\n  {moved}" if moved else str(data.get("detail")))
    if status != 200:
        raise CommandError(f"apply: HTTP {status}: {data}")
    result: dict[str, Any] = data
    return result


def _version(version: int | None) -> str:
    return "no such policy" if version is None else f"v{version}"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="groundrule", description="Groundrule from the command line.")
    top.add_argument("--url", help="the server (default: $GROUNDRULE_URL)")
    top.add_argument("--key", help="an API key (default: $GROUNDRULE_API_KEY)")
    top.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    top.add_argument("--version", action="version", version=f"groundrule {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    policies = commands.add_parser("policies", help="policies as code: pull, plan, apply")
    verbs = policies.add_subparsers(dest="verb", required=True)
    pull = verbs.add_parser("pull", help="write the tenant's policies as files, one per policy")
    pull.add_argument("dir")
    for name, text in (("plan", "what applying DIR would change"), ("apply", "apply DIR, all or nothing")):
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("dir")
        verb.add_argument("--prune", action="store_true", help="delete the policies no file names")
        verb.add_argument("--replay-days", type=int, default=7, help="days of past runs to replay (0: none)")
        if name == "plan":
            verb.add_argument("--json", action="store_true", help="the plan as JSON")
        else:
            verb.add_argument("--yes", action="store_true", help="apply without asking")
    return top


def main(argv: list[str] | None = None, *, out: TextIO | None = None, stdin: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parser().parse_args(argv)
    try:
        api = Api(args.url, args.key, args.timeout)
        if args.verb == "pull":
            return cmd_pull(api, args, out)
        if args.verb == "plan":
            return cmd_plan(api, args, out)
        return cmd_apply(api, args, out, stdin or sys.stdin)
    except PolicyFileError as error:
        sys.stderr.write("\n".join(error.problems) + "\n")
    except CommandError as error:
        sys.stderr.write(f"{error}\n")
    return ERROR


if __name__ == "__main__":
    sys.exit(main())
