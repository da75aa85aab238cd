"""Ingest: files and texts in, stored samples and an import run out.

``parsers`` reads each format (framework-free), ``formats`` is the one table of formats
every channel reads, ``importer`` runs an import the same way for the upload task, the API
and the commands, ``storage`` writes the rows, ``checks`` and ``device_registry`` say what
the rows mean against the database, ``kept_uploads`` keeps a file for a corrected form.
Ingest sits above the rollups (it queues the hours it touched) and below the pulls.
"""
