from django.urls import path

from . import views

urlpatterns = [
    path("", views.webhook_list, name="settings_webhooks"),
    path("<int:pk>/", views.webhook_detail, name="settings_webhook"),
    path("<int:pk>/delete/", views.webhook_delete, name="settings_webhook_delete"),
    path(
        "<int:pk>/deliveries/<int:delivery_pk>/redeliver/", views.delivery_redeliver, name="settings_webhook_redeliver"
    ),
]
