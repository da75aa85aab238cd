"""Settings of the gunicorn that bench/scale_web.py starts: the production settings
unchanged, with a URL conf that adds the benchmark's bare view (bench/web_urls.py)."""

from config.settings_production import *  # noqa: F403

ROOT_URLCONF = "bench.web_urls"
