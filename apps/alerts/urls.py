from django.urls import path

from apps.alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.alert_list, name="alert_list"),
    path("<int:pk>/", views.alert_detail, name="alert_detail"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/", views.rule_create, name="rule_create"),
    path("rules/<slug:slug>/", views.rule_detail, name="rule_detail"),
    path("rules/<slug:slug>/edit/", views.rule_edit, name="rule_edit"),
    path("rules/<slug:slug>/delete/", views.rule_delete, name="rule_delete"),
    path("channels/", views.channel_list, name="channel_list"),
    path("channels/new/", views.channel_create, name="channel_create"),
    path("channels/<slug:slug>/", views.channel_detail, name="channel_detail"),
    path("channels/<slug:slug>/edit/", views.channel_edit, name="channel_edit"),
    path("channels/<slug:slug>/delete/", views.channel_delete, name="channel_delete"),
    path("channels/<slug:slug>/test/", views.channel_test, name="channel_test"),
    path("deliveries/", views.delivery_list, name="delivery_list"),
    path(
        "deliveries/<int:pk>/send-again/",
        views.delivery_send_again,
        name="delivery_send_again",
    ),
    path("slurm-reports/", views.slurm_report_list, name="slurm_report_list"),
    path("silences/", views.silence_list, name="silence_list"),
    path("silences/new/", views.silence_create, name="silence_create"),
    path("silences/<int:pk>/expire/", views.silence_expire, name="silence_expire"),
]
