import django.core.validators
from decimal import Decimal

import apps.currencies.codes
from django.db import migrations, models


def _currency(default):
    return models.CharField(
        default=default,
        help_text="ISO 4217 code of the amount; the reporting currency unless the budget was "
        "stated in another. Its burn-down converts it at the month's exchange rate.",
        max_length=3,
        validators=[apps.currencies.codes.validate_currency],
        verbose_name="currency",
    )


def _amount():
    return models.DecimalField(
        decimal_places=2,
        help_text="In the budget's currency.",
        max_digits=14,
        validators=[django.core.validators.MinValueValidator(Decimal("0.01"))],
        verbose_name="amount per month",
    )


class Migration(migrations.Migration):
    """Budgets state their currency. Every budget made before was stated in US dollars,
    so those rows say USD, whatever the reporting currency is when this runs; budgets
    made afterwards default to the reporting currency."""

    dependencies = [
        ("showback", "0001_budgets"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="budget", name="budget_amount_positive"),
        migrations.RenameField(
            model_name="budget", old_name="amount_usd_per_month", new_name="amount_per_month"
        ),
        migrations.RenameField(
            model_name="historicalbudget",
            old_name="amount_usd_per_month",
            new_name="amount_per_month",
        ),
        migrations.AddConstraint(
            model_name="budget",
            constraint=models.CheckConstraint(
                condition=models.Q(("amount_per_month__gt", 0)), name="budget_amount_positive"
            ),
        ),
        migrations.AddField(model_name="budget", name="currency", field=_currency("USD")),
        migrations.AddField(model_name="historicalbudget", name="currency", field=_currency("USD")),
        migrations.AlterField(
            model_name="budget",
            name="currency",
            field=_currency(apps.currencies.codes.reporting_currency),
        ),
        migrations.AlterField(
            model_name="historicalbudget",
            name="currency",
            field=_currency(apps.currencies.codes.reporting_currency),
        ),
        *(
            migrations.AlterField(model_name=model, name="amount_per_month", field=_amount())
            for model in ("budget", "historicalbudget")
        ),
    ]
