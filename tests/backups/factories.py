"""Backup objects for tests, in the call shape the backup tests use; tests/factories.py
builds them (through the same services the views use)."""

from tests.factories import (
    SHA_A,
    SHA_B,
    BackupPolicyFactory,
    BackupVersionFactory,
    RestoreDrillFactory,
)

__all__ = ["SHA_A", "SHA_B", "make_drill", "make_policy", "make_version"]


def make_policy(workload, **values):
    """The workload's policy: the stored one if it has one, else a new one."""
    return BackupPolicyFactory(workload=workload, **values)


def make_version(workload, *, checksums=(("node-0", SHA_A), ("node-1", SHA_A)), **values):
    return BackupVersionFactory(workload=workload, checksums=checksums, **values)


def make_drill(policy, version, *, evidence=None, observed=None, **values):
    return RestoreDrillFactory(
        policy=policy, version=version, evidence=evidence, observed=observed, **values
    )
