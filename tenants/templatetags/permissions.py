"""``{% load permissions %}``: ``{% if current_membership|has_role:"admin" %}`` to show admin controls.

Only a display aid: every write is checked again on the server (tenants.permissions.require_role).
"""

from django import template

from tenants.permissions import has_role as _has_role

register = template.Library()


@register.filter
def has_role(membership, role: str) -> bool:
    return _has_role(membership, role)
