"""Region criteria beside cost: RTTs read from real ping and mtr output
(tests/data/network-rtt, tests/data/SOURCES.md), the misses of hand-made options, the
marks on the page, in the API and in every export, the form's errors and team scope."""

import csv
import html
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse
from openpyxl import load_workbook
from pypdf import PdfReader

from apps.procurement.comparison.regions import (
    RegionCriteria,
    Requirements,
    RttParseError,
    misses,
    parse_mtr_last_hop_avg_rtt_ms,
    parse_ping_avg_rtt_ms,
    parse_rtt_ms,
)
from apps.procurement.comparison.services import build_comparison
from apps.procurement.forms import OptionForm, ScenarioForm
from apps.procurement.models import ComparisonExport, OptionRegionRtt, Scenario, UserRegion
from tests.factories import ScenarioFactory, TeamFactory, UserFactory

DATA = Path(__file__).resolve().parents[1] / "data" / "network-rtt"


def _sample(name: str) -> str:
    return (DATA / name).read_text()


# --- Parsers on the real samples --------------------------------------------------------


def test_ping_average_is_read_from_the_iputils_summary_line():
    # "rtt min/avg/max/mdev = 105.317/105.326/105.336/0.009 ms" (last line of the sample)
    assert parse_ping_avg_rtt_ms(_sample("ping_iputils_lab_ipv4.txt")) == 105.326
    # "rtt min/avg/max/mdev = 14.492/15.447/17.837/0.927 ms", after a ^C line
    assert parse_ping_avg_rtt_ms(_sample("ping_iputils_baidu.txt")) == 15.447


def test_mtr_report_gives_the_average_of_the_last_hop():
    # "3.|-- 100.64.100.7  0.0%  3  100.7 134.0 100.5 200.8  57.9": Avg 134.0, not hop 2's 151.7
    assert parse_mtr_last_hop_avg_rtt_ms(_sample("mtr_report_lab_three_hops.txt")) == 134.0
    # "3.|-- 2620:0:860:4:fe00::2  0.0%  3  100.7 129.3 …": Avg 129.3
    assert parse_mtr_last_hop_avg_rtt_ms(_sample("mtr_report_lab_ipv6.txt")) == 129.3


def test_either_output_is_recognised():
    assert parse_rtt_ms(_sample("ping_iputils_baidu.txt")) == 15.447
    assert parse_rtt_ms(_sample("mtr_report_lab_three_hops.txt")) == 134.0


def test_parse_errors_name_the_line_and_what_was_expected():
    lines = _sample("mtr_report_lab_three_hops.txt").splitlines()
    lines[4] = "  3.|-- 100.64.100.7               0.0%     3  100.7"  # the numbers cut off
    with pytest.raises(RttParseError, match="Line 5: hop 3 has no .*Loss% Snt Last Avg"):
        parse_mtr_last_hop_avg_rtt_ms("\n".join(lines))
    with pytest.raises(RttParseError, match="Line 2: the header is not followed by any hop"):
        parse_mtr_last_hop_avg_rtt_ms("\n".join(lines[:2]))
    ping = _sample("ping_iputils_lab_ipv4.txt").splitlines()
    with pytest.raises(RttParseError, match="rtt min/avg/max/mdev"):
        parse_ping_avg_rtt_ms("\n".join(ping[:-1]))
    lost = "--- 10.0.0.9 ping statistics ---\n2 packets transmitted, 0 received, 100% packet loss"
    with pytest.raises(RttParseError, match="Line 2: no reply was received"):
        parse_ping_avg_rtt_ms(lost)


# --- Misses of hand-made options --------------------------------------------------------

REQUIREMENTS = Requirements(
    min_ddos_protection_gbps=50,
    accepted_line_types={"bgp": "BGP (multi-carrier)", "cn2_gia": "CN2 GIA"},
    no_icp_filing=True,
    min_ip_address_count=4,
    max_rtt_ms_by_region={"Shanghai users": 60},
)


def test_an_option_meeting_everything_has_no_misses():
    criteria = RegionCriteria(
        ddos_protection_gbps=100,
        line_type="cn2_gia",
        ip_address_count=8,
        needs_icp_filing=False,
        rtt_ms_by_region={"Shanghai users": 60},  # at the limit is within it
    )
    assert misses(criteria, REQUIREMENTS) == ()


def test_each_miss_names_the_requirement_and_by_how_much():
    criteria = RegionCriteria(
        ddos_protection_gbps=20,
        line_type="international",
        line_type_label="International transit",
        ip_address_count=2,
        needs_icp_filing=True,
        rtt_ms_by_region={"Shanghai users": 74},
    )
    assert [miss.message for miss in misses(criteria, REQUIREMENTS)] == [
        "DDoS protection 20 Gbps < 50 Gbps required",
        "Line type International transit not accepted (BGP (multi-carrier), CN2 GIA accepted)",
        "Needs an ICP filing (备案); the scenario allows none",
        "2 IP addresses < 4 required",
        "RTT to Shanghai users 74 ms > 60 ms required",
    ]
    assert not any(miss.not_stated for miss in misses(criteria, REQUIREMENTS))


def test_an_unknown_criterion_is_not_stated_never_a_pass():
    found = misses(RegionCriteria(), REQUIREMENTS)
    assert [miss.criterion for miss in found] == [
        "ddos",
        "line_type",
        "icp_filing",
        "ip_addresses",
        "rtt:Shanghai users",
    ]
    assert all(miss.not_stated for miss in found)
    assert found[-1].message == "RTT to Shanghai users not stated (60 ms required)"


def test_no_requirements_means_no_misses():
    assert misses(RegionCriteria(), Requirements()) == ()
    assert not Requirements().any


# --- The scenario: page, API, exports ---------------------------------------------------


@pytest.fixture
def with_requirements(scenario):
    """Requirements on the conftest scenario: "Rent H100" (US) misses the RTT by 14 ms,
    "Hybrid H100" (Beijing) states nothing and needs an ICP filing."""
    scenario.min_ddos_protection_gbps = Decimal("50")
    scenario.no_icp_filing = True
    scenario.save()
    shanghai = UserRegion.objects.create(
        scenario=scenario, name="Shanghai users", max_rtt_ms=Decimal("60")
    )
    rent = scenario.options.get(name="Rent H100")
    rent.ddos_protection_gbps = Decimal("100")
    rent.line_type = "bgp"
    rent.save()
    OptionRegionRtt.objects.create(option=rent, region=shanghai, rtt_ms=Decimal("74"))
    return scenario


RENT_MISS = "RTT to Shanghai users 74 ms > 60 ms required"
HYBRID_MISSES = (
    "DDoS protection not stated (50 Gbps required)",
    "Needs an ICP filing (备案); the scenario allows none",
    "RTT to Shanghai users not stated (60 ms required)",
)


@pytest.mark.django_db
def test_the_comparison_marks_misses_and_keeps_every_cost(with_requirements):
    result = build_comparison(with_requirements)
    by_name = {row.option.name: row for row in result.rows}
    assert [miss.message for miss in by_name["Rent H100"].misses] == [RENT_MISS]
    assert tuple(miss.message for miss in by_name["Hybrid H100"].misses) == HYBRID_MISSES
    # Cost figures are those without requirements (tests/procurement/test_exports.py).
    assert round(by_name["Rent H100"].result.total_cost) == 7300
    assert round(by_name["Hybrid H100"].result.total_cost) == 5840


@pytest.mark.django_db
def test_the_page_marks_misses_and_filters_to_those_meeting_all(
    procurement_client, with_requirements
):
    url = reverse("procurement:scenario_detail", args=[with_requirements.slug])
    page = html.unescape(procurement_client.get(url).content.decode())
    assert RENT_MISS in page
    for message in HYBRID_MISSES:
        assert message in page
    assert 'data-option="Rent H100"' in page and 'data-option="Hybrid H100"' in page
    filtered = procurement_client.get(url, {"meets": "all"}).content.decode()
    assert 'data-option="Rent H100"' not in filtered
    assert 'data-option="Hybrid H100"' not in filtered
    rent = with_requirements.options.get(name="Rent H100")
    rent.rtts.update(rtt_ms=Decimal("41"))
    filtered = procurement_client.get(url, {"meets": "all"}).content.decode()
    assert 'data-option="Rent H100"' in filtered
    assert 'data-meets="Rent H100"' in filtered


@pytest.mark.django_db
def test_the_api_reads_criteria_requirements_and_misses(procurement_client, with_requirements):
    data = procurement_client.get(
        reverse("scenario-detail", kwargs={"slug": with_requirements.slug})
    ).json()
    assert data["min_ddos_protection_gbps"] == "50.0"
    assert data["no_icp_filing"] is True
    assert data["user_regions"] == [{"name": "Shanghai users", "max_rtt_ms": "60.0"}]
    lines = {line["option"]["name"]: line for line in data["comparison"]["options"]}
    rent = lines["Rent H100"]
    assert rent["option"]["line_type"] == "bgp"
    assert rent["option"]["rtts"] == [{"region": "Shanghai users", "rtt_ms": "74.0"}]
    assert rent["misses"] == [
        {"criterion": "rtt:Shanghai users", "message": RENT_MISS, "not_stated": False}
    ]
    assert rent["meets_requirements"] is False
    assert [miss["not_stated"] for miss in lines["Hybrid H100"]["misses"]] == [True, False, True]


def _export(client, scenario, export_format, capture):
    with capture(execute=True):
        client.post(
            reverse("procurement:export_create", args=[scenario.slug]), {"format": export_format}
        )
    export = ComparisonExport.objects.filter(format=export_format).latest("pk")
    export.refresh_from_db()
    assert export.status == "succeeded", export.message
    download = client.get(reverse("procurement:export_download", args=[export.pk]))
    return b"".join(download.streaming_content)


@pytest.mark.django_db
def test_every_export_carries_the_marks(
    procurement_client,
    with_requirements,
    media_root,
    eager_celery,
    django_capture_on_commit_callbacks,
):
    capture = django_capture_on_commit_callbacks
    rows = list(
        csv.reader(
            io.StringIO(
                _export(procurement_client, with_requirements, "csv", capture).decode("utf-8-sig")
            )
        )
    )
    column = rows[0].index("Requirements missed")
    cells = {row[0]: row[column] for row in rows[1:3]}
    assert cells["Rent H100"] == RENT_MISS
    assert cells["Hybrid H100"] == "; ".join(HYBRID_MISSES)

    workbook = load_workbook(
        io.BytesIO(_export(procurement_client, with_requirements, "xlsx", capture))
    )
    sheet = workbook["Comparison"]
    headers = [cell.value for cell in sheet[1]]
    column = headers.index("Requirements missed")
    cells = {row[0].value: row[column].value for row in sheet.iter_rows(min_row=2, max_row=3)}
    assert cells["Rent H100"] == RENT_MISS
    assert cells["Hybrid H100"] == "; ".join(HYBRID_MISSES)

    content = _export(procurement_client, with_requirements, "pdf", capture)
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)
    text = " ".join(text.split())
    assert "Requirements missed" in text
    assert f"Rent H100: {RENT_MISS}" in text
    assert "DDoS protection not stated (50 Gbps required)" in text


# --- Forms ------------------------------------------------------------------------------


def _option_data(scenario, **values):
    option = scenario.options.get(name="Rent H100")
    data = {
        "name": "Rent H100 again",
        "kind": "on_demand",
        "position": 3,
        "compliance_zone": "hong_kong",
        "gpu_model": option.gpu_model_id,
        "on_demand_price_per_gpu_hour": "2",
        "hybrid_baseline": "reserved",
        "throughput_basis": "dense_peak",
        "efficiency": "0.4",
    }
    data.update(values)
    return data


@pytest.mark.django_db
def test_the_option_form_reads_rtt_from_pasted_mtr_output(with_requirements):
    region = with_requirements.user_regions.get()
    form = OptionForm(
        _option_data(
            with_requirements,
            ddos_protection_gbps="80",
            line_type="cn2_gia",
            ip_address_count="4",
            **{f"rtt_output_{region.pk}": _sample("mtr_report_lab_three_hops.txt")},
        ),
        scenario=with_requirements,
    )
    assert form.is_valid(), form.errors
    option = form.save()
    assert option.rtts.get().rtt_ms == Decimal("134.0")
    assert option.line_type == "cn2_gia"


@pytest.mark.django_db
def test_option_form_errors_name_the_field(with_requirements):
    region = with_requirements.user_regions.get()
    broken = "HOST: server1  Loss%   Snt   Last   Avg  Best  Wrst StDev\n  1.|-- 10.0.0.1  0.0%"
    form = OptionForm(
        _option_data(
            with_requirements,
            ddos_protection_gbps="-1",
            line_type="dial-up",
            **{f"rtt_output_{region.pk}": broken},
        ),
        scenario=with_requirements,
    )
    assert not form.is_valid()
    assert "ddos_protection_gbps" in form.errors
    assert "line_type" in form.errors
    assert "Line 2: hop 1 has no" in form.errors[f"rtt_output_{region.pk}"][0]
    assert not OptionRegionRtt.objects.filter(option__name="Rent H100 again").exists()


def _scenario_data(scenario, **values):
    data = {
        "name": scenario.name,
        "slug": scenario.slug,
        "horizon_months": 1,
        "currency": "USD",
        "usd_exchange_rate": "1",
        "demand_source": "measured_pool",
        "demand_pool": scenario.demand_pool_id,
        "window_days": 7,
        "reference_efficiency": "0.4",
        "compute_precision": "bf16",
    }
    data.update(values)
    return data


@pytest.mark.django_db
def test_the_scenario_form_saves_requirements_and_user_regions(with_requirements, make_user):
    form = ScenarioForm(
        _scenario_data(
            with_requirements,
            user_regions_text="Shanghai users: 45\nSingapore users\n",
            accepted_line_types=["bgp", "cn2_gia"],
            min_ip_address_count="2",
        ),
        instance=with_requirements,
        user=make_user("procurement"),
    )
    assert form.is_valid(), form.errors
    scenario = form.save()
    assert scenario.accepted_line_types == ["bgp", "cn2_gia"]
    regions = {region.name: region.max_rtt_ms for region in scenario.user_regions.all()}
    assert regions == {"Shanghai users": Decimal("45.0"), "Singapore users": None}
    # Shanghai was kept by name: the option's time to it stays.
    assert OptionRegionRtt.objects.filter(region__name="Shanghai users").count() == 1


@pytest.mark.django_db
def test_scenario_form_errors_name_the_field_and_line(with_requirements, make_user):
    form = ScenarioForm(
        _scenario_data(
            with_requirements,
            user_regions_text="Shanghai users: 60\nBeijing users: fast",
            accepted_line_types=["carrier-pigeon"],
            min_ddos_protection_gbps="-5",
        ),
        instance=with_requirements,
        user=make_user("procurement"),
    )
    assert not form.is_valid()
    assert "Line 2: “fast” is not a number of milliseconds" in form.errors["user_regions_text"][0]
    assert "accepted_line_types" in form.errors
    assert "min_ddos_protection_gbps" in form.errors


# --- Team scope ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_another_teams_scenario_with_requirements_still_answers_404(client):
    vision, speech = TeamFactory(name="Vision team"), TeamFactory(name="Speech team")
    scenario = ScenarioFactory(name="Vision purchase", team=vision, demand_pool__team=vision)
    scenario.min_ip_address_count = 2
    scenario.save()
    UserRegion.objects.create(scenario=scenario, name="Shanghai users", max_rtt_ms=60)
    urls = [
        reverse("procurement:scenario_detail", kwargs={"slug": scenario.slug}),
        reverse("procurement:scenario_detail", kwargs={"slug": scenario.slug}) + "?meets=all",
        reverse("scenario-detail", kwargs={"slug": scenario.slug}),
    ]
    client.force_login(UserFactory(teams=[speech]))
    for url in urls:
        assert client.get(url).status_code == 404, url
    listed = client.get(reverse("scenario-list")).json()
    names = [item["name"] for item in listed.get("results", listed)]
    assert "Vision purchase" not in names
    client.force_login(UserFactory(teams=[vision]))
    assert client.get(urls[1]).status_code == 200


@pytest.mark.django_db
def test_the_demo_scenario_shows_the_marks(procurement_client, demo):
    from apps.procurement.demo import SCENARIO_SLUG

    page = html.unescape(
        procurement_client.get(
            reverse("procurement:scenario_detail", args=[SCENARIO_SLUG])
        ).content.decode()
    )
    assert "DDoS protection 20 Gbps < 50 Gbps required" in page
    assert "RTT to Singapore users 92 ms > 80 ms required" in page
    assert "RTT to Shanghai users 74 ms > 60 ms required" in page
    assert "Line type not stated" in page
    assert 'data-meets="Cloud reserved · L40S · Hong Kong (1 year)"' in page


@pytest.mark.django_db
def test_the_option_page_offers_each_user_regions_rtt_and_shows_a_paste_error(
    procurement_client, with_requirements
):
    rent = with_requirements.options.get(name="Rent H100")
    region = with_requirements.user_regions.get()
    url = reverse("procurement:option_edit", args=[with_requirements.slug, rent.pk])
    page = html.unescape(procurement_client.get(url).content.decode())
    assert "RTT from Shanghai users (ms)" in page
    assert 'value="74.0"' in page
    data = _option_data(with_requirements, name="Rent H100", position=1)
    data[f"rtt_output_{region.pk}"] = _sample("ping_iputils_lab_ipv4.txt").splitlines()[0]
    response = procurement_client.post(url, data)
    assert response.status_code == 200
    assert "rtt min/avg/max/mdev" in html.unescape(response.content.decode())
    assert rent.rtts.get().rtt_ms == Decimal("74.0")  # nothing half-saved
    data[f"rtt_output_{region.pk}"] = _sample("ping_iputils_baidu.txt")
    assert procurement_client.post(url, data).status_code == 302
    assert rent.rtts.get().rtt_ms == Decimal("15.4")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("NaN", "is not a number of milliseconds"),
        ("Infinity", "is not a number of milliseconds"),
        ("1e3", "is not a number of milliseconds"),
        ("1,4", "is not a number of milliseconds"),
        ("-3", "cannot be negative"),
        ("60.25", "at most 999,999.9 ms, to 0.1 ms"),
        ("10000000", "at most 999,999.9 ms, to 0.1 ms"),
    ],
)
def test_a_user_region_limit_is_a_plain_number_the_column_holds(
    with_requirements, make_user, limit, message
):
    """What the RTT column (7 digits, one after the point) cannot hold is refused on its
    line, never a 500 or a value cut on the way in."""
    form = ScenarioForm(
        _scenario_data(with_requirements, user_regions_text=f"Shanghai users: {limit}"),
        instance=with_requirements,
        user=make_user("procurement"),
    )
    assert not form.is_valid()
    assert "Line 1: " in form.errors["user_regions_text"][0]
    assert message in form.errors["user_regions_text"][0]


@pytest.mark.django_db
def test_the_recommendation_says_what_the_cheapest_misses_and_what_meets_all(demo):
    from apps.procurement.demo import SCENARIO_SLUG

    result = build_comparison(Scenario.objects.get(slug=SCENARIO_SLUG))
    costed = [row for row in result.rows if row.result is not None]
    cheapest = min(costed, key=lambda row: row.result.total_cost)
    meeting = min((row for row in costed if not row.misses), key=lambda row: row.result.total_cost)
    assert cheapest.misses and cheapest is not meeting
    reason = result.comparison.reasons[-1]
    assert reason.startswith(f"{cheapest.option.name}, the cheapest, misses: ")
    assert reason.endswith(
        f"The cheapest that meets every requirement is {meeting.option.name} at "
        f"{meeting.result.total_cost:,.0f} USD."
    )


@pytest.mark.django_db
def test_a_region_renamed_only_in_case_keeps_its_options_times(with_requirements, make_user):
    form = ScenarioForm(
        _scenario_data(with_requirements, user_regions_text="SHANGHAI users: 60"),
        instance=with_requirements,
        user=make_user("procurement"),
    )
    assert form.is_valid(), form.errors
    scenario = form.save()
    (region,) = scenario.user_regions.all()
    assert region.name == "SHANGHAI users"
    # The option's 74 ms to it stays, and still misses the 60 ms asked.
    assert list(OptionRegionRtt.objects.values_list("region__name", "rtt_ms")) == [
        ("SHANGHAI users", Decimal("74.0"))
    ]


@pytest.mark.django_db
def test_an_options_rtt_fields_read_plain_numbers_as_every_number_field(with_requirements):
    rent = with_requirements.options.get(name="Rent H100")
    region = with_requirements.user_regions.get()
    form = OptionForm(
        {
            **_option_data(with_requirements, name="Rent H100", position=1),
            f"rtt_ms_{region.pk}": "7,4",
        },
        instance=rent,
        scenario=with_requirements,
    )
    widget = form.fields[f"rtt_ms_{region.pk}"].widget
    # A text input with Tabler's class: Chromium's number input would drop the comma.
    assert widget.input_type == "text" and "form-control" in widget.attrs["class"]
    assert "form-control" in form.fields[f"rtt_output_{region.pk}"].widget.attrs["class"]
    assert not form.is_valid()
    assert "decimal point" in form.errors[f"rtt_ms_{region.pk}"][0]
