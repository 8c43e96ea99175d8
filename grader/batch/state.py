"""What makes a batch resumable: a key per submission, and the record written beside each
student's reports once they are complete.

The key is a hash of the submission's bytes, the grader's version, the lab, the settings
that change a result (backend, case timeout, timing), and a fingerprint of the secret. The
record `grading.json` is written last, after the reports, so a batch stopped half-way
leaves either a complete student folder or one that is graded again.

The secret itself is never written anywhere: the fingerprint is an HMAC keyed by the
secret, which says whether two runs used the same secret and nothing more."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grader
from grader import schema
from grader.course.discover import Entry, Person
from grader.files import write_atomically

RECORD = "grading.json"
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
REPORT_JUNIT = "junit.xml"
STUDENTS = "students"
_FINGERPRINT_MESSAGE = b"cuda-lab-grader/batch-state"


def secret_fingerprint(secret: str | None) -> str:
    if not secret:
        return "none"
    return hmac.new(secret.encode(), _FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True)
class Settings:
    """Everything besides the submission's bytes that changes its grade or its report."""

    lab: str
    backend: str
    timeout: float
    timing: bool
    secret: str  # the fingerprint, never the secret
    profile: bool = False  # Nsight Compute's "why this speed" (--profile): in the report
    grader_version: str = grader.__version__
    # a report of another schema cannot be read back, so a new schema grades again
    schema_version: int = field(default_factory=lambda: schema.version(schema.REPORT))

    def key(self, content: bytes) -> str:
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode())
        digest.update(b"\0")
        digest.update(content)
        return digest.hexdigest()


@dataclass
class Record:
    """One student folder's bookkeeping: whose it is, what was graded, and, when grading
    failed from outside (killed, crashed, tampered with), why."""

    id: str
    people: list[Person]
    origin: str
    source: str | None
    key: str | None  # None when there was nothing to grade
    reason: str = ""

    @classmethod
    def of(cls, entry: Entry, key: str | None, reason: str = "") -> Record:
        return cls(
            id=entry.id,
            people=list(entry.people),
            origin=entry.origin.name,
            source=str(entry.source.relative_to(entry.origin.parent)) if entry.source else None,
            key=key,
            reason=reason or entry.problem,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["people"] = [asdict(p) for p in self.people]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        people = [Person(**p) for p in data["people"]]
        return cls(**{**data, "people": people})


def student_dir(out: Path, student: str) -> Path:
    return Path(out) / STUDENTS / student


def read_record(folder: Path) -> Record | None:
    """The record of a complete student folder, or None if the folder is incomplete."""
    try:
        data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (folder / REPORT_JSON).is_file():
        return None
    try:
        return Record.from_json(data)
    except (KeyError, TypeError):
        return None


def write_record(folder: Path, record: Record) -> None:
    """Write atomically: the record is what marks the folder complete."""
    write_atomically(folder / RECORD, json.dumps(record.to_json(), indent=2) + "\n")


def already_graded(out: Path, entry: Entry, key: str) -> bool:
    record = read_record(student_dir(out, entry.id))
    return record is not None and record.key == key
