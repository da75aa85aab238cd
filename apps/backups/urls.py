from django.urls import path

from apps.backups import views

app_name = "backups"
urlpatterns = [
    path("", views.policy_list, name="policy_list"),
    path("versions/<int:pk>/", views.version_detail, name="version_detail"),
    path("versions/<int:pk>/edit/", views.version_edit, name="version_edit"),
    path("versions/<int:pk>/delete/", views.version_delete, name="version_delete"),
    path("versions/<int:pk>/stable/", views.version_mark_stable, name="version_mark_stable"),
    path("workloads/<slug:slug>/at-risk/", views.workload_at_risk, name="workload_at_risk"),
    path("drills/<int:pk>/", views.drill_detail, name="drill_detail"),
    path("drills/<int:pk>/evidence/", views.drill_evidence, name="drill_evidence"),
    path("drills/<int:pk>/delete/", views.drill_delete, name="drill_delete"),
    path("<slug:slug>/", views.policy_detail, name="policy_detail"),
    path("<slug:slug>/new/", views.policy_create, name="policy_create"),
    path("<slug:slug>/edit/", views.policy_edit, name="policy_edit"),
    path("<slug:slug>/delete/", views.policy_delete, name="policy_delete"),
    path("<slug:slug>/versions/new/", views.version_create, name="version_create"),
    path("<slug:slug>/drills/new/", views.drill_create, name="drill_create"),
]
