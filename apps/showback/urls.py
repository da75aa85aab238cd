from django.urls import path

from apps.showback import views
from apps.showback.focus import views as focus_views

app_name = "showback"
urlpatterns = [
    path("teams/", views.team_list, name="team_list"),
    path("teams/new/", views.team_create, name="team_create"),
    path("teams/<slug:slug>/", views.team_detail, name="team_detail"),
    path("teams/<slug:slug>/audit/", views.team_audit, name="team_audit"),
    path("teams/<slug:slug>/edit/", views.team_edit, name="team_edit"),
    path("teams/<slug:slug>/delete/", views.team_delete, name="team_delete"),
    path("showback/", views.showback_page, name="showback"),
    path("showback/export/", views.showback_export, name="showback_export"),
    path("showback/export/focus/", focus_views.focus_export, name="focus_export"),
    path("periods/", views.period_list, name="period_list"),
    path("periods/<str:month>/close/", views.period_close, name="period_close"),
    path("periods/<str:month>/reopen/", views.period_reopen, name="period_reopen"),
    path("budgets/", views.budget_list, name="budget_list"),
    path("budgets/new/", views.budget_create, name="budget_create"),
    path("budgets/<int:pk>/edit/", views.budget_edit, name="budget_edit"),
    path("budgets/<int:pk>/delete/", views.budget_delete, name="budget_delete"),
]
