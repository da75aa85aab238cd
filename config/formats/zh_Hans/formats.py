"""Numbers and dates for zh-Hans pages. Django's own zh_Hans formats group no digits, so
46702792704 would read as one run of figures; Chinese consoles write 46,702,792,704 as
English does. Dates keep the house's ISO order (2026-12-01 14:00), never mm/dd/yyyy."""

DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
