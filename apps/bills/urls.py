from django.urls import path

from apps.bills import views

app_name = "bills"
urlpatterns = [
    path("", views.bill_list, name="bill_list"),
    path("import/", views.bill_upload, name="bill_upload"),
    path("<int:pk>/", views.bill_detail, name="bill_detail"),
    path("<int:pk>/delete/", views.bill_delete, name="bill_delete"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/", views.rule_create, name="rule_create"),
    path("rules/<int:pk>/edit/", views.rule_edit, name="rule_edit"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule_delete"),
    path("reconciliation/", views.reconciliation_page, name="reconciliation"),
    path("reconciliation/tolerance/", views.tolerance_edit, name="tolerance_edit"),
    path(
        "reconciliation/<slug:slug>/<str:month>/replace/",
        views.replace_price,
        name="replace_price",
    ),
]
