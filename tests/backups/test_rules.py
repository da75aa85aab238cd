"""Bad input refused with a clear message, and the rules the issue asks for."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.backups import services
from apps.backups.forms import BackupPolicyForm, BackupVersionForm, RestoreDrillForm
from apps.backups.models import BackupPolicy, BackupVersion, VersionKind
from apps.backups.tasks import refresh_drill_schedules_task
from apps.backups.validators import is_date_only
from apps.pools.models import Workload, WorkloadKind
from tests.backups.factories import SHA_A, SHA_B, make_drill, make_policy, make_version

pytestmark = pytest.mark.django_db


def _version_data(**overrides):
    data = {
        "kind": "training_checkpoint",
        "model_name": "llama-3-8b",
        "data_version": "corpus-v2",
        "precision": "bf16",
        "config_hash": "3f9a1c2b7d4e",
        "step": "2000",
        "tier": "hot",
        "location": "s3://ckpt/hot/step2000/",
        "size_gb": "16",
        "created_at": (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"),
        "checksum_algorithm": "sha256",
        "checksums": f"node-0 {SHA_A}\nnode-1 {SHA_A}",
    }
    return {**data, **overrides}


@pytest.mark.parametrize(
    "name", ["2024-06-01", "20240601", "ckpt-2024-06-01", "2024-06-01T12:00", "v20240601-1200"]
)
def test_date_only_names_are_recognised(name):
    assert is_date_only(name)


@pytest.mark.parametrize("name", ["llama-3-70b", "qwen2.5-72b-2024", "corpus-2024q3"])
def test_real_names_are_not_date_only(name):
    assert not is_date_only(name)


def test_version_form_refuses_a_date_only_model_and_names_the_version(workload):
    form = BackupVersionForm(_version_data(model_name="2024-06-01"), workload=workload)
    assert not form.is_valid()
    assert "is only a date" in form.errors["model_name"][0]
    form = BackupVersionForm(_version_data(), workload=workload)
    assert form.is_valid(), form.errors
    version = form.save()
    assert version.name == "llama-3-8b-bf16-datacorpus-v2-cfg3f9a1c2b7d4e-step2000"
    assert version.size_bytes == 16 * 10**9
    assert version.checksums.count() == 2


@pytest.mark.parametrize(
    ("checksum", "message"),
    [("xyz" + "a" * 61, "is not hex"), ("a" * 40, "has 40 hex digits; a sha256 checksum has 64")],
)
def test_checksums_must_be_hex_of_the_algorithms_length(workload, checksum, message):
    form = BackupVersionForm(_version_data(checksums=f"node-0 {checksum}"), workload=workload)
    assert not form.is_valid()
    assert message in form.errors["checksums"][0]
    assert form.errors["checksums"][0].startswith("Line 1 (node-0)")


def test_training_checkpoint_needs_its_data_version(workload):
    form = BackupVersionForm(_version_data(data_version=""), workload=workload)
    assert not form.is_valid()
    assert "data version" in form.errors["data_version"][0]


def test_checkpoints_of_another_data_version_are_not_comparable(workload):
    policy = make_policy(workload, current_data_version="corpus-v3")
    old = make_version(workload, data_version="corpus-v2")
    new = make_version(workload, data_version="corpus-v3", step=2000)
    assert not old.comparable_with(policy.current_data_version)
    assert new.comparable_with(policy.current_data_version)


def _drill_form(policy, **overrides):
    version = (
        overrides.pop("version", None)
        or BackupVersion.objects.filter(workload=policy.workload).first()
    )
    start = timezone.now() - timedelta(minutes=40)
    data = {
        "version": version.pk,
        "restored_from_tier": "hot",
        "started_at": start.strftime("%Y-%m-%dT%H:%M"),
        "finished_at": (start + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M"),
        "resumed": "on",
        "outcome": "restored",
        "observed_checksums": f"node-0 {SHA_A}\nnode-1 {SHA_A}",
    }
    return RestoreDrillForm({**data, **overrides}, policy=policy)


def test_a_drill_that_finishes_before_it_starts_is_refused(workload):
    policy = make_policy(workload)
    make_version(workload)
    start = timezone.now() - timedelta(minutes=40)
    form = _drill_form(
        policy,
        started_at=start.strftime("%Y-%m-%dT%H:%M"),
        finished_at=(start - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"),
    )
    assert not form.is_valid()
    assert "before it started" in form.errors["finished_at"][0]


def test_a_drill_on_a_purged_version_is_refused(workload):
    policy = make_policy(workload)
    version = make_version(workload, purged_at=timezone.now() - timedelta(days=1))
    form = _drill_form(policy, version=version)
    assert not form.is_valid()
    assert "was purged" in form.errors["version"][0]
    with pytest.raises(ValidationError, match="purged"):
        make_drill(policy, version)


def test_a_drill_checksum_of_the_wrong_length_is_refused(workload):
    policy = make_policy(workload)
    make_version(workload)
    form = _drill_form(policy, observed_checksums="node-0 abc123")
    assert not form.is_valid()
    assert "has 6 hex digits; a sha256 checksum has 64" in form.errors["observed_checksums"][0]


def test_a_passing_drill_and_its_computed_rto_and_rpo(workload, make_user):
    policy = make_policy(workload)
    make_version(workload)
    form = _drill_form(policy)
    assert form.is_valid(), form.errors
    drill = form.save(user=make_user("ops"))
    assert drill.passed and drill.failure_reasons == []
    assert drill.actual_rto_seconds == 20 * 60
    assert 0 < drill.actual_rpo_seconds <= 120 * 60
    assert drill.checksums_compared == 2 and drill.checksum_mismatches == []
    policy.refresh_from_db()
    assert policy.last_drill_passed is True
    assert policy.drill_due_at > timezone.now() + timedelta(days=29)


def test_a_failing_drill_says_why(workload):
    policy = make_policy(workload, rto_minutes=10, rpo_minutes=30)
    version = make_version(workload, created_at=timezone.now() - timedelta(hours=5))
    drill = make_drill(
        policy, version, resumed=False, observed=[("node-0", SHA_A), ("node-1", SHA_B)]
    )
    assert not drill.passed
    reasons = " ".join(drill.failure_reasons)
    assert "The training did not resume." in reasons
    assert "Took 30 min against an RTO of 10 min." in reasons
    # 5 h old at creation − 50 min since the start = 250 min ≥ 3 h: both in hours.
    assert "The restored version was 4.2 h old against an RPO of 0.5 h." in reasons
    assert "Checksums differ on 1 of 2 nodes/replicas (node-1)." in reasons
    assert services.overdue_and_failing_summary()["failing"] == 1


def test_overdue_drills_are_found_by_the_daily_task(workload):
    policy = make_policy(workload, drill_frequency_days=7)
    version = make_version(workload, created_at=timezone.now() - timedelta(days=20))
    make_drill(
        policy,
        version,
        started_at=timezone.now() - timedelta(days=10),
        finished_at=timezone.now() - timedelta(days=10) + timedelta(minutes=20),
        reference_time=version.created_at + timedelta(minutes=30),
    )
    BackupPolicy.objects.filter(pk=policy.pk).update(drill_due_at=None, overdue_since=None)
    assert refresh_drill_schedules_task.apply().get() == 1
    policy.refresh_from_db()
    assert policy.overdue_since is not None
    assert services.overdue_and_failing_summary()["overdue"] == 1
    ranked = list(BackupPolicy.objects.ranked_by_risk())
    assert ranked[0].is_overdue


def test_overdue_and_failing_policies_come_first(pool, workload):
    other = Workload.objects.create(
        name="Other",
        slug="other",
        kind=WorkloadKind.FULL_FINE_TUNE,
        pool=pool,
        gpu_count=8,
        data_parallel=8,
    )
    weak = make_policy(other, covered_items=[])  # 0 % coverage, not yet due
    strong = make_policy(workload, covered_items=["checkpoint_weights"])
    BackupPolicy.objects.filter(pk=strong.pk).update(
        drill_due_at=timezone.now() - timedelta(days=1)
    )
    assert [policy.pk for policy in BackupPolicy.objects.ranked_by_risk()] == [strong.pk, weak.pk]


@pytest.fixture
def inference_workload(pool):
    return Workload.objects.create(
        name="Chat",
        slug="chat",
        kind=WorkloadKind.ONLINE_INFERENCE,
        pool=pool,
        gpu_count=4,
        weight_precision="bf16",
    )


def test_stable_needs_the_previous_stable_still_kept(inference_workload):
    first = make_version(inference_workload, tag="r1", tier="warm")
    second = make_version(inference_workload, tag="r2")
    services.mark_stable(first)
    lines = services.release_lines(inference_workload)
    assert lines[0].stable == first and lines[0].rollback_target is None
    BackupVersion.objects.filter(pk=first.pk).update(tier="cold")
    with pytest.raises(ValidationError, match="keep it in the hot or warm tier"):
        services.mark_stable(second)
    BackupVersion.objects.filter(pk=first.pk).update(tier="warm")
    services.mark_stable(second)
    line = services.release_lines(inference_workload)[0]
    assert line.stable.pk == second.pk and line.rollback_target.pk == first.pk


def test_quantized_variants_are_kept_apart(inference_workload):
    form = BackupVersionForm(
        _version_data(kind="inference_release", precision="int8", data_version="", step=""),
        workload=inference_workload,
    )
    assert not form.is_valid()
    assert "quantized variants" in form.errors["precision"][0]
    assert [choice for choice, _ in form.fields["kind"].choices] == [
        VersionKind.INFERENCE_RELEASE,
        VersionKind.QUANTIZED_VARIANT,
    ]


def test_policy_form_scores_coverage_and_checks_tiers(workload):
    form = BackupPolicyForm(
        {
            "covered_items": ["checkpoint_weights", "optimizer_state"],
            "warm_location": "s3://warm/",
            "rpo_minutes": "60",
            "rto_minutes": "30",
            "drill_frequency_days": "30",
        },
        workload=workload,
    )
    assert not form.is_valid()
    assert "how long the warm tier keeps" in form.errors["warm_retention_count"][0]
    form.data = {**form.data, "warm_retention_days": "30"}
    form = BackupPolicyForm(form.data, workload=workload)
    assert form.is_valid(), form.errors
    policy = form.save()
    assert 0 < policy.coverage_percent < 50
    assert policy.drill_due_at is not None


def test_checkpoint_advice_uses_the_pools_interruptions(workload):
    from apps.pools.models import Interruption

    workload.checkpoint_write_seconds = 120
    workload.checkpoint_interval_minutes = 30
    workload.save()
    policy = make_policy(workload, checkpoint_size_gb=100)
    for days in (3, 6):
        Interruption.objects.create(
            workload=workload,
            occurred_at=timezone.now() - timedelta(days=days),
            cause="hardware",
            restart_minutes=20,
        )
    advice = services.checkpoint_advice(policy)
    assert advice.missing == []
    assert advice.mtbf.failures == 2
    per_gpu = advice.mtbf.observed_gpu_hours * 3600 / 2
    assert advice.mtbf.job_mtbf_seconds == pytest.approx(per_gpu / workload.gpu_count)
    assert advice.mtbf.mean_restart_seconds == 20 * 60
    # The pool's price × the job's GPUs.
    assert advice.job_price_per_hour_usd == pytest.approx(2.99 * 8)
    assert advice.saving_usd_per_month is not None
    assert advice.recommended.lost_fraction <= advice.current.lost_fraction
    policy.mtbf_hours = 10
    assert services.checkpoint_advice(policy).mtbf.job_mtbf_seconds == 36000


def test_demo_seed_is_idempotent(demo):
    from django.core.management import call_command

    from apps.backups.models import RestoreDrill

    counts = (
        BackupPolicy.objects.count(),
        BackupVersion.objects.count(),
        RestoreDrill.objects.count(),
        BackupPolicy.history.count(),
        BackupVersion.history.count(),
        RestoreDrill.history.count(),
    )
    from apps.backups.demo import seed_backups_demo
    from apps.pools.models import Workload

    workloads = {workload.slug: workload for workload in Workload.objects.all()}
    assert seed_backups_demo(workloads=workloads) == {"policies": 0, "versions": 0, "drills": 0}
    call_command("seed_demo", verbosity=0)
    assert counts == (
        BackupPolicy.objects.count(),
        BackupVersion.objects.count(),
        RestoreDrill.objects.count(),
        BackupPolicy.history.count(),
        BackupVersion.history.count(),
        RestoreDrill.history.count(),
    )
    summary = services.overdue_and_failing_summary()
    assert summary["overdue"] >= 1 and summary["failing"] >= 1
    assert RestoreDrill.objects.filter(passed=True).exists()
    coverages = set(BackupPolicy.objects.values_list("coverage_percent", flat=True))
    assert 100 in coverages and min(coverages) < 40


def test_the_form_and_the_api_say_the_same_about_a_version(client, make_user, workload):
    from tests.backups.test_api import _headers, _version_body

    form = BackupVersionForm(_version_data(data_version=""), workload=workload)
    assert not form.is_valid()
    response = client.post(
        "/api/v1/backup-versions/",
        _version_body(workload, data_version=""),
        content_type="application/json",
        headers=_headers(make_user("ops")),
    )
    assert response.status_code == 400
    assert response.json()["data_version"] == form.errors["data_version"]
