# syntax=docker/dockerfile:1
# gpufleet production image: gunicorn serves the app, whitenoise serves the static files.
# The same image runs the Celery worker and beat (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 gpufleet \
    && useradd --system --uid 10001 --gid gpufleet --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin gpufleet

WORKDIR /app

# README* is optional: pyproject.toml names README.md, but the build only warns without it.
COPY pyproject.toml README* ./
COPY config ./config
COPY apps ./apps
RUN pip install . \
    && rm -rf build ./*.egg-info

COPY manage.py ./
COPY templates ./templates
COPY static ./static

# config/settings.py derives BASE_DIR (templates/, static/, var/) from its own location,
# so the code must run from /app, not from the copy pip put in site-packages:
# PYTHONPATH puts /app first for gunicorn, celery and manage.py alike.
ENV DJANGO_SETTINGS_MODULE=config.settings_production \
    PYTHONPATH=/app \
    STATIC_ROOT=/app/staticfiles

# The key and hosts below exist for this one build step only; the running container
# must be given real ones (settings_production refuses to start without SECRET_KEY).
RUN SECRET_KEY=collectstatic-build-step-only ALLOWED_HOSTS=localhost \
        python manage.py collectstatic --noinput \
    && mkdir -p /app/var/media \
    && chown -R gpufleet:gpufleet /app/var

USER gpufleet

EXPOSE 8000

# /healthz is exempt from the HTTPS redirect, but it must still pass ALLOWED_HOSTS:
# send the first allowed host as Host (a leading-dot entry without its dot, * as localhost).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; h = (os.environ.get('ALLOWED_HOSTS') or 'localhost').split(',')[0].strip().lstrip('.'); h = 'localhost' if h in ('', '*') else h; r.urlopen(r.Request('http://127.0.0.1:8000/healthz', headers={'Host': h}), timeout=5)"]

CMD ["gunicorn", "config.wsgi:application", "--config", "python:config.gunicorn", "--bind", "0.0.0.0:8000", "--access-logfile", "-"]
