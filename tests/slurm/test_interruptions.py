"""Jobs ending NODE_FAIL, BOOT_FAIL, PREEMPTED or REQUEUED with a mapped training workload
become its interruptions, once per job however often it is imported, with the work lost
since the last checkpoint the workload saved during the job, else since its start."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from apps.pools.models import Interruption, InterruptionCause, WorkloadKind
from apps.reports.cost.workloads import lost_gpu_hours_by_workload
from apps.reports.span import Span
from apps.slurm.mapping import remap_jobs
from apps.slurm.models import SlurmJob, SlurmMappingRule
from apps.slurm.services import import_sacct
from apps.training.models import EventType, TrainingEvent
from tests.factories import ClusterFactory, PoolFactory, WorkloadFactory

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"
HEADER = "JobID|Account|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES"
START = datetime(2026, 11, 2, 8, tzinfo=UTC)
NOW = datetime(2026, 11, 3, tzinfo=UTC)
TEXT = "\n".join(
    [
        HEADER,
        # 2 h on 4 GPUs, then a node failed.
        "20|llm|NODE_FAIL|2026-11-02T08:00:00|2026-11-02T10:00:00|02:00:00|1|gpu01|gres/gpu=4",
        "21|llm|PREEMPTED|2026-11-02T11:00:00|2026-11-02T11:45:00|00:45:00|1|gpu01|gres/gpu=4",
        "22|llm|COMPLETED|2026-11-02T12:00:00|2026-11-02T13:00:00|01:00:00|1|gpu01|gres/gpu=4",
        "23|other|NODE_FAIL|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|gpu02|gres/gpu=1",
    ]
)


@pytest.fixture
def cluster():
    return ClusterFactory(slug="hopper", timezone="UTC")


@pytest.fixture
def llm():
    workload = WorkloadFactory(name="LLM", slug="llm", kind=WorkloadKind.PRE_TRAINING, gpu_count=8)
    SlurmMappingRule.objects.create(field="account", pattern="llm", workload=workload)
    return workload


def test_failed_jobs_become_interruptions_once_with_the_work_since_the_checkpoint(cluster, llm):
    """Job 20: a checkpoint saved at 09:30 (and one at 07:00, before the job: not its);
    lost 10:00 − 09:30 = 30 min. Job 21: no checkpoint during it: lost from its start,
    45 min. The ledger counts lost minutes ÷ 60 × the job's own 4 GPUs (the workload
    declares 8): 2 + 3 = 5 GPU-h. Job 22 completed; job 23 maps to nothing: neither is an
    interruption."""
    for when in (START - timedelta(hours=1), START + timedelta(minutes=90)):
        TrainingEvent.objects.create(
            workload=llm, job_name="run", event_type=EventType.CHECKPOINT_SAVED, timestamp=when
        )
    import_sacct(cluster, TEXT, now=NOW)
    import_sacct(cluster, TEXT, now=NOW)  # the same again: duplicates, nothing new
    interruptions = {
        job.job_id: job.interruption
        for job in SlurmJob.objects.filter(interruption__isnull=False).select_related(
            "interruption"
        )
    }
    assert sorted(interruptions) == ["20", "21"]
    assert Interruption.objects.count() == 2
    node_fail, preempted = interruptions["20"], interruptions["21"]
    assert (node_fail.cause, node_fail.occurred_at) == (
        InterruptionCause.HARDWARE,
        START + timedelta(hours=2),
    )
    assert node_fail.last_checkpoint_at == START + timedelta(minutes=90)
    assert node_fail.lost_minutes == pytest.approx(30)
    assert preempted.cause == InterruptionCause.PREEMPTION
    assert preempted.last_checkpoint_at == START + timedelta(hours=3)
    assert preempted.lost_minutes == pytest.approx(45)
    lost = lost_gpu_hours_by_workload(Span(START, NOW))
    assert (node_fail.gpus, preempted.gpus) == (4, 4)
    assert lost[llm.id] == pytest.approx(30 / 60 * 4 + 45 / 60 * 4)


def test_a_changed_row_updates_its_interruption_and_an_unmapped_job_loses_it(cluster, llm):
    import_sacct(cluster, TEXT, now=NOW)
    first = SlurmJob.objects.get(job_id="20").interruption
    later = TEXT.replace("2026-11-02T10:00:00|02:00:00", "2026-11-02T10:30:00|02:30:00")
    result = import_sacct(cluster, later, now=NOW)
    assert result.updated == 1
    again = SlurmJob.objects.get(job_id="20").interruption
    assert again.pk == first.pk and again.occurred_at == START + timedelta(hours=2, minutes=30)
    assert Interruption.objects.count() == 2
    SlurmMappingRule.objects.update(pattern="nobody")
    assert remap_jobs() == 3
    assert not Interruption.objects.exists()


def test_an_inference_workloads_jobs_are_not_interruptions(cluster):
    serving = WorkloadFactory(kind=WorkloadKind.ONLINE_INFERENCE)
    SlurmMappingRule.objects.create(field="account", pattern="*", workload=serving)
    import_sacct(cluster, TEXT, now=NOW)
    assert SlurmJob.objects.filter(workload=serving).count() == 4
    assert not Interruption.objects.exists()


def test_a_requeued_record_without_a_start_counts_no_lost_time(cluster, llm):
    """Slurm 22.05's REQUEUED row of the real capture (job 2) has Start=None and 0 s: it
    is an interruption at its End, with nothing counted as lost. The capture's second row
    of job 2 (sacct -D) is refused, so the REQUEUED one is the one kept."""
    SlurmMappingRule.objects.update(pattern="ml-research")
    import_sacct(cluster, (DATA / "real-one-node-cluster.sacct").read_text(), now=NOW)
    job = SlurmJob.objects.get(job_id="2")
    assert (job.state, job.start, job.gpu_hours) == ("REQUEUED", None, Decimal(0))
    interruption = job.interruption
    assert interruption.cause == InterruptionCause.PREEMPTION
    assert interruption.last_checkpoint_at == interruption.occurred_at == job.end
    assert interruption.lost_gpu_hours == 0
    assert "no lost time" in interruption.notes
    # The TIMEOUT, FAILED and CANCELLED jobs are not interruptions.
    assert Interruption.objects.count() == 1


def test_the_cost_report_counts_a_slurm_jobs_own_gpus_and_a_manual_interruption_the_workloads(
    client, make_user
):
    """A workload declaring 64 GPUs on a $2.00 training pool. Its job 40 held 16 GPUs and
    ended NODE_FAIL 3 h after its start, with no checkpoint saved during it: 3 h × 16 =
    48 GPU-h lost ($96.00), not 3 h × 64 = 192. A manual interruption a day later with
    no GPU count, 30 min after its checkpoint and 15 min to restart, keeps the workload's
    64 GPUs: (30 + 15) ÷ 60 × 64 = 48 GPU-h more, 96 GPU-h ($192.00) in all."""
    start = datetime(2026, 3, 10, tzinfo=UTC)
    pool = PoolFactory(
        gpu_count=64,
        on_demand_price_per_gpu_hour_usd=Decimal("2.00"),
        in_service_from=start - timedelta(days=1),
    )
    workload = WorkloadFactory(
        name="Big run", slug="big-run", kind=WorkloadKind.PRE_TRAINING, pool=pool, gpu_count=64
    )
    SlurmMappingRule.objects.create(field="account", pattern="big", workload=workload)
    text = "\n".join(
        [
            HEADER,
            "40|big|NODE_FAIL|2026-03-10T08:00:00|2026-03-10T11:00:00|03:00:00|2|gpu[01-02]|"
            "gres/gpu=16",
        ]
    )
    import_sacct(ClusterFactory(slug="hopper", timezone="UTC"), text, now=start + timedelta(days=1))
    from_slurm = SlurmJob.objects.get(job_id="40").interruption
    assert from_slurm.gpus == 16
    assert from_slurm.lost_gpu_hours == pytest.approx(3 * 16)

    client.force_login(make_user("reader"))

    def lost_of_workload():
        response = client.get(
            reverse("api-report-cost"),
            {
                "start": "2026-03-10T00:00:00Z",
                "end": "2026-03-12T00:00:00Z",
                "group_by": "workload",
            },
        )
        assert response.status_code == 200, response.content
        row = {row["key"]: row for row in response.json()}["big-run"]
        return row["lost_gpu_hours"], row["interruption_cost_usd"]

    assert lost_of_workload() == (pytest.approx(48.0), "96.00")

    at = start + timedelta(days=1, hours=10)
    manual = Interruption.objects.create(
        workload=workload,
        occurred_at=at,
        cause=InterruptionCause.SOFTWARE,
        restart_minutes=15,
        last_checkpoint_at=at - timedelta(minutes=30),
    )
    assert manual.gpus is None and manual.lost_gpu_hours == pytest.approx(45 / 60 * 64)
    assert lost_of_workload() == (pytest.approx(96.0), "192.00")


def test_the_interruption_page_form_and_api_show_the_gpus(client, make_user, cluster, llm):
    import_sacct(cluster, TEXT, now=NOW)
    interruption = SlurmJob.objects.get(job_id="20").interruption
    client.force_login(make_user("lead"))
    page = client.get(interruption.get_absolute_url()).content.decode()
    assert "(Slurm job 20)" in page
    # 2 h since the start (no checkpoint in this test) × the job's 4 GPUs.
    assert "120 min × 4 GPUs = <strong>8.0 GPU-h</strong>" in page
    form = client.get(reverse("reports:interruption_edit", args=[interruption.pk])).content.decode()
    assert 'name="gpus"' in form and 'value="4"' in form
    body = client.get(reverse("interruption-detail", args=[interruption.pk])).json()
    assert (body["gpus"], body["lost_gpu_hours"]) == (4, pytest.approx(8.0))
    # Through the API: blank is the workload's GPUs; 0 is refused.
    url = reverse("interruption-detail", args=[interruption.pk])
    answer = client.patch(url, {"gpus": None}, content_type="application/json")
    assert answer.json()["lost_gpu_hours"] == pytest.approx(2 * 8)
    refused = client.patch(url, {"gpus": 0}, content_type="application/json")
    assert refused.status_code == 400 and "gpus" in refused.json()


def test_a_job_that_held_no_gpu_is_no_interruption(cluster, llm):
    """A CPU-only job of the workload (no gres/gpu in AllocTRES) lost no GPU work."""
    text = "\n".join(
        [HEADER, "24|llm|NODE_FAIL|2026-11-02T08:00:00|2026-11-02T09:00:00|01:00:00|1|cpu01|cpu=8"]
    )
    import_sacct(cluster, text, now=NOW)
    assert SlurmJob.objects.get(job_id="24").workload == llm
    assert not Interruption.objects.exists()
