"""Where a driver's lease lives (search.running.writer.lock), and how the store lets it be written: on S3 through
boto3, when it is importable, every write conditional on the version its writer last saw (`ConditionalStore`: the
store itself refuses a write from a driver whose view is out of date, `LeaseChanged`); every other store through
pyarrow, written plainly and read back (`ReadBackStore`). Either judges a lease's age by its own clock: the lease's
modification time against that of a probe object it writes now beside it (docs/one-writer.md).
"""

from __future__ import annotations

import contextlib
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from urllib.parse import parse_qs, unquote, urlsplit

from trainables.foundation.storage import CLOCK_FILE, filesystem
from trainables.foundation.trial_lease import parse_holder


@dataclass(frozen=True)
class Lease:
    """The lease as the store holds it now: its holder ({} when there is none), the store's version of it (S3's
    ETag; None where the store gives none) and when the store last wrote it (None where it keeps no times)."""

    holder: dict
    tag: str | None = None
    modified: datetime | None = None


class LeaseChanged(Exception):
    """A conditional write found the lease other than its writer last saw it: another driver wrote (or removed) it."""


def lease_store(location: str) -> ReadBackStore | ConditionalStore:
    """The store of the lease at `location`: conditional writes for s3:// when boto3 is importable."""
    if location.startswith("s3://"):
        try:
            import boto3  # noqa: F401 - not a dependency of the package: without it, S3 is read back like the others
        except ImportError:
            return ReadBackStore(location)
        return ConditionalStore(location)
    return ReadBackStore(location)


def age_by_store(lease: Lease, now: datetime | None) -> float | None:
    """Seconds since the store last wrote `lease`, by the store's clock `now`; None where it keeps no times."""
    if lease.modified is None or now is None:
        return None
    return (now - lease.modified).total_seconds()


class ReadBackStore:
    """The lease through pyarrow: plain writes, no versions; its writer reads it back."""

    conditional = False

    def __init__(self, location: str):
        self.location = location

    def read(self) -> Lease:
        """The lease now; OSError when it cannot be read now."""
        import pyarrow.fs

        fs, path = filesystem(self.location)
        info = fs.get_file_info(path)
        if info.type == pyarrow.fs.FileType.NotFound:
            return Lease({})
        with fs.open_input_stream(path) as stream:
            return Lease(parse_holder(stream.read()), None, info.mtime)

    def write(self, text: str, replacing: Lease) -> str | None:
        """Writes the lease (whatever it holds now: `replacing` is not checked); returns its new tag."""
        fs, path = filesystem(self.location)
        fs.create_dir(str(PurePosixPath(path).parent))
        with fs.open_output_stream(path) as stream:
            stream.write(text.encode())
        return None

    def now(self) -> datetime | None:
        """The store's clock: the modification time of a probe object written now beside the lease."""
        fs, path = filesystem(self.location)
        probe = str(PurePosixPath(path).with_name(CLOCK_FILE))
        with fs.open_output_stream(probe) as stream:
            stream.write(b"now")
        try:
            return fs.get_file_info(probe).mtime
        finally:
            with contextlib.suppress(OSError):  # nothing of it left beside the lease (a refusal writes nothing)
                fs.delete_file(probe)

    def delete(self, lease: Lease) -> None:
        fs, path = filesystem(self.location)
        fs.delete_file(path)


class ConditionalStore:
    """The lease on S3 through boto3, every write conditional on the version its writer last saw."""

    conditional = True

    def __init__(self, location: str):
        self.location = location
        self.client = s3_client(location)
        parts = urlsplit(location)  # the bucket and key as pyarrow reads them (credentials and query aside)
        self.bucket, self.key = parts.netloc.rpartition("@")[2], parts.path.lstrip("/")

    def read(self) -> Lease:
        with self._errors():
            try:
                got = self.client.get_object(Bucket=self.bucket, Key=self.key)
            except self.client.exceptions.NoSuchKey:
                return Lease({})
            return Lease(parse_holder(got["Body"].read()), got["ETag"], got["LastModified"])

    def write(self, text: str, replacing: Lease) -> str:
        """Creates the lease when `replacing` has no tag (none was there), else replaces exactly that version;
        `LeaseChanged` when the store holds another. Returns the new version's tag."""
        condition = {"IfMatch": replacing.tag} if replacing.tag else {"IfNoneMatch": "*"}
        with self._errors(changed=True):
            return self.client.put_object(Bucket=self.bucket, Key=self.key, Body=text.encode(), **condition)["ETag"]

    def now(self) -> datetime:
        probe = str(PurePosixPath(self.key).with_name(CLOCK_FILE))
        with self._errors():
            self.client.put_object(Bucket=self.bucket, Key=probe, Body=b"now")
            return self.client.head_object(Bucket=self.bucket, Key=probe)["LastModified"]

    def delete(self, lease: Lease) -> None:
        """Deletes exactly the version `lease` names (`LeaseChanged` when the store holds another)."""
        with self._errors(changed=True):
            self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=lease.tag)

    @contextmanager
    def _errors(self, changed: bool = False):
        """botocore's errors as OSError (what the pyarrow store raises); for a conditional request (`changed`), a
        failed condition as `LeaseChanged`: 412 PreconditionFailed, 409 ConditionalRequestConflict, 404 (gone)."""
        from botocore.exceptions import BotoCoreError, ClientError

        where = f"s3://{self.bucket}/{self.key}"
        try:
            yield
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if changed and (code in CHANGED_CODES or status in {404, 409, 412}):
                raise LeaseChanged(f"{where}: {code or status}") from None
            raise OSError(f"{where}: {code or status}: {error}") from None
        except BotoCoreError as error:
            raise OSError(f"{where}: {error}") from None


CHANGED_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"}


def s3_client(location: str):
    """A boto3 S3 client for the endpoint pyarrow would use for `location`: the URI's `endpoint_override`, `scheme`,
    `region` and credentials (s3://KEY:SECRET@bucket) where it gives them, else boto3's own from the environment."""
    import boto3

    parts = urlsplit(location)
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    endpoint = query.get("endpoint_override")
    if endpoint and "://" not in endpoint:
        endpoint = f"{query.get('scheme', 'https')}://{endpoint}"
    credentials = (
        {"aws_access_key_id": unquote(parts.username), "aws_secret_access_key": unquote(parts.password or "")}
        if parts.username
        else {}
    )
    session = boto3.session.Session()  # a session of its own: boto3's default one is not thread-safe
    return session.client("s3", endpoint_url=endpoint or None, region_name=query.get("region"), **credentials)
