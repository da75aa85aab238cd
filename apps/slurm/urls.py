from django.urls import path

from apps.slurm import views

app_name = "slurm"
urlpatterns = [
    path("jobs/", views.job_list, name="job_list"),
    path("efficiency/", views.slurm_efficiency, name="efficiency"),
    path("import/", views.slurm_import, name="import"),
    path("imports/<int:pk>/", views.slurm_import_detail, name="import_detail"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/", views.rule_create, name="rule_create"),
    path("rules/remap/", views.rule_remap, name="rule_remap"),
    path("rules/<int:pk>/edit/", views.rule_edit, name="rule_edit"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule_delete"),
]
