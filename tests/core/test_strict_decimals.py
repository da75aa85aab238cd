"""Decimals in request bodies are strings, as the OpenAPI schema says (schemathesis found
a JSON number accepted for ``memory_gb``)."""

import pytest
from django.urls import reverse

GPU = {
    "slug": "test-gpu",
    "name": "Test GPU",
    "vendor": "NVIDIA",
    "memory_gb": "80.0",
    "memory_bandwidth_gb_per_second": "3350",
    "bf16_dense_tflops": "989",
    "tdp_watts": 700,
}


@pytest.mark.django_db
@pytest.mark.parametrize(("memory_gb", "status"), [("80.0", 201), (80, 400), (80.5, 400)])
def test_decimal_fields_take_strings_only(client, make_user, memory_gb, status):
    client.force_login(make_user("lead"))
    response = client.post(
        reverse("gpu-model-list"), {**GPU, "memory_gb": memory_gb}, content_type="application/json"
    )
    assert response.status_code == status, response.content
    if status == 400:
        assert "memory_gb" in response.json()
