"""The demo shows dollars at risk, goodput and a pilot: its pre-training run has an event
log whose checkpoint steps meet its backup versions, one of them proven by a passed drill;
seeding again adds nothing."""

import pytest
from django.utils import timezone

from apps.backups import at_risk
from apps.demo.training import DEMO_JOB, DEMO_WORKLOAD, seed_training_demo
from apps.pilots.demo import seed_pilots_demo
from apps.pilots.models import PilotResult
from apps.pools.models import Workload
from apps.training import services
from apps.training.models import TrainingEvent


@pytest.mark.django_db
def test_the_demo_run_has_a_proven_checkpoint_goodput_and_seeding_again_adds_nothing(demo):
    workload = Workload.objects.select_related("pool").get(slug=DEMO_WORKLOAD)
    events = TrainingEvent.objects.filter(workload=workload, job_name=DEMO_JOB)
    count = events.count()
    assert events.filter(event_type="job_started").count() == 3  # two restarts

    figures = at_risk.workload_at_risk(workload, timezone.now())
    assert figures.basis == at_risk.PROVEN and figures.proven_step == 41_000
    assert figures.drill.passed and figures.usd_at_risk > 1000

    (job,) = services.workload_goodput(workload).jobs
    # Steps 40,900 → 42,000 at 780 s a step: 1,100 × 780 = 858,000 s effective.
    assert (job.measured.min_loaded_step, job.measured.max_saved_step) == (40_900, 42_000)
    assert job.measured.effective_seconds == 858_000
    assert 50 < job.measured.goodput_pct < 100 and job.measured.flags == []

    pilots = PilotResult.objects.filter(workload__slug="chat-api-asia")
    assert sorted(pilots.values_list("gpu_model__slug", flat=True)) == ["h100-pcie", "l40s"]
    assert seed_training_demo(workload) == 0
    assert seed_pilots_demo(Workload.objects.get(slug="chat-api-asia")) == 0
    assert events.count() == count
    assert pilots.count() == 2
