"""The demo's own objects: ``seed_demo`` marks what it makes, and later runs refresh only
what is marked, so a fleet the user built beside the demo is never written to."""

from django.contrib.contenttypes.models import ContentType
from django.db import models


class DemoObject(models.Model):
    """One object ``seed_demo`` made, under the key the demo knows it by (its slug or
    username in the demo's spec). The key stays when the object is named apart from a
    user's object that already held the slug, or renamed later."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    object_id = models.PositiveBigIntegerField()
    key = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "demo object"
        constraints = [
            models.UniqueConstraint(fields=["content_type", "key"], name="demo_object_one_per_key"),
            models.UniqueConstraint(
                fields=["content_type", "object_id"], name="demo_object_marked_once"
            ),
        ]

    def __str__(self):
        return f"{self.content_type.model} {self.key} (#{self.object_id})"
