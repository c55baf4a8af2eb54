"""The policy form, generated from a category's rule schema, and the list filters.

The form only turns what the browser sent into Python values (text into numbers, empty into
null); the rules themselves are judged by the category (``clean_rules``) inside the service, so the
dashboard and the API accept and refuse exactly the same policies and say so in the same words.
"""

import re
from dataclasses import dataclass
from typing import Any

from django import forms

from policies.categories import CATEGORIES, Category, RuleSpec

RULE_PREFIX = "rule_"
# An empty non-nullable rule means "use the default": it is simply not stored.
_OMIT: Any = object()


def rule_field_name(rule: str) -> str:
    return RULE_PREFIX + rule


def format_value(value) -> str:
    """A rule value as an admin would type it (and as the history and detail pages show it)."""
    if value is None:
        return "empty"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value == "":
        return '""'
    return str(value)


def _help(spec: RuleSpec) -> str:
    return f"{spec.help} Default: {format_value(spec.default)}."


def _number_attrs(spec: RuleSpec, step: str) -> dict:
    attrs = {"step": step, "inputmode": "decimal" if step != "1" else "numeric"}
    if spec.minimum is not None:
        attrs["min"] = spec.minimum
    if spec.maximum is not None:
        attrs["max"] = spec.maximum
    return attrs


def rule_form_field(spec: RuleSpec) -> forms.Field:
    """The input for one rule. Fields never validate on their own: the category does (see module doc)."""
    common = {"label": spec.label, "help_text": _help(spec), "required": False}
    placeholder = "empty" if spec.default is None else f"default {format_value(spec.default)}"
    if spec.type == "boolean":
        if spec.nullable:
            return forms.CharField(
                widget=forms.Select(choices=[("", "empty"), ("true", "Yes"), ("false", "No")]), **common
            )
        return forms.BooleanField(**common)
    if spec.type in ("number", "integer"):
        attrs = _number_attrs(spec, "1" if spec.type == "integer" else "0.01")
        attrs["placeholder"] = placeholder
        return forms.CharField(widget=forms.NumberInput(attrs=attrs), **common)
    if spec.type == "enum":
        choices = [(c, c) for c in spec.choices]
        if spec.nullable:
            choices.insert(0, ("", "empty"))
        return forms.CharField(widget=forms.Select(choices=choices), **common)
    attrs = {"placeholder": placeholder}
    if spec.max_length:
        attrs["maxlength"] = spec.max_length
    if spec.max_length and spec.max_length > 200:
        return forms.CharField(widget=forms.Textarea(attrs={**attrs, "rows": 2}), strip=False, **common)
    return forms.CharField(widget=forms.TextInput(attrs=attrs), strip=False, **common)


def rule_value(spec: RuleSpec, raw):
    """Text from the form → the rule's value, or _OMIT. Unparseable text is passed on as text,
    so the category reports it ("Must be a number between 0.0 and 1.0.")."""
    if spec.type == "boolean":
        if spec.nullable:
            return {"": None, "true": True, "false": False}.get(raw, raw)
        return bool(raw)
    text = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    if spec.type in ("number", "integer", "enum"):
        text = text.strip()
    if text == "":
        if spec.nullable:
            return None
        if spec.type == "string":
            return ""
        return _OMIT
    if spec.type == "integer":
        try:
            return int(text)
        except ValueError:
            return text
    if spec.type == "number":
        try:
            return float(text)
        except ValueError:
            return text
    return text


def rule_initial(spec: RuleSpec, value):
    if spec.type == "boolean" and not spec.nullable:
        return bool(value)
    if value is None:
        return ""
    if spec.type == "boolean":
        return "true" if value else "false"
    return value


def parse_agents(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"[,\n\r]+", text or "") if part.strip()]


# Presentation only: how the form and the detail page group a category's rules. A rule not named
# here lands in "Other rules", so a rule added to a category shows up without touching this file.
# factual_consistency_check stays in "Checks": it is the grounding contract's own rule
# (docs/grounding-policies.md), an after_workflow check of
# the answer like the ones beside it, and it works without turning the claim verifier on.
RULE_GROUPS: dict[str, tuple[str, ...]] = {
    "Checks": (
        "require_source_grounding",
        "min_grounding_score",
        "min_citations",
        "max_unsupported_claims",
        "factual_consistency_check",
    ),
    "On violation": ("action_on_violation", "abstention_threshold", "abstention_response"),
    "Citations": ("citation_quotes", "max_citations", "citations_must_resolve"),
    "Retrieval score filtering": ("score_relevance_floor", "score_eval_mode", "score_top_n"),
    "Context": ("context_mode", "canonical_when_available", "include_retrieved_text", "max_context_chars"),
    "Verifier": (
        "nli_check",
        "nli_phase",
        "entailment_threshold",
        "contradiction_threshold",
        "max_unverifiable_ratio",
        "contradiction_action",
        "unverifiable_action",
        "nli_escalation",
        "nli_escalation_model",
        "nli_escalation_max_claims",
    ),
    "Score audit": ("score_audit_rate", "score_audit_auditor", "max_score_inflation", "score_audit_min_samples"),
    "LLM judge": (
        "llm_grounding_check",
        "llm_grounding_model",
        "llm_grounding_threshold",
        "llm_grounding_criteria",
        "llm_grounding_phase",
    ),
}
OTHER_GROUP = "Other rules"
# Shown open; the others fold away unless a rule in them is set or has an error.
ALWAYS_OPEN = ("Checks", "On violation")
_GROUP_OF = {rule: group for group, rules in RULE_GROUPS.items() for rule in rules}


def rule_group(name: str) -> str:
    return _GROUP_OF.get(name, OTHER_GROUP)


def group_rules(items, name_of) -> list[tuple[str, list]]:
    """Items (specs, fields, rows) grouped and ordered as RULE_GROUPS lists them."""
    groups: dict[str, list] = {group: [] for group in (*RULE_GROUPS, OTHER_GROUP)}
    for item in items:
        groups[rule_group(name_of(item))].append(item)
    for group, members in groups.items():
        order = RULE_GROUPS.get(group)
        if order:
            members.sort(key=lambda item: order.index(name_of(item)))
    return [(group, members) for group, members in groups.items() if members]


@dataclass
class RuleGroup:
    name: str
    fields: list
    open: bool


class PolicyForm(forms.Form):
    name = forms.CharField(
        required=False,
        label="Name",
        strip=False,
        widget=forms.TextInput(attrs={"maxlength": 200, "autocomplete": "off"}),
    )
    description = forms.CharField(
        required=False, label="Description", strip=False, widget=forms.Textarea(attrs={"rows": 2, "maxlength": 5000})
    )
    agents = forms.CharField(
        required=False,
        label="Scope: agents",
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": "research-agent\nsupport-*", "spellcheck": "false", "autocomplete": "off"}
        ),
        help_text="Agent names or patterns such as research-*, separated by commas or new lines. "
        "Empty applies the policy to every agent.",
    )
    enabled = forms.BooleanField(
        required=False, label="Enabled", help_text="Disabled policies are kept but not evaluated."
    )
    mode = forms.ChoiceField(
        required=False,
        label="Mode",
        initial="enforce",
        choices=[("enforce", "Enforce"), ("shadow", "Shadow (evaluate and record, never enforce)")],
        help_text="Shadow runs the policy on every call and records what it would have done, "
        "without changing any decision: a safe way to try a change on live traffic.",
    )

    # Service error keys → form fields (the rest become non-field errors).
    SERVICE_FIELDS = {
        "name": "name",
        "description": "description",
        "enabled": "enabled",
        "mode": "mode",
        "scope": "agents",
        "scope.agents": "agents",
    }

    def __init__(self, *args, category: Category, explicit_rules=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.category = category
        # Rules the policy sets explicitly: kept even when equal to the default.
        self.explicit_rules = set(explicit_rules)
        self.specs = {rule_field_name(spec.name): spec for spec in category.rules}
        for field_name, spec in self.specs.items():
            self.fields[field_name] = rule_form_field(spec)

    @classmethod
    def initial_for(
        cls, *, category: Category, name="", description="", agents=(), enabled=True, rules=None, mode="enforce"
    ) -> dict:
        effective = category.effective_rules(rules or {})
        initial = {
            "name": name,
            "description": description,
            "agents": "\n".join(agents),
            "enabled": enabled,
            "mode": mode,
        }
        for spec in category.rules:
            initial[rule_field_name(spec.name)] = rule_initial(spec, effective[spec.name])
        return initial

    def rule_groups(self) -> list[RuleGroup]:
        grouped = group_rules(self.specs.items(), lambda item: item[1].name)
        result = []
        for name, members in grouped:
            fields = [self[field_name] for field_name, _ in members]
            open_ = name in ALWAYS_OPEN or any(
                self[field_name].errors or not _same(rule_value(spec, self[field_name].value()), spec.default)
                for field_name, spec in members
            )
            result.append(RuleGroup(name, fields, open_))
        return result

    def rules(self) -> dict:
        data = self.cleaned_data
        rules = {}
        for field_name, spec in self.specs.items():
            value = rule_value(spec, data.get(field_name))
            if value is _OMIT:
                continue
            # Only what differs from the default is stored, so a later change of a default reaches
            # this policy, unless the policy already pinned the rule.
            if spec.name in self.explicit_rules or not _same(value, spec.default):
                rules[spec.name] = value
        return rules

    def payload(self) -> dict:
        """Keyword arguments for policy_create / policy_update. Call after is_valid()."""
        data = self.cleaned_data
        return {
            "name": (data.get("name") or "").strip(),
            "description": data.get("description") or "",
            "category": self.category.name,
            "rules": self.rules(),
            "scope": {"agents": parse_agents(data.get("agents") or "")},
            "enabled": bool(data.get("enabled")),
            "mode": data.get("mode") or "enforce",
        }

    def add_service_errors(self, errors: dict) -> None:
        for key, messages in errors.items():
            if key == "rules" and isinstance(messages, dict):
                for rule, rule_messages in messages.items():
                    field = rule_field_name(rule)
                    target = field if field in self.fields else None
                    for message in _as_list(rule_messages):
                        self.add_error(target, message if target else f"{rule}: {message}")
                continue
            target = self.SERVICE_FIELDS.get(key)
            for message in _as_list(messages):
                self.add_error(target, message)

    def field_error(self, errors: dict, field_name: str) -> list[str]:
        """The messages a service error dict holds for one form field (for live validation)."""
        if field_name in self.specs:
            rules = errors.get("rules")
            if isinstance(rules, dict):
                return _as_list(rules.get(self.specs[field_name].name, []))
            return []
        return [
            m
            for key, target in self.SERVICE_FIELDS.items()
            if target == field_name
            for m in _as_list(errors.get(key, []))
        ]


def _same(a, b) -> bool:
    return (
        type(a) is type(b)
        and a == b
        or (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and not isinstance(a, bool)
            and not isinstance(b, bool)
            and a == b
        )
    )


def _as_list(messages) -> list[str]:
    if isinstance(messages, (list, tuple)):
        return [str(m) for m in messages]
    if isinstance(messages, dict):
        return [f"{k}: {' '.join(_as_list(v))}" for k, v in messages.items()]
    return [str(messages)]


class PolicyFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        label="Search",
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "placeholder": "Name, description or agent",
                "data-search": "",
                "autocomplete": "off",
            }
        ),
    )
    category = forms.ChoiceField(required=False, label="Category")
    enabled = forms.ChoiceField(
        required=False, label="Status", choices=[("", "Any status"), ("true", "Enabled"), ("false", "Disabled")]
    )
    action = forms.ChoiceField(
        required=False, label="Action", choices=[("", "Any action"), ("warn", "warn"), ("block", "block")]
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [("", "Any category")] + [
            (name, category.label) for name, category in sorted(CATEGORIES.items())
        ]

    def cleaned(self) -> dict:
        """The valid filters; an invalid value (a hand-edited URL) is ignored, not an error page."""
        self.is_valid()
        return {k: v for k, v in getattr(self, "cleaned_data", {}).items() if v}
