from django.urls import path

from . import views

urlpatterns = [
    path("", views.policy_list, name="policy_list"),
    path("new/", views.policy_new, name="policy_new"),
    path("validate/", views.policy_validate, name="policy_validate"),
    path("<int:pk>/", views.policy_detail, name="policy_detail"),
    path("<int:pk>/edit/", views.policy_edit, name="policy_edit"),
    path("<int:pk>/history/", views.policy_history, name="policy_history"),
    path("<int:pk>/rollback/", views.policy_rollback, name="policy_rollback"),
    path("<int:pk>/toggle/", views.policy_toggle, name="policy_toggle"),
    path("<int:pk>/delete/", views.policy_delete, name="policy_delete"),
]
