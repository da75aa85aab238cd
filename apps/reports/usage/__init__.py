"""How the fleet is used, by the hour of the day and the weekday in a time zone: the
hour-of-day curve and the heatmap (``curves``), the fleet's utilisation (``fleet``) and
the peak and off-peak split (``peaks``), on local hours computed in SQL (``clock``).
Peak and off-peak costs price their hours as the cost report does (apps/reports/cost)."""
