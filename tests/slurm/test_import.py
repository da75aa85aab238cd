"""Slurm imports into the database: idempotence, running jobs completed later, the
cluster's time zone, the command, the API and the pages. GPU-hours are computed by hand."""

import io
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from apps.clusters.models import Cluster
from apps.slurm.models import SlurmImport, SlurmJob
from apps.slurm.services import import_sacct
from tests.factories import ClusterFactory, UserFactory

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"
HEADER = "JobID|User|Account|Partition|State|Start|End|Elapsed|NNodes|NodeList|AllocTRES"
# An 8-GPU job on two nodes (3 h), its steps, a 1-GPU array task (30 min) and a running
# heterogeneous component started at 09:00, all in the cluster's local time.
TEXT = "\n".join(
    [
        HEADER,
        "100|alice|physics|gpu|COMPLETED|2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|2|gpu[01-02]|billing=64,cpu=64,gres/gpu:h100=8,gres/gpu=8,node=2",
        "100.batch|||||2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|1|gpu01|cpu=32,gres/gpu:h100=4,gres/gpu=4,node=1",
        "100.extern|||||2026-11-02T08:00:00|2026-11-02T11:00:00|03:00:00|2|gpu[01-02]|billing=64,cpu=64,gres/gpu:h100=8,gres/gpu=8,node=2",
        "101_3|bob|chem|gpu|CANCELLED by 1000|2026-11-02T08:00:00|2026-11-02T08:30:00|"
        "00:30:00|1|gpu03|gres/gpu=1",
        "102+0|carol|physics|gpu|RUNNING|2026-11-02T09:00:00|Unknown|00:10:00|1|gpu04|gres/gpu=2",
        "103|dave|physics|gpu|COMPLETED|2026-11-02T08:00:00|2026-11-02T09:00:00|1:2|1|gpu05|gres/gpu=1",
    ]
)
# 12:00 in Shanghai (UTC+8): the running job has run 3 h.
NOW = datetime(2026, 11, 2, 4, tzinfo=UTC)


@pytest.fixture
def cluster():
    return ClusterFactory(name="Hopper", slug="hopper", timezone="Asia/Shanghai")


def _jobs(cluster):
    return {job.job_id: job for job in SlurmJob.objects.filter(cluster=cluster)}


def test_an_import_stores_jobs_not_steps_and_refuses_the_bad_line(cluster):
    result = import_sacct(cluster, TEXT, now=NOW)
    assert (result.accepted, result.duplicates, result.updated, result.rejected, result.steps) == (
        3,
        0,
        0,
        1,
        2,
    )
    assert result.error_data() == [
        {"line": 7, "message": "line 7: Elapsed '1:2' is not D-HH:MM:SS, HH:MM:SS or MM:SS.mmm"}
    ]
    jobs = _jobs(cluster)
    assert sorted(jobs) == ["100", "101_3", "102+0"]
    shanghai = ZoneInfo("Asia/Shanghai")
    big = jobs["100"]
    assert big.start == datetime(2026, 11, 2, 8, tzinfo=shanghai)
    assert big.start == datetime(2026, 11, 2, 0, tzinfo=UTC)
    assert (big.gpus, big.gpu_type, big.nodes, big.billing) == (8, "h100", 2, "64")
    assert big.node_names == ["gpu01", "gpu02"]
    # 8 GPUs × 3 h; the .extern row's 8 GPUs are not added.
    assert big.gpu_hours == Decimal(8 * 3)
    cancelled = jobs["101_3"]
    assert (cancelled.state, cancelled.state_raw) == ("CANCELLED", "CANCELLED by 1000")
    assert cancelled.gpu_hours == Decimal("0.5")  # 1 GPU × 1,800 s ÷ 3,600
    running = jobs["102+0"]
    assert running.end is None
    # Counted to the import: 09:00 to 12:00 Shanghai time is 10,800 s, not sacct's 600.
    assert running.elapsed_seconds == Decimal(3 * 3600)
    assert running.gpu_hours == Decimal(2 * 3)
    assert SlurmJob.objects.filter(cluster=cluster).gpu_hours_total() == Decimal(24 + 0.5 + 6)
    record = SlurmImport.objects.get()
    assert (record.accepted, record.rejected, record.steps) == (3, 1, 2)
    assert record.errors[0]["line"] == 7


def test_the_same_text_twice_adds_nothing(cluster):
    import_sacct(cluster, TEXT, now=NOW)
    before = list(SlurmJob.objects.order_by("job_id").values())
    result = import_sacct(cluster, TEXT, now=datetime(2026, 11, 2, 6, tzinfo=UTC))
    assert (result.accepted, result.duplicates, result.updated, result.rejected) == (0, 3, 0, 1)
    after = list(SlurmJob.objects.order_by("job_id").values())
    assert [{**row, "last_import_id": 0} for row in after] == [
        {**row, "last_import_id": 0} for row in before
    ]


def test_a_later_import_completes_a_running_job(cluster):
    import_sacct(cluster, TEXT, now=NOW)
    ended = "\n".join(
        [
            HEADER,
            "102+0|carol|physics|gpu|COMPLETED|2026-11-02T09:00:00|2026-11-02T13:30:00|04:30:00|1|gpu04|gres/gpu=2",
        ]
    )
    result = import_sacct(cluster, ended, now=datetime(2026, 11, 2, 6, tzinfo=UTC))
    assert (result.accepted, result.duplicates, result.updated) == (0, 0, 1)
    job = SlurmJob.objects.get(cluster=cluster, job_id="102+0")
    assert job.state == "COMPLETED"
    assert job.end == datetime(2026, 11, 2, 13, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
    # 2 GPUs × 4.5 h.
    assert job.gpu_hours == Decimal(9)
    assert SlurmJob.objects.filter(cluster=cluster).count() == 3


def test_the_same_job_id_on_two_clusters_is_two_jobs(cluster):
    other = ClusterFactory()
    import_sacct(cluster, TEXT, now=NOW)
    import_sacct(other, TEXT, now=NOW)
    assert SlurmJob.objects.filter(job_id="100").count() == 2


def test_a_job_twice_in_one_text_is_refused_on_its_second_line(cluster):
    text = "\n".join([HEADER, *TEXT.splitlines()[1:2] * 2])
    result = import_sacct(cluster, text, now=NOW)
    assert result.accepted == 1
    assert result.error_data()[0]["line"] == 3
    assert "already on line 2" in result.error_data()[0]["message"]


def test_real_lines_import_with_their_hand_computed_gpu_hours(cluster):
    text = (DATA / "lazyslurm_array_task_a100.txt").read_text()
    result = import_sacct(cluster, text, now=NOW)
    assert (result.accepted, result.steps, result.rejected) == (1, 4, 0)
    job = SlurmJob.objects.get(cluster=cluster)
    # 1 A100 × 1,022 s ÷ 3,600 = 0.283888… → 0.283889 GPU-h.
    assert (job.job_id, job.gpus, job.gpu_type) == ("2736118_0", 1, "a100")
    assert job.gpu_hours == Decimal("0.283889")


def test_the_command_imports_a_file_and_names_the_known_clusters(cluster, tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(TEXT)
    out, err = io.StringIO(), io.StringIO()
    call_command("import_slurm", str(path), cluster="hopper", stdout=out, stderr=err)
    assert "3 added, 0 updated, 0 duplicates, 1 refused, 2 step rows" in out.getvalue()
    assert "line 7: Elapsed '1:2'" in err.getvalue()
    with pytest.raises(
        CommandError, match="No cluster is named 'nowhere'. Known clusters: .*Hopper"
    ):
        call_command("import_slurm", str(path), cluster="nowhere", stdout=out, stderr=err)
    call_command(
        "import_slurm", str(path), cluster="Nowhere", create_cluster=True, stdout=out, stderr=err
    )
    created = Cluster.objects.get(name="Nowhere")
    assert created.kind == Cluster.Kind.SLURM
    assert created.slurm_jobs.count() == 3


def test_the_api_imports_for_ops_and_refuses_readers(cluster):
    client = APIClient()
    client.force_authenticate(UserFactory(role="reader"))
    url = reverse("api-slurm-jobs")
    assert client.post(url, {"cluster": "hopper", "text": TEXT}, format="json").status_code == 403
    client.force_authenticate(UserFactory(role="ops"))
    response = client.post(url, {"cluster": "hopper", "text": TEXT}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() == {
        "accepted": 3,
        "duplicates": 0,
        "updated": 0,
        "rejected": 1,
        "steps": 2,
        "errors": [
            {"line": 7, "message": "line 7: Elapsed '1:2' is not D-HH:MM:SS, HH:MM:SS or MM:SS.mmm"}
        ],
    }
    again = client.post(url, {"cluster": "hopper", "text": TEXT}, format="json").json()
    assert (again["accepted"], again["duplicates"]) == (0, 3)
    bad = client.post(url, {"cluster": "hopper", "text": "nothing"}, format="json")
    assert bad.status_code == 422
    unknown = client.post(url, {"cluster": "nowhere", "text": TEXT}, format="json")
    assert unknown.status_code == 400 and "cluster" in unknown.json()


def test_the_api_lists_and_filters_jobs(cluster):
    import_sacct(cluster, TEXT, now=NOW)
    import_sacct(ClusterFactory(slug="other"), TEXT, now=NOW)
    client = APIClient()
    client.force_authenticate(UserFactory(role="reader"))
    url = reverse("api-slurm-jobs")
    body = client.get(url, {"cluster": "hopper", "account": "physics"}).json()
    rows = {row["job_id"]: row for row in body["results"]}
    assert sorted(rows) == ["100", "102+0"]
    assert rows["100"]["gpu_hours"] == "24.000000"
    assert rows["100"]["gpus"] == 8 and rows["100"]["nodes"] == 2
    assert rows["100"]["start"] == "2026-11-02T00:00:00Z"
    assert rows["100"]["workload"] is None and rows["100"]["team"] is None
    assert rows["102+0"]["end"] is None
    assert client.get(url, {"user": "bob"}).json()["count"] == 2
    # Running at or after 03:00 UTC (11:00 Shanghai): only the running job on each cluster.
    after = client.get(url, {"cluster": "hopper", "start": "2026-11-02T03:00:00Z"}).json()
    assert [row["job_id"] for row in after["results"]] == ["102+0"]
    before = client.get(url, {"cluster": "hopper", "end": "2026-11-02T00:30:00Z"}).json()
    assert sorted(row["job_id"] for row in before["results"]) == ["100", "101_3"]
    assert client.get(url, {"cluster": "nowhere"}).status_code == 400
    assert APIClient().get(url).status_code in (401, 403)


def test_the_upload_page_shows_counts_and_refused_lines(client, cluster):
    client.force_login(UserFactory(role="reader"))
    assert client.get(reverse("slurm:import")).status_code == 403
    client.force_login(UserFactory(role="lead"))
    page = client.get(reverse("slurm:import") + "?cluster=hopper")
    assert page.status_code == 200
    upload = io.BytesIO(TEXT.encode())
    upload.name = "sacct.txt"
    response = client.post(
        reverse("slurm:import"), {"cluster": "hopper", "file": upload, "text": ""}, follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-count="accepted">3<' in html
    assert 'data-count="rejected">1<' in html
    assert "line 7: Elapsed &#x27;1:2&#x27; is not D-HH:MM:SS" in html
    record = SlurmImport.objects.get()
    assert (record.file_name, record.source) == ("sacct.txt", SlurmImport.Source.UPLOAD)
    empty = client.post(reverse("slurm:import"), {"cluster": "hopper", "text": "  "})
    assert "Upload a file or paste" in empty.content.decode()


def test_the_jobs_page_lists_sorts_filters_and_has_an_empty_state(client, cluster):
    client.force_login(UserFactory(role="reader"))
    empty = client.get(reverse("slurm:job_list")).content.decode()
    assert "No Slurm jobs yet" in empty
    import_sacct(cluster, TEXT, now=NOW)
    page = client.get(reverse("slurm:job_list"), {"sort": "-gpu_hours"}).content.decode()
    assert page.index(">100<") < page.index(">102+0<") < page.index(">101_3<")
    # 24 + 0.5 + 6 GPU-hours in all.
    assert "30.50 GPU-h" in page
    filtered = client.get(reverse("slurm:job_list"), {"user": "bob"}).content.decode()
    assert ">101_3<" in filtered and ">100<" not in filtered
    assert "0.50 GPU-h" in filtered
    none = client.get(reverse("slurm:job_list"), {"user": "nobody"}).content.decode()
    assert "No job matches" in none


def test_the_upload_page_refuses_text_that_is_not_utf8_and_both_inputs(client, cluster):
    client.force_login(UserFactory(role="ops"))
    readable = b"JobID|AllocTRES|Elapsed\n1|gres/gpu=1|"
    upload = io.BytesIO(readable + b"\xff\n")
    upload.name = "latin1.txt"
    response = client.post(reverse("slurm:import"), {"cluster": "hopper", "file": upload})
    # The first byte that is not UTF-8 is the one after the readable ones (24 + 13 = 37).
    assert len(readable) == 37
    assert "The file is not UTF-8 text (byte 37)." in response.content.decode()
    upload.seek(0)
    both = client.post(reverse("slurm:import"), {"cluster": "hopper", "file": upload, "text": TEXT})
    assert "Upload a file or paste text, not both." in both.content.decode()
    assert not SlurmImport.objects.exists()


def test_the_admin_lists_clusters_imports_and_jobs(client, cluster):
    import_sacct(cluster, TEXT, now=NOW)
    client.force_login(UserFactory(role="admin"))
    for name in ("clusters_cluster", "slurm_slurmimport", "slurm_slurmjob"):
        assert client.get(reverse(f"admin:{name}_changelist")).status_code == 200
