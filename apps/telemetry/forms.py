"""Upload forms for telemetry and request logs, hostname rules, and the triage form.

The forms check what can be checked before the file is read whole (mapping syntax and
field names, time zone, size) and what its first few KiB say: its format, when asked to
detect it or when it contradicts the chosen one, and a generic CSV's headers against the
mapping. The rows themselves are checked by the parsers in the import task, which name
the line. A file that arrived with a form that has errors is kept (apps/telemetry/
kept_uploads.py): the form then refers to it and the file need not be chosen again.
"""

import hashlib
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.accounts.scope import scope_of
from apps.catalog.models import GpuModel
from apps.clusters.forms import ClusterFieldMixin
from apps.core.forms import SectionedFormMixin, SlugFromNameMixin, TablerFormMixin
from apps.core.texts import translated
from apps.pools.models import Pool, Purpose, Workload
from apps.pools.scoped import SHARED_ONLY
from apps.telemetry.ingest import formats, importer, kept_uploads
from apps.telemetry.ingest.parsers import EARLIEST_TIMESTAMP, GPU_CSV_FIELDS, REQUEST_CSV_FIELDS
from apps.telemetry.ingest.parsers.detect import DETECTION_HEAD_BYTES, Detection, read_head
from apps.telemetry.models import GpuDevice, HostnameRule, PullSource
from apps.telemetry.pull import promql
from apps.telemetry.pull.connect import Credentials, base_url_of
from apps.telemetry.scoped import assignable_devices, import_runs_of

DETECT = "detect"
DETECT_CHOICE = (DETECT, _("Detect from the file"))

DEFAULT_UPLOAD_MAX_BYTES = 200 * 1000 * 1000  # 200 MB


def upload_max_bytes() -> int:
    return getattr(settings, "TELEMETRY_UPLOAD_MAX_BYTES", DEFAULT_UPLOAD_MAX_BYTES)


def _size(size_bytes: int) -> str:
    """Bytes in the largest sensible decimal unit: 200 MB, 1.5 MB, 2 kB, 512 bytes."""
    if size_bytes >= 10e6:
        return f"{size_bytes / 1e6:,.0f} MB"
    if size_bytes >= 1e6:
        return f"{size_bytes / 1e6:,.1f} MB"
    if size_bytes >= 1e3:
        return f"{size_bytes / 1e3:,.0f} kB"
    return f"{size_bytes} bytes"


class _ImportForm(TablerFormMixin, forms.Form):
    """The fields every upload shares; subclasses say what kind of data and which formats."""

    kind = ""  # ImportRun.kind
    known_fields: tuple[str, ...] = ()
    required_fields: tuple[str, ...] = ()
    mapping_example = ""
    # The formats this kind of data comes in (formats.FORMATS); what detection may find
    # beyond them belongs to the other kind of upload (wrong_kind_sentence).
    format_names: tuple[str, ...] = ()
    expected_sentence = ""
    wrong_kind_sentence = ""

    # Not required when the form refers to a kept upload (kept_upload).
    file = forms.FileField(label=_("File"))
    kept_upload = forms.CharField(required=False, widget=forms.HiddenInput)
    columns = forms.CharField(
        label=_("Column mapping"),
        required=False,
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    time_zone = forms.CharField(
        label=_("Time zone of naive timestamps"),
        initial="UTC",
        help_text=_("Timestamps without an offset are read in this zone, e.g. UTC, Asia/Shanghai."),
    )
    skip_bad_rows = forms.BooleanField(
        label=_("Skip bad rows (keep the good ones and list each rejected line)"),
        required=False,
        help_text=_("Unticked, a file with any bad row is rejected whole and nothing is stored."),
    )

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        # The pools and workloads offered are those of the uploader's scope.
        self.scope = scope_of(user) if user is not None else SHARED_ONLY
        self.limit_to_scope(self.scope)
        # With a kept upload the file need not be chosen again (clean_kept_upload).
        refers_to_kept = (self.data if self.is_bound else self.initial).get("kept_upload")
        self.fields["file"].required = not refers_to_kept
        self.content_sha256 = ""
        # The file this form imports when none is chosen: from its kept_upload token.
        self.kept: kept_uploads.KeptUpload | None = None
        # What the file's first bytes were taken for; set once the file is read.
        self.detection: Detection | None = None
        self.fields["columns"].help_text = gettext(
            "Generic CSV only: field=header pairs, comma-separated, e.g. %(example)s. "
            "Fields: %(fields)s; required: %(required)s."
        ) % {
            "example": self.mapping_example,
            "fields": ", ".join(self.known_fields),
            "required": ", ".join(self.required_fields),
        }
        self.fields["file"].help_text = gettext(
            "UTF-8 text, at most %(size)s. Larger files: use the import commands on the server."
        ) % {"size": _size(upload_max_bytes())}

    def limit_to_scope(self, scope) -> None:
        """Offer only the pools or workloads in ``scope`` (the kinds' own fields)."""

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload:
            return None
        limit = upload_max_bytes()
        if upload.size > limit:
            raise forms.ValidationError(
                gettext(
                    "The file is %(size)s; uploads are limited to %(limit)s. Split it, or "
                    "import it on the server with the import command."
                )
                % {"size": _size(upload.size), "limit": _size(limit)}
            )
        self.content_sha256 = _upload_sha256(upload)
        return upload

    def clean_time_zone(self):
        name = self.cleaned_data["time_zone"].strip()
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise forms.ValidationError(
                gettext(
                    "Unknown time zone “%(name)s”: use an IANA name such as UTC or Asia/Shanghai."
                )
                % {"name": name}
            ) from error
        return name

    def clean_columns(self):
        try:
            mapping = formats.parse_column_mapping(self.cleaned_data["columns"])
        except ValueError as error:
            raise forms.ValidationError(
                gettext(
                    "Column mapping: %(error)s; expected field=header pairs such as %(example)s."
                )
                % {"error": translated(error), "example": self.mapping_example}
            ) from error
        unknown = [name for name in mapping if name not in self.known_fields]
        if unknown:
            raise forms.ValidationError(
                gettext(
                    "Unknown field(s) in the column mapping: %(unknown)s. Known fields: %(known)s."
                )
                % {"unknown": ", ".join(unknown), "known": ", ".join(self.known_fields)}
            )
        return mapping

    def clean_kept_upload(self):
        token = self.cleaned_data["kept_upload"]
        # A file chosen anew replaces the kept one.
        if not token or self.files.get("file"):
            return ""
        try:
            self.kept = kept_uploads.load(token, self.user)
        except kept_uploads.KeptUploadError as error:
            self.add_error("file", str(error))
            return ""
        self.content_sha256 = self.kept.content_sha256
        return token

    @property
    def filename(self) -> str:
        upload = self.cleaned_data.get("file")
        if upload:
            return upload.name
        return self.kept.filename if self.kept else ""

    @property
    def detected_format(self) -> str:
        """The format detection chose, when the form asked for it; else empty."""
        if self.data.get("format") != DETECT or self.detection is None:
            return ""
        return self.detection.format or ""

    def _read_head(self) -> bytes | None:
        upload = self.cleaned_data.get("file")
        if upload:
            upload.open("rb")
            return read_head(upload.file)
        if self.kept:
            with self.kept.path.open("rb") as handle:
                return handle.read(DETECTION_HEAD_BYTES)
        return None

    def _check_format(self, cleaned_data) -> None:
        """Resolve "Detect from the file" to the format the head shows, or say what was
        seen; refuse a chosen format the head contradicts."""
        chosen = cleaned_data.get("format")
        head = self._read_head()
        if head is None or not chosen:
            return
        self.detection = detection = formats.detect_format(head)
        if chosen == DETECT:
            if detection.format in self.format_names:
                cleaned_data["format"] = detection.format
            elif detection.format is not None:
                self.add_error(
                    "format",
                    gettext("This file is %(format)s (%(seen)s): %(advice)s")
                    % {
                        "format": _article(detection.format),
                        "seen": detection.seen,
                        "advice": self.wrong_kind_sentence,
                    },
                )
            else:
                self.add_error(
                    "format",
                    gettext(
                        "Could not tell the format from the file's first %(kib)s KiB: it holds "
                        "%(seen)s. Expected %(expected)s. Choose the format below if you know it."
                    )
                    % {
                        "kib": DETECTION_HEAD_BYTES // 1024,
                        "seen": detection.seen,
                        "expected": self.expected_sentence,
                    },
                )
        elif formats.contradicts(chosen, detection.format):
            self.add_error(
                "format",
                gettext(
                    "You chose %(chosen)s, but the file looks like %(format)s (%(seen)s). "
                    "Choose “%(detect)s” or the format it is in."
                )
                % {
                    "chosen": _article(chosen),
                    "format": _article(detection.format),
                    "seen": detection.seen,
                    "detect": DETECT_CHOICE[1],
                },
            )

    def _check_mapped_headers(self, mapping) -> None:
        """A generic CSV's mapping names headers its first line has."""
        headers = self.detection.headers if self.detection else ()
        if not headers:
            return
        missing = [
            f"{field}={header}" for field, header in mapping.items() if header not in headers
        ]
        if missing:
            self.add_error(
                "columns",
                gettext(
                    "The file has no column named as mapped in %(missing)s; its headers are "
                    "%(headers)s."
                )
                % {
                    "missing": ", ".join(missing),
                    "headers": ", ".join(headers[:40]) + (", …" if len(headers) > 40 else ""),
                },
            )

    def clean(self):
        cleaned_data = super().clean()
        if not cleaned_data.get("file") and self.kept is None and "file" not in self.errors:
            self.add_error("file", self.fields["file"].error_messages["required"])
        if "file" not in self.errors:
            self._check_format(cleaned_data)
        digest = self.content_sha256
        # Only an import the uploader may open counts: another team's import of the same
        # bytes is not named (and importing them again stores each sample once anyway).
        earlier = importer.earlier_identical_import(
            kind=self.kind, digest=digest, runs=import_runs_of(self.user) if self.user else None
        )
        if earlier is not None:
            self.add_error(
                "file",
                format_html(
                    '{} <a href="{}">{}</a>.',
                    importer.already_imported_sentence(earlier),
                    reverse("telemetry:import_detail", kwargs={"pk": earlier.pk}),
                    gettext("Open import #%(run)s") % {"run": earlier.pk},
                ),
            )
        mapping = cleaned_data.get("columns")
        if self._needs_columns(cleaned_data.get("format")) and "columns" not in self.errors:
            if not mapping:
                values = {"example": self.mapping_example}
                if self._needs_columns(self.detected_format):
                    message = gettext(
                        "A generic CSV (%(seen)s) needs a column mapping, e.g. %(example)s."
                    ) % {**values, "seen": self.detection.seen}
                else:
                    message = (
                        gettext("A generic CSV needs a column mapping, e.g. %(example)s.") % values
                    )
                self.add_error("columns", message)
            else:
                missing = [name for name in self.required_fields if name not in mapping]
                if missing:
                    self.add_error(
                        "columns",
                        gettext("The column mapping lacks %(missing)s (required: %(required)s).")
                        % {
                            "missing": ", ".join(missing),
                            "required": ", ".join(self.required_fields),
                        },
                    )
                else:
                    self._check_mapped_headers(mapping)
        return cleaned_data

    def keep_upload(self) -> str:
        """After errors: keep the file that came with the form and return the token that
        refers to it (the form's kept_upload), or "" when there is nothing to keep (no
        file, or the file itself was refused)."""
        upload = self.cleaned_data.get("file") if hasattr(self, "cleaned_data") else None
        if "file" in self.errors or not (upload or self.kept) or self.user is None:
            return ""
        if upload:
            self.kept = kept_uploads.keep(upload, self.content_sha256)
        token = kept_uploads.token_for(self.kept, self.user)
        # The page is drawn again from the bound data: it must carry the token.
        self.data = self.data.copy()
        self.data["kept_upload"] = token
        return token

    def _needs_columns(self, name) -> bool:
        format = formats.format_of(self.kind, name)
        return format is not None and format.needs_columns

    def task_columns(self) -> dict | None:
        """The mapping to hand to the import task: only a generic CSV uses one."""
        if not self._needs_columns(self.cleaned_data["format"]):
            return None
        return self.cleaned_data["columns"] or None


def _article(format_code: str | None) -> str:
    # As the words are said: "an Azure…", "an nvidia-smi…" (en-vidia), "a dcgm…".
    labelled = formats.FORMAT_LABELS_IN_A_SENTENCE.get(format_code)
    return str(labelled) if labelled is not None else gettext("an unknown")


def _upload_sha256(upload) -> str:
    """importer.content_sha256 of an upload, read in chunks (uploads go up to 200 MB)."""
    digest = hashlib.sha256()
    first = True
    for chunk in upload.chunks():
        if first:
            chunk, first = chunk.removeprefix(b"\xef\xbb\xbf"), False
        digest.update(chunk)
    return digest.hexdigest()


class GpuImportForm(_ImportForm):
    kind = "gpu"
    known_fields = GPU_CSV_FIELDS
    required_fields = ("timestamp", "device", "utilization_pct")
    mapping_example = "timestamp=time,device=gpu_uuid,utilization_pct=util"

    format_names = formats.names_of(formats.GPU, formats.UPLOAD)
    expected_sentence = _(
        "a dcgm-exporter scrape (lines like DCGM_FI_DEV_GPU_UTIL{…} 42 or # HELP DCGM_…), "
        "nvidia-smi --query-gpu=… --format=csv output (a header like timestamp, name, "
        "pci.bus_id, utilization.gpu [%]) or a CSV with a header line and a column mapping"
    )
    wrong_kind_sentence = _("import it on the Inference requests tab.")

    format = forms.ChoiceField(
        label=_("Format"),
        initial=DETECT,
        choices=[DETECT_CHOICE, *formats.choices_of(formats.GPU, formats.UPLOAD)],
    )
    # A scrape's lines carry no time of their own: without the moment it was taken, the
    # same scrape uploaded twice would be dated twice and counted twice.
    scraped_at = forms.CharField(
        label=_("Scrape time"),
        required=False,
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "step": "1", "data-scrape-time": "true"}
        ),
        help_text=_(
            "dcgm-exporter scrapes only: when /metrics was read, in the time zone "
            "below. Filled in from the chosen file's modification time; correct it if the file "
            "was copied since."
        ),
    )
    pool = forms.ModelChoiceField(
        label=_("Pool"),
        queryset=Pool.objects.order_by("name"),
        required=False,
        empty_label=_("By hostname rules (or wait unassigned)"),
        help_text=_(
            "GPUs first seen in this file join this pool. Without one, hostname rules "
            "decide, and GPUs no rule matches wait on the Unassigned GPUs page."
        ),
    )

    field_order = [
        "file",
        "format",
        "scraped_at",
        "pool",
        "columns",
        "time_zone",
        "skip_bad_rows",
    ]

    def limit_to_scope(self, scope) -> None:
        self.fields["pool"].queryset = Pool.objects.in_scope(scope).order_by("name")

    def clean(self):
        cleaned_data = super().clean()
        text = (cleaned_data.get("scraped_at") or "").strip()
        format = formats.format_of(self.kind, cleaned_data.get("format"))
        if format is None or not format.needs_scrape_time:
            cleaned_data["scraped_at"] = None
        elif not text:
            self.add_error(
                "scraped_at",
                gettext(
                    "A dcgm-exporter scrape needs its scrape time (when /metrics was read): its "
                    "lines carry none, and it dates every sample."
                ),
            )
        elif "time_zone" in cleaned_data:
            cleaned_data["scraped_at"] = self._scrape_time(text, cleaned_data["time_zone"])
        return cleaned_data

    def _scrape_time(self, text: str, zone_name: str) -> datetime | None:
        """The entered time as UTC, read in the form's time zone unless it has an offset."""
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            self.add_error(
                "scraped_at",
                gettext("Scrape time “%(text)s” is not a date and time like 2026-12-01 09:15.")
                % {"text": text},
            )
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=ZoneInfo(zone_name))
        moment = moment.astimezone(UTC)
        if moment < EARLIEST_TIMESTAMP:
            self.add_error(
                "scraped_at",
                gettext(
                    "Scrape time %(moment)s UTC is before %(earliest)s: the node's clock was not "
                    "set; enter when the scrape was really taken."
                )
                % {
                    "moment": f"{moment:%Y-%m-%d %H:%M}",
                    "earliest": f"{EARLIEST_TIMESTAMP:%Y-%m-%d}",
                },
            )
            return None
        latest = timezone.now() + timedelta(days=1)
        if moment > latest:
            self.add_error(
                "scraped_at",
                gettext(
                    "Scrape time %(moment)s UTC is more than 1 day in the future: check the "
                    "date and the time zone."
                )
                % {"moment": f"{moment:%Y-%m-%d %H:%M}"},
            )
            return None
        return moment


class RequestImportForm(_ImportForm):
    kind = "requests"
    known_fields = REQUEST_CSV_FIELDS
    required_fields = ("timestamp", "input_tokens", "output_tokens")
    mapping_example = "timestamp=ts,input_tokens=prompt,output_tokens=completion,latency_ms=lat"

    format_names = formats.names_of(formats.REQUESTS, formats.UPLOAD)
    expected_sentence = _(
        "an Azure LLM inference trace (the header TIMESTAMP,ContextTokens,GeneratedTokens) "
        "or a CSV with a header line and a column mapping"
    )
    wrong_kind_sentence = _("that is GPU telemetry, imported on the GPU telemetry tab.")

    format = forms.ChoiceField(
        label=_("Format"),
        initial=DETECT,
        choices=[DETECT_CHOICE, *formats.choices_of(formats.REQUESTS, formats.UPLOAD)],
    )
    workload = forms.ModelChoiceField(
        label=_("Workload"),
        queryset=Workload.objects.order_by("name"),
        help_text=_("The requests in the file were served by this workload."),
    )

    field_order = ["file", "format", "workload", "columns", "time_zone", "skip_bad_rows"]

    def limit_to_scope(self, scope) -> None:
        self.fields["workload"].queryset = Workload.objects.in_scope(scope).order_by("name")


class HostnameRuleForm(TablerFormMixin, forms.ModelForm):
    class Meta:
        model = HostnameRule
        fields = ["pool", "hostname_pattern", "priority"]
        labels = {"hostname_pattern": _("Hostname pattern")}
        help_texts = {
            "hostname_pattern": _(
                "Shell-style: gpu-sh-* matches gpu-sh-01; node-1? matches node-12."
            ),
            "priority": _("Lower numbers are tried first; the first matching rule wins."),
        }

    def __init__(self, *args, scope=SHARED_ONLY, **kwargs):
        """``scope``: the user's (apps/accounts/scope.py); a rule names one of its pools."""
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = Pool.objects.in_scope(scope).order_by("name")

    def clean_hostname_pattern(self):
        pattern = self.cleaned_data["hostname_pattern"].strip()
        if not pattern:
            raise forms.ValidationError(gettext("Enter a hostname or a pattern such as gpu-sh-*."))
        return pattern


PULL_SOURCE_SECTIONS = (
    (
        _("Source"),
        ["name", "slug", "kind", "url", "pool", "cluster", "interval_seconds", "enabled"],
    ),
    (_("Credentials"), ["username", "password", "bearer_token", "forget_secrets"]),
    (_("Hourly aggregates"), ["label_filters"]),
)
# Typed in, never drawn back: empty keeps what is stored.
PULL_SOURCE_SECRETS = ("password", "bearer_token")


class PullSourceForm(
    ClusterFieldMixin, TablerFormMixin, SlugFromNameMixin, SectionedFormMixin, forms.ModelForm
):
    """A pull source; its label filters are asked for, and checked, for the hourly kind
    only (apps/telemetry/pull/promql.py)."""

    sections = PULL_SOURCE_SECTIONS
    # Matched on the untranslated title (SectionedFormMixin), so it holds in any language.
    section_conditions = {"Hourly aggregates": ("kind", [PullSource.Kind.PROMETHEUS_HOURLY])}

    password = forms.CharField(
        label=_("Password"),
        max_length=500,
        required=False,
        strip=False,
        help_text=_("HTTP basic authentication. Leave empty to keep the stored one."),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    bearer_token = forms.CharField(
        label=_("Bearer token"),
        max_length=4000,
        required=False,
        help_text=_("Sent instead of the user name and password. Leave empty to keep it."),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    forget_secrets = forms.BooleanField(
        label=_("Forget the stored password and token"), required=False
    )

    class Meta:
        model = PullSource
        fields = [
            name
            for _, names in PULL_SOURCE_SECTIONS
            for name in names
            if name not in (*PULL_SOURCE_SECRETS, "forget_secrets")
        ]
        help_texts = {
            "interval_seconds": _(
                "How often beat looks at the source, at least 15 s. An hourly source pulls "
                "each hour once it is complete, whatever the interval."
            ),
        }

    def __init__(self, *args, scope=SHARED_ONLY, **kwargs):
        """``scope``: the user's (apps/accounts/scope.py); a source's pool is one of its."""
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = Pool.objects.in_scope(scope).order_by("name")
        self.instance.pull_scope_key = scope.cache_key

    def save(self, commit=True):
        source = super().save(commit=False)
        if self.cleaned_data.get("forget_secrets"):
            source.password = source.bearer_token = ""
        for name in PULL_SOURCE_SECRETS:
            if self.cleaned_data.get(name):
                setattr(
                    source,
                    name,
                    self.cleaned_data[name].strip()
                    if name == "bearer_token"
                    else self.cleaned_data[name],
                )
        if commit:
            source.save()
        return source

    def clean_label_filters(self):
        text = self.cleaned_data.get("label_filters", "")
        try:
            return promql.format_label_filters(promql.parse_label_filters(text))
        except promql.LabelFilterError as error:
            raise forms.ValidationError(
                gettext("Not PromQL label matchers: %(reason)s.") % {"reason": error}
            ) from None


class DeviceAssignForm(TablerFormMixin, forms.Form):
    """The triage page's bulk form: these devices go to that pool or, with
    ``use_suggestions``, each to the pool suggested for it (apps/telemetry/triage.py),
    which the view works out again: no pool is taken from the request then."""

    pool = forms.ModelChoiceField(
        queryset=Pool.objects.order_by("name"), label=_("Pool"), empty_label=_("Choose a pool")
    )
    devices = forms.ModelMultipleChoiceField(
        queryset=GpuDevice.objects.all(),
        label=_("GPUs"),
        error_messages={"required": _("Tick at least one GPU to assign.")},
    )

    def __init__(self, *args, use_suggestions=False, scope=SHARED_ONLY, **kwargs):
        """``scope``: the assigner's (apps/accounts/scope.py): GPUs go to its pools only,
        and only unassigned GPUs and those of its pools may be ticked."""
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = Pool.objects.in_scope(scope).order_by("name")
        self.fields["devices"].queryset = assignable_devices(scope)
        self.use_suggestions = use_suggestions
        if use_suggestions:
            self.fields["pool"].required = False

    def clean(self):
        cleaned_data = super().clean()
        if self.use_suggestions:
            cleaned_data["pool"] = None
        return cleaned_data


class ConnectForm(TablerFormMixin, forms.Form):
    """Where the fleet's Prometheus or VictoriaMetrics is and how to get in. Secrets are
    never drawn back into the page (``render_value=False``): the page keeps what was
    typed, since "Try it" and "Connect the fleet" replace only the findings."""

    url = forms.CharField(
        label=_("Prometheus or VictoriaMetrics URL"),
        max_length=500,
        help_text=_(
            "The server's base URL, e.g. http://prometheus:9090 or "
            "http://victoria-metrics:8428; a VictoriaMetrics cluster: "
            "http://vmselect:8481/select/0/prometheus"
        ),
        widget=forms.TextInput(attrs={"placeholder": "http://prometheus:9090"}),
    )
    username = forms.CharField(
        label=_("User name"),
        max_length=200,
        required=False,
        help_text=_("HTTP basic authentication; leave empty when the server asks for none."),
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    password = forms.CharField(
        label=_("Password"),
        max_length=500,
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    bearer_token = forms.CharField(
        label=_("Bearer token"),
        max_length=4000,
        required=False,
        help_text=_("Sent instead of the user name and password when given."),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )

    def clean_url(self):
        text = self.cleaned_data["url"].strip()
        if "://" not in text:
            text = f"http://{text}"
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise forms.ValidationError(
                gettext(
                    "Enter the server's address with http:// or https://, e.g. "
                    "http://prometheus:9090."
                )
            )
        return base_url_of(text)

    @property
    def credentials(self):
        return Credentials(
            username=self.cleaned_data.get("username", ""),
            password=self.cleaned_data.get("password", ""),
            bearer_token=self.cleaned_data.get("bearer_token", "").strip(),
        )


class CatalogModelField(forms.ModelChoiceField):
    """A catalog GPU model, its reference price per GPU-hour in its label."""

    def label_from_instance(self, obj):
        price = obj.reference_price_per_gpu_hour_usd
        if price is None:
            return gettext("%(model)s (no reference price)") % {"model": obj.name}
        return gettext("%(model)s ($%(price)s per GPU-hour)") % {
            "model": obj.name,
            "price": f"{price:.2f}",
        }


class ProposedPoolForm(TablerFormMixin, forms.Form):
    """One proposed pool of the connect page: kept or not, its name, catalog model and
    purpose. ``key`` ties it to the proposal the server works out again on acceptance."""

    key = forms.CharField(widget=forms.HiddenInput)
    include = forms.BooleanField(label=_("Create this pool"), required=False, initial=True)
    name = forms.CharField(label=_("Pool name"), max_length=100, required=False)
    gpu_model = CatalogModelField(
        queryset=None,
        label=_("Catalog GPU model"),
        required=False,
        empty_label=_("Choose the GPU model"),
    )
    purpose = forms.ChoiceField(label=_("Purpose"), choices=Purpose.choices)

    def __init__(self, *args, proposal=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.proposal = proposal
        self.fields["gpu_model"].queryset = GpuModel.objects.order_by("vendor", "name")

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("include"):
            return cleaned
        name = (cleaned.get("name") or "").strip()
        if not name:
            self.add_error("name", gettext("Name the pool, or untick it."))
        elif Pool.objects.filter(name__iexact=name).exists():
            self.add_error(
                "name",
                gettext("A pool named %(name)s already exists: choose another name.")
                % {"name": name},
            )
        cleaned["name"] = name
        if cleaned.get("gpu_model") is None and "gpu_model" not in self.errors:
            self.add_error(
                "gpu_model",
                gettext("Choose the catalog GPU model of %(model)s, or untick the pool.")
                % {"model": self.proposal.model_name if self.proposal else ""},
            )
        return cleaned
