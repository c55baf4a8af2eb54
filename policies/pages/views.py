"""Governance > Policies: list, new, detail, edit, history, enable/disable, delete.

Every member may read; only admins write (``require_role("admin")``), checked here on the server.
Objects come through ``tenants.access.policy_for``, so another tenant's policy is a 404.
"""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import OuterRef, Q, Subquery, TextField
from django.db.models.functions import Cast, Lower
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import InvalidInput
from core.pages import render_page
from policies import services
from policies.access import policy_for
from policies.categories import CATEGORIES, UnknownCategory, get_category
from policies.models import Policy, PolicyVersion
from policies.templates_catalog import template_for, templates_for_category
from tenants.audit import Actor
from tenants.permissions import require_role

from .forms import PolicyFilterForm, PolicyForm, format_value, group_rules
from .history import versions_with_diffs

PAGE_SIZE = 50


def policies_queryset(tenant):
    """The tenant's policies with who changed each last: one query for a whole page of rows."""
    latest = PolicyVersion.objects.filter(policy=OuterRef("pk")).order_by("-id")
    return (
        Policy.objects.filter(tenant=tenant)
        .annotate(
            last_actor=Subquery(latest.values("actor_label")[:1]), last_change=Subquery(latest.values("change")[:1])
        )
        .order_by(Lower("name"), "id")
    )


def _filtered(queryset, filters: dict):
    if q := filters.get("q", "").strip():
        queryset = queryset.annotate(scope_text=Cast("scope", TextField())).filter(
            Q(name__icontains=q) | Q(description__icontains=q) | Q(scope_text__icontains=q)
        )
    if category := filters.get("category"):
        queryset = queryset.filter(category=category)
    if enabled := filters.get("enabled"):
        queryset = queryset.filter(enabled=enabled == "true")
    if action := filters.get("action"):
        # Rules are stored without their defaults, so "warn" also means "not set" where warn is
        # the category's default (grounding's is).
        match = Q()
        for name, category in CATEGORIES.items():
            set_here = Q(rules__action_on_violation=action)
            if category.defaults().get("action_on_violation") == action:
                set_here |= ~Q(rules__has_key="action_on_violation")
            match |= Q(category=name) & set_here
        queryset = queryset.filter(match)
    return queryset


def _back(request, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _toast(response: HttpResponse, text: str, level: str = "success") -> HttpResponse:
    """For htmx responses that replace a row: app.js shows this as a toast."""
    response["HX-Trigger"] = json.dumps({"toast": {"message": text, "level": level}})
    return response


@require_role()
def policy_list(request):
    filter_form = PolicyFilterForm(request.GET or None)
    filters = filter_form.cleaned()
    queryset = _filtered(policies_queryset(request.tenant), filters)
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "filter_form": filter_form,
        "filtered": bool(filters),
        "page": page,
        "policies": page.object_list,
    }
    return render_page(request, "policies/list.html", context, fragment="results")


@require_role("admin")
@require_POST
def policy_toggle(request, pk):
    policy = policy_for(request.tenant, pk)
    wanted = request.POST.get("enabled")
    enabled = (not policy.enabled) if wanted not in ("true", "false") else wanted == "true"
    try:
        policy = services.policy_set_enabled(policy=policy, enabled=enabled, actor=Actor.from_request(request))
    except InvalidInput:
        # The stored rules no longer pass the category's schema (it changed since): only an edit,
        # which shows each problem, can fix them.
        text = f"“{policy.name}” has rules that are no longer valid. Edit the policy to fix them first."
        if request.htmx:
            response = _toast(HttpResponse("", status=200), text, "error")
            response["HX-Reswap"] = "none"
            return response
        messages.error(request, text)
        return redirect("policy_edit", pk=policy.pk)
    text = f"“{policy.name}” {'enabled' if policy.enabled else 'disabled'}."
    if request.htmx:
        row = policies_queryset(request.tenant).get(pk=policy.pk)
        return _toast(
            render(request, "policies/list.html#row", {"policy": row, "next": request.POST.get("next", "")}), text
        )
    messages.success(request, text)
    return redirect(_back(request, reverse("policy_detail", args=[policy.pk])))


@require_role("admin")
@require_http_methods(["GET", "POST"])
def policy_delete(request, pk):
    policy = policy_for(request.tenant, pk)
    if request.method == "POST":
        name = policy.name
        services.policy_delete(policy=policy, actor=Actor.from_request(request))
        text = f"Policy “{name}” deleted."
        if request.htmx:
            # The list removes the row in place (hx-swap="outerHTML" with nothing), then reloads its
            # results so the count, the pages and the empty state stay right.
            response = _toast(HttpResponse(""), text)
            response["HX-Trigger-After-Swap"] = "policyDeleted"
            return response
        messages.success(request, text)
        return redirect("policy_list")
    return render(request, "policies/delete.html", {"policy": policy})


@require_role("admin")
@require_http_methods(["GET", "POST"])
def policy_new(request):
    category_name = request.POST.get("category") or request.GET.get("category")
    if not category_name:
        return render(
            request,
            "policies/new_category.html",
            {
                "categories": [(c, templates_for_category(c.name)) for _, c in sorted(CATEGORIES.items())],
            },
        )
    try:
        category = get_category(category_name)
    except UnknownCategory:
        raise Http404("Unknown category.") from None
    template = template_for(request.GET.get("template"))
    if template is not None and template.category != category.name:
        template = None
    if request.method == "POST":
        form = PolicyForm(request.POST, category=category, label_suffix="")
        if form.is_valid():
            try:
                policy = services.policy_create(
                    tenant=request.tenant, actor=Actor.from_request(request), **form.payload()
                )
            except InvalidInput as exc:
                form.add_service_errors(exc.errors)
            else:
                messages.success(request, f"Policy “{policy.name}” created.")
                return redirect("policy_detail", pk=policy.pk)
    else:
        if template:
            initial = PolicyForm.initial_for(
                category=category, name=template.name, description=template.summary, rules=template.rules
            )
        else:
            initial = PolicyForm.initial_for(category=category)
        form = PolicyForm(initial=initial, category=category, label_suffix="")
    context = {
        "form": form,
        "category": category,
        "policy": None,
        "template": template,
        "templates": templates_for_category(category.name),
        "validate_url": reverse("policy_validate"),
    }
    return render_page(request, "policies/form.html", context, fragment="editor", status=400 if form.errors else 200)


@require_role("admin")
@require_http_methods(["GET", "POST"])
def policy_edit(request, pk):
    policy = policy_for(request.tenant, pk)
    category = get_category(policy.category)
    if request.method == "POST":
        form = PolicyForm(request.POST, category=category, explicit_rules=policy.rules, label_suffix="")
        if form.is_valid():
            payload = form.payload()
            payload.pop("category")
            version = policy.version
            try:
                managed_error = _unconfirmed_managed_edit(request, policy, payload)
                if not managed_error:
                    policy = services.policy_update(policy=policy, actor=Actor.from_request(request), **payload)
            except InvalidInput as exc:
                form.add_service_errors(exc.errors)
            else:
                if managed_error:
                    context = {**_edit_context(request, form, category, policy), "managed_error": managed_error}
                    return render(request, "policies/form.html", context, status=400)
                if policy.version == version:
                    messages.info(request, "Nothing changed.")
                else:
                    messages.success(request, f"Saved “{policy.name}” as version {policy.version}.")
                return redirect("policy_detail", pk=policy.pk)
    else:
        initial = PolicyForm.initial_for(
            category=category,
            name=policy.name,
            description=policy.description,
            agents=policy.agents,
            enabled=policy.enabled,
            rules=policy.rules,
            mode=policy.mode,
        )
        # ?rule_<name>=value: the calibration panel's "Try it" prefills a suggested value; the form
        # validates it like any other input when saved.
        initial.update({key: value for key, value in request.GET.items() if key.startswith("rule_") and key in initial})
        form = PolicyForm(initial=initial, category=category, explicit_rules=policy.rules, label_suffix="")
    context = _edit_context(request, form, category, policy)
    return render_page(request, "policies/form.html", context, fragment="editor", status=400 if form.errors else 200)


def _edit_context(request, form, category, policy) -> dict:
    return {
        "form": form,
        "category": category,
        "policy": policy,
        "validate_url": f"{reverse('policy_validate')}?policy={policy.pk}",
        # ?try=1 (the calibration panel's "Try it"): replay the prefilled value on past runs at once.
        "autorun": request.method == "GET" and request.GET.get("try") == "1",
    }


MANAGED_UNCONFIRMED = "Tick the box to save: this policy is managed by code, and the next apply overwrites this edit."


def _unconfirmed_managed_edit(request, policy: Policy, payload: dict) -> str:
    """The error to show when an edit of a policy managed by code (docs/policies-as-code.md) would
    change it and was not confirmed; "" otherwise. Raises InvalidInput for an edit the save refuses
    anyway, so its own errors come first."""
    if not policy.managed_by_code or request.POST.get("confirm_managed") == "yes":
        return ""
    cleaned = services.policy_validate(tenant=request.tenant, exclude_pk=policy.pk, category=policy.category, **payload)
    if all(getattr(policy, key) == value for key, value in cleaned.items()):
        return ""  # nothing would change: nothing to overwrite
    return MANAGED_UNCONFIRMED


@require_role("admin")
@require_POST
def policy_validate(request):
    """Live validation of one field as it is edited: the whole form is judged as the save would
    judge it (same service checks, nothing written) and that field's errors come back."""
    field_name = request.POST.get("_field", "")
    try:
        category = get_category(request.POST.get("category"))
    except UnknownCategory:
        return HttpResponseBadRequest("Unknown category.")
    policy = policy_for(request.tenant, request.GET["policy"]) if request.GET.get("policy") else None
    form = PolicyForm(request.POST, category=category, explicit_rules=policy.rules if policy else (), label_suffix="")
    if field_name not in form.fields:
        return HttpResponseBadRequest("Unknown field.")
    form.is_valid()
    payload = form.payload()
    try:
        services.policy_validate(tenant=request.tenant, exclude_pk=policy.pk if policy else None, **payload)
    except InvalidInput as exc:
        for message in form.field_error(exc.errors, field_name):
            form.add_error(field_name, message)
    return render(request, "policies/form.html#field-errors", {"field": form[field_name]})


@require_role()
def policy_detail(request, pk):
    policy = policy_for(request.tenant, pk)
    category = get_category(policy.category)
    effective = policy.effective_rules
    rules = [
        {
            "spec": spec,
            "value": format_value(effective[spec.name]),
            "default": format_value(spec.default),
            "is_default": spec.name not in policy.rules,
        }
        for spec in category.rules
    ]
    last = PolicyVersion.objects.filter(policy=policy).order_by("-id").first()
    return render(
        request,
        "policies/detail.html",
        {
            "policy": policy,
            "category": category,
            "rule_groups": group_rules(rules, lambda row: row["spec"].name),
            "set_count": sum(1 for row in rules if not row["is_default"]),
            "last_version": last,
        },
    )


@require_role("admin")
@require_POST
def policy_rollback(request, pk):
    policy = policy_for(request.tenant, pk)
    raw = request.POST.get("version", "")
    version = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else raw
    try:
        policy = services.policy_rollback(policy=policy, version=version, actor=Actor.from_request(request))
    except InvalidInput as exc:
        messages.error(request, " ".join(exc.errors.get("version") or ["Could not roll back."]))
    else:
        messages.success(request, f"Rolled “{policy.name}” back to v{version}: now version {policy.version}.")
    return redirect("policy_history", pk=policy.pk)


@require_role()
def policy_history(request, pk):
    policy = policy_for(request.tenant, pk)
    versions = PolicyVersion.objects.filter(policy_ref=policy.pk).select_related("actor").order_by("version", "id")
    return render(
        request,
        "policies/history.html",
        {
            "policy": policy,
            "versions": versions_with_diffs(versions),
        },
    )
