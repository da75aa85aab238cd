"""``manage.py evaluate_alerts``: evaluate every enabled alert rule once and deliver what
it raised or resolved before returning, as beat does every minute."""

from django.core.management.base import BaseCommand
from django.utils import timezone

from apps.alerts import services


class Command(BaseCommand):
    help = "Evaluate the alert rules once and send the notifications they raise."

    def handle(self, *args, **options):
        now = timezone.now()
        evaluation, delivery = services.evaluate_and_deliver(now)
        self.stdout.write(
            f"Evaluated {evaluation.rules} rule(s) at {now:%Y-%m-%d %H:%M:%S} UTC: "
            f"{evaluation.fired} alert(s) fired, {evaluation.resolved} resolved."
        )
        for slug in evaluation.failed_rules:
            self.stderr.write(f"Rule {slug} failed to evaluate: see its page and the log.")
        line = (
            f"Notifications: {delivery.sent} sent, {delivery.retrying} to retry, "
            f"{delivery.failed} failed, {delivery.held_back} held back (silenced or channel off)."
        )
        if delivery.next_attempt_at is not None:
            line += f" Next attempt at {delivery.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC."
        self.stdout.write(line)
