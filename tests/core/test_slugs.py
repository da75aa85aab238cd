"""Slugs from names in Chinese: pinyin syllables joined by hyphens, as the form fills an
empty slug. Expected spellings are the Hanyu Pinyin readings of the names (Xiandai Hanyu
Cidian): 北京 běi jīng, 推理 tuī lǐ, 池 chí, 还是 hái shì, 重庆 chóng qìng."""

import pytest
from django.urls import reverse

from apps.core.slugs import slug_from_name
from apps.procurement.models import Scenario


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("北京推理池", "bei-jing-tui-li-chi"),
        ("北京推理：租还是买", "bei-jing-tui-li-zu-hai-shi-mai"),
        ("重庆", "chong-qing"),
        ("上海 H800 训练集群", "shang-hai-h800-xun-lian-ji-qun"),
        ("Asia chat: three years", "asia-chat-three-years"),
        ("：！", ""),
    ],
)
def test_a_name_in_any_script_becomes_an_ascii_slug(name, slug):
    assert slug_from_name(name) == slug


def test_a_long_name_is_cut_on_a_syllable_boundary():
    slug = slug_from_name("北京推理池" * 6, max_length=20)
    # 20 characters of "bei-jing-tui-li-chi-bei-…" end inside "bei": the cut drops it.
    assert slug == "bei-jing-tui-li-chi"
    assert len(slug) <= 20


@pytest.mark.django_db
def test_a_purely_chinese_scenario_name_saves_without_a_slug(client, make_user, gpu_model):
    client.force_login(make_user("procurement"))
    response = client.post(
        reverse("procurement:scenario_create"),
        {
            "name": "北京推理：租还是买",
            "horizon_months": "36",
            "currency": "USD",
            "usd_exchange_rate": "1",
            "demand_source": "entered",
            "entered_gpu_hours_per_month": "1000",
            "reference_gpu_model": gpu_model.pk,
            "window_days": "14",
            "reference_efficiency": "0.4",
            "compute_precision": "bf16",
        },
    )
    scenario = Scenario.objects.filter(name="北京推理：租还是买").first()
    assert scenario is not None, response.content.decode()[:3000]
    assert scenario.slug == "bei-jing-tui-li-zu-hai-shi-mai"
    assert client.get(scenario.get_absolute_url()).status_code == 200
