"""Rollups: what the stored samples add up to, and how long the samples are kept.

``hourly`` computes pool- and workload-hours (queued by the imports, drained by beat),
``days`` their daily sums and the shared pools' workload attribution, ``reconciliation``
reads the flags the rollups write; ``retention`` and ``partitions`` end the raw samples'
life a day at a time. Nothing here imports ingest or pull.
"""
