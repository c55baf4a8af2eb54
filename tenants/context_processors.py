def current_tenant(request):
    return {
        "current_tenant": getattr(request, "tenant", None),
        "current_membership": getattr(request, "membership", None),
        "user_memberships": getattr(request, "memberships", []),
    }
