"""The GpuDevices an import's rows name: known ones found by key, unknown ones created at
once and placed in a pool (the import's, else the first hostname rule that matches, else
none: they wait on the unassigned-GPUs page).

A GPU is one device across the fleet, keyed by its UUID (and MIG instance): the same UUID
pulled from two clusters' sources is the same GPU, counted once, in the pool it is in.
Hostnames are not unique across clusters (two clusters may both have a ``gpu-001``), so a
pull source of a cluster places new GPUs by the hostname rules of that cluster's pools
only. A source of the ``default`` cluster, where sources go when no cluster is named,
places them by every rule: an installation of one cluster has no rule of another."""

import fnmatch
from datetime import UTC, datetime

from django.db import connection

from apps.accounts.scope import EVERYTHING
from apps.clusters.models import default_cluster_pk
from apps.core.sentences import gettext_noop, sentence
from apps.pools.models import Pool
from apps.pools.querysets import pool_scope_filter
from apps.telemetry.ingest.parsers.rows import (
    GpuSampleRow,
    RowError,
    line_error,
)
from apps.telemetry.mig import compute_slices_of_profile
from apps.telemetry.models import (
    GpuDevice,
    HostnameRule,
)


def match_hostname_rule(hostname: str, rules, cluster_id: int | None = None) -> object | None:
    """The pool of the first of ``rules`` (in priority order) whose pattern matches
    ``hostname``: where a new GPU goes, and the pool a Slurm job's node is in; with
    ``cluster_id``, among the rules of that cluster's pools only."""
    for rule in rules:
        if cluster_id is not None and rule.pool.cluster_id != cluster_id:
            continue
        if hostname and fnmatch.fnmatchcase(hostname, rule.hostname_pattern):
            return rule.pool
    return None


class DeviceRegistry:
    """The GpuDevices of one import's rows, registered chunk by chunk: ``register(rows)``
    maps each row's device to its GpuDevice, creating unknown ones at once (their samples
    reference them); ``save()`` writes what the import learnt about the known ones in one
    statement at the end.

    New devices join ``pool`` when the import names one, else the first matching hostname
    rule's pool, else they wait unassigned: never dropped. What a GPU reports about itself
    (hostname, model, driver, MIG profile) comes from its latest sample in the import.

    An import works on what its starter could see (``scope``, apps/accounts/scope.py):
    only the hostname rules of their pools place new GPUs, and a GPU already in a pool
    outside it is left as it is (``out_of_scope``), its rows refused by the caller.
    """

    def __init__(self, *, pool=None, scope=EVERYTHING, cluster_id: int | None = None):
        """``cluster_id``: the cluster of the import's pull source; its new GPUs are
        placed by the hostname rules of that cluster's pools only (None: every rule)."""
        self.pool = pool
        self.scope = scope
        self.cluster_id = cluster_id
        self._default_cluster_id = None
        # None: every pool is in scope (the fleet-wide, pulls, the command line).
        self._pool_ids_in_scope = (
            None
            if scope.everything
            else set(Pool.objects.in_scope(scope).values_list("pk", flat=True))
        )
        self.devices: dict[str, GpuDevice] = {}
        self.new_count = 0
        self._rules = None
        self._latest_at: dict[str, datetime] = {}  # of the sample each device's fields came from
        self._changed: dict[str, GpuDevice] = {}
        # Stored devices looked up ahead of ``register`` (``preload``), and every key
        # looked up so, found or not.
        self._preloaded: dict[str, GpuDevice] = {}
        self._looked_up: set[str] = set()

    def preload(self, keys) -> None:
        """Look the stored devices of ``keys`` up in one query, ahead of the ``register``
        calls that need them: a batch of scrapes then costs one lookup, not one per
        scrape."""
        wanted = [
            key for key in set(keys) if key not in self.devices and key not in self._looked_up
        ]
        if not wanted:
            return
        self._preloaded.update(
            (device.key, device) for device in GpuDevice.objects.filter(key__in=wanted)
        )
        self._looked_up.update(wanted)

    def register(
        self, rows: list[GpuSampleRow], *, pool=None, cluster_id: int | None = None
    ) -> dict[str, GpuDevice]:
        """``pool``, ``cluster_id``: the pool and cluster of these rows' import when they
        differ from the registry's (one batch holds the scrapes of sources of several
        pools and clusters)."""
        pool = pool if pool is not None else self.pool
        cluster_id = cluster_id if cluster_id is not None else self.cluster_id
        # First per DeviceKey object (an int hash; the parsers share one per device), as
        # in ``_sample_values``, then per device key: a row's own key is built once per
        # DeviceKey, not once per row.
        spans: dict[int, list] = {}  # id(DeviceKey) → [latest row, first timestamp]
        for row in rows:
            span = spans.get(id(row.device))
            if span is None:
                spans[id(row.device)] = [row, row.timestamp]
                continue
            timestamp = row.timestamp
            if timestamp >= span[0].timestamp:
                span[0] = row
            if timestamp < span[1]:
                span[1] = timestamp
        latest: dict[str, GpuSampleRow] = {}
        first_seen: dict[str, datetime] = {}
        for row, first in spans.values():
            key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
            if key not in latest or row.timestamp >= latest[key].timestamp:
                latest[key] = row
            if key not in first_seen or first < first_seen[key]:
                first_seen[key] = first
        unknown = [key for key in latest if key not in self.devices]
        created = self._add(unknown, latest, first_seen, pool, cluster_id) if unknown else set()
        for key, row in latest.items():
            if key in created:
                continue  # created from these very rows
            device = self.devices[key]
            if self.out_of_scope(device):
                continue  # another team's GPU: nothing of it is written
            device.last_seen_at = max(device.last_seen_at, row.timestamp)
            device.first_seen_at = min(device.first_seen_at, first_seen[key])
            if row.timestamp >= self._latest_at[key]:
                self._latest_at[key] = row.timestamp
                _describe_device(device, row)
            self._changed[key] = device
        return {key: self.devices[key] for key in latest}

    def out_of_scope(self, device: GpuDevice) -> bool:
        """``device`` is in a pool outside the import's scope."""
        return (
            self._pool_ids_in_scope is not None
            and device.pool_id is not None
            and device.pool_id not in self._pool_ids_in_scope
        )

    def refuse_out_of_scope(self, rows, devices) -> tuple[list, list[RowError]]:
        """(rows kept, one error per refused row): the rows of GPUs in a pool outside the
        import's scope are not stored; the error names the GPU as the file does."""
        if self._pool_ids_in_scope is None:
            return rows, []
        refused_keys = {key for key, device in devices.items() if self.out_of_scope(device)}
        if not refused_keys:
            return rows, []
        kept, errors = [], []
        for row in rows:
            key = GpuDevice.key_for(row.device.uuid, row.device.gpu_instance_id)
            if key not in refused_keys:
                kept.append(row)
                continue
            errors.append(
                line_error(
                    row.line_number,
                    sentence(
                        gettext_noop(
                            "GPU %(device)s is in a pool outside your teams: its samples are "
                            "not stored"
                        ),
                        device=key,
                    ),
                )
            )
        return kept, errors

    def _add(self, keys, latest, first_seen, pool, cluster_id=None) -> set[str]:
        """Look the devices of ``keys`` up, creating the unknown ones; returns the keys
        created."""
        existing = {key: self._preloaded.pop(key) for key in keys if key in self._preloaded}
        to_query = [key for key in keys if key not in self._looked_up]
        if to_query:
            existing.update(
                (device.key, device) for device in GpuDevice.objects.filter(key__in=to_query)
            )
        new_devices = []
        for key in keys:
            row = latest[key]
            device = existing.get(key)
            if device is None:
                if self._rules is None:
                    self._rules = list(
                        HostnameRule.objects.filter(
                            pool_scope_filter(self.scope, "pool__")
                        ).select_related("pool")
                    )
                assigned_pool = pool or match_hostname_rule(
                    row.hostname, self._rules, self._rules_cluster(cluster_id)
                )
                assignment = (
                    GpuDevice.Assignment.IMPORT
                    if pool
                    else GpuDevice.Assignment.RULE
                    if assigned_pool
                    else GpuDevice.Assignment.UNASSIGNED
                )
                device = GpuDevice(
                    key=key,
                    uuid=row.device.uuid,
                    gpu_instance_id=row.device.gpu_instance_id,
                    first_seen_at=first_seen[key],
                    last_seen_at=row.timestamp,
                    pool=assigned_pool,
                    assignment=assignment,
                )
                _describe_device(device, row)
                new_devices.append(device)
                self._latest_at[key] = row.timestamp
            elif not self.out_of_scope(device):
                if pool is not None and device.pool_id is None:
                    device.pool, device.assignment = pool, GpuDevice.Assignment.IMPORT
                # Its stored fields predate the import: any row of it describes it better.
                self._latest_at[key] = datetime.min.replace(tzinfo=UTC)
            self.devices[key] = device
        GpuDevice.objects.bulk_create(new_devices)
        self.new_count += len(new_devices)
        return {device.key for device in new_devices}

    def _rules_cluster(self, cluster_id: int | None) -> int | None:
        """The cluster whose hostname rules place a new GPU of a source of
        ``cluster_id``: None (every rule) for the ``default`` cluster's sources."""
        if cluster_id is None:
            return None
        if self._default_cluster_id is None:
            self._default_cluster_id = default_cluster_pk()
        return None if cluster_id == self._default_cluster_id else cluster_id

    def save(self) -> None:
        if self._changed:
            refresh_devices(list(self._changed.values()))


def _describe_device(device: GpuDevice, row: GpuSampleRow) -> None:
    """What the GPU reports about itself, from ``row``."""
    device.hostname = row.hostname or device.hostname
    device.gpu_index = row.gpu_index if row.gpu_index is not None else device.gpu_index
    device.model_name = row.model_name or device.model_name
    device.driver_version = row.driver_version or device.driver_version
    device.mig_profile = row.mig_profile or device.mig_profile
    device.mig_compute_slices = compute_slices_of_profile(device.mig_profile)
    device.mig_mode_enabled = row.mig_mode_enabled


# The device fields an import refreshes, with their PostgreSQL types for unnest().
_REFRESHED_DEVICE_FIELDS = (
    ("pool_id", "bigint"),
    ("assignment", "text"),
    ("last_seen_at", "timestamptz"),
    ("first_seen_at", "timestamptz"),
    ("hostname", "text"),
    ("gpu_index", "integer"),
    ("model_name", "text"),
    ("driver_version", "text"),
    ("mig_profile", "text"),
    ("mig_compute_slices", "smallint"),
    ("mig_mode_enabled", "boolean"),
)


def refresh_devices(devices: list[GpuDevice]) -> None:
    """Write the refreshed fields of known devices in one statement.

    ``bulk_update()`` builds one ``CASE WHEN id = … THEN …`` per field and device: for the
    1,000 devices of a fleet file Django spends ~3 s composing it, and ~35 ms for the 8 of
    one scrape (bench/telemetry.py); ``UPDATE … FROM unnest(arrays)`` takes milliseconds.
    """
    names = [name for name, _type in _REFRESHED_DEVICE_FIELDS]
    assignments = ", ".join(f"{name} = refreshed.{name}" for name in names)
    arrays = ", ".join(f"%s::{sql_type}[]" for _name, sql_type in _REFRESHED_DEVICE_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE telemetry_gpudevice AS device SET {assignments} "  # noqa: S608 - constants
            f"FROM unnest(%s::bigint[], {arrays}) AS refreshed(id, {', '.join(names)}) "
            "WHERE device.id = refreshed.id",
            [
                [device.pk for device in devices],
                *([getattr(device, name) for device in devices] for name in names),
            ],
        )
