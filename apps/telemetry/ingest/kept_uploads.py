"""Uploaded files kept for a while, so that a wrong format or column mapping can be
corrected without choosing the file again.

Every upload is kept under ``MEDIA_ROOT/imports/kept/<SHA-256 of its content>`` for
``TELEMETRY_KEPT_UPLOAD_HOURS`` (24 h by default), beside the per-run copy that the
import task reads and deletes: the run's copy is a hard link to the kept file where the
file system allows one, so keeping costs no second copy while the import runs.

A browser refers to a kept file only through a signed token (``token_for``) that names
the digest, the file's name and the user it was kept for; the path is always built here
from the digest, never read from the request, and ``load`` refuses a token of another
user, an expired token, and a file that is gone.
"""

import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core import signing
from django.utils.translation import gettext

DEFAULT_KEPT_UPLOAD_HOURS = 24
_SALT = "telemetry.kept-upload"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class KeptUploadError(Exception):
    """A kept upload that cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class KeptUpload:
    content_sha256: str
    filename: str
    path: Path

    @property
    def size_bytes(self) -> int:
        return self.path.stat().st_size

    @property
    def kept_until(self) -> datetime:
        modified = datetime.fromtimestamp(self.path.stat().st_mtime, UTC)
        return modified + kept_for()


def kept_for() -> timedelta:
    return timedelta(
        hours=getattr(settings, "TELEMETRY_KEPT_UPLOAD_HOURS", DEFAULT_KEPT_UPLOAD_HOURS)
    )


def kept_directory() -> Path:
    return Path(settings.MEDIA_ROOT) / "imports" / "kept"


def _path_of(content_sha256: str) -> Path:
    if not _DIGEST.match(content_sha256 or ""):
        raise KeptUploadError(
            gettext("The kept file's reference is not valid: choose the file again.")
        )
    return kept_directory() / content_sha256


def find(content_sha256: str, filename: str = "") -> KeptUpload | None:
    """The kept file of that content, or None when it is gone or expired."""
    try:
        path = _path_of(content_sha256)
    except KeptUploadError:
        return None
    if not path.is_file() or _expired(path):
        return None
    return KeptUpload(content_sha256, filename, path)


def keep(upload, content_sha256: str) -> KeptUpload:
    """Keep an uploaded file (a Django UploadedFile) under its digest; the same content
    kept again only starts its time anew. Expired files go first."""
    purge_expired()
    path = _path_of(content_sha256)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        os.utime(path)
    else:
        # Written aside and renamed, so a reader never finds half a file under the digest.
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        with partial.open("wb") as destination:
            for chunk in upload.chunks():
                destination.write(chunk)
        partial.replace(path)
    return KeptUpload(content_sha256, Path(upload.name).name, path)


def copy_for_run(kept: KeptUpload, destination: Path) -> None:
    """Put the kept file where the import task reads (and then deletes) it: a hard link,
    else a copy. Its time starts anew, since a retry shows the file is still wanted."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.utime(kept.path)
        try:
            os.link(kept.path, destination)
        except OSError:
            shutil.copyfile(kept.path, destination)
    except FileNotFoundError as error:
        raise KeptUploadError(gone_sentence(kept.filename)) from error


def token_for(kept: KeptUpload, user) -> str:
    return signing.dumps(
        {"sha256": kept.content_sha256, "name": kept.filename, "user": user.pk}, salt=_SALT
    )


def load(token: str, user) -> KeptUpload:
    """The kept upload a token refers to, for ``user``; KeptUploadError says why not."""
    try:
        data = signing.loads(token, salt=_SALT, max_age=kept_for())
    except signing.SignatureExpired as error:
        raise KeptUploadError(gone_sentence("")) from error
    except signing.BadSignature as error:
        raise KeptUploadError(
            gettext("The kept file's reference is not valid: choose the file again.")
        ) from error
    if data.get("user") != user.pk:
        raise KeptUploadError(
            gettext("The kept file was uploaded by someone else: choose the file again.")
        )
    name = str(data.get("name") or "upload")
    kept = find(str(data.get("sha256") or ""), name)
    if kept is None:
        raise KeptUploadError(gone_sentence(name))
    return kept


def gone_sentence(filename: str) -> str:
    hours = round(kept_for().total_seconds() / 3600)
    if filename:
        return gettext(
            "The uploaded file %(file)s is no longer kept (uploads are kept for %(hours)s "
            "hours): choose the file again."
        ) % {"file": filename, "hours": hours}
    return gettext(
        "The uploaded file is no longer kept (uploads are kept for %(hours)s hours): choose "
        "the file again."
    ) % {"hours": hours}


def purge_expired(now: datetime | None = None) -> int:
    """Delete the kept files past their time; returns how many."""
    directory = kept_directory()
    if not directory.is_dir():
        return 0
    deleted = 0
    for path in directory.iterdir():
        if path.is_file() and _expired(path, now):
            path.unlink(missing_ok=True)
            deleted += 1
    return deleted


def _expired(path: Path, now: datetime | None = None) -> bool:
    now = now or datetime.now(UTC)
    try:
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except FileNotFoundError:
        return True
    return modified + kept_for() < now
