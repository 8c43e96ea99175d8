"""The course-wide files of a batch's OUT folder, built only from the student folders, so
that one run, a resumed run and a merge of shards write the same bytes:

    OUT/batch.json        the manifest: lab, settings, which students this folder holds
    OUT/gradebook.csv     grader.batch.gradebook
    OUT/summary.html      grader.batch.summary
    OUT/similar/          grader.batch.similar: the similar pairs' pages
    OUT/students/<id>/    report.json, report.html, junit.xml, grading.json"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grader import labs
from grader.batch import gradebook, similar, summary
from grader.batch.state import REPORT_JSON, Record, Settings, read_record, student_dir
from grader.errors import UsageError
from grader.files import write_atomically
from grader.model.result import Result
from grader.report import json as json_report

MANIFEST = "batch.json"
GRADEBOOK = "gradebook.csv"
SUMMARY = "summary.html"


@dataclass
class Manifest:
    settings: Settings
    students: list[str]
    shard: str | None = None  # "I/N", or None for the whole course
    shards: list[str] = field(default_factory=list)  # what a merge combined
    layout: str = "plain"
    ignored: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return cls(**{**data, "settings": Settings(**data["settings"])})


def write_manifest(out: Path, manifest: Manifest) -> None:
    write_atomically(Path(out) / MANIFEST, json.dumps(manifest.to_json(), indent=2) + "\n")


def read_manifest(out: Path) -> Manifest:
    path = Path(out) / MANIFEST
    try:
        return Manifest.from_json(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise UsageError(f"{out} holds no batch output: {path} is missing.") from error
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"{path} is not a batch manifest of this grader version.") from error


def graded(out: Path, student: str) -> tuple[Record, Result]:
    folder = student_dir(out, student)
    record = read_record(folder)
    if record is None:
        raise UsageError(f"{folder} is incomplete: grade this batch again to finish it.")
    return record, json_report.read(folder / REPORT_JSON)


def collect(out: Path, manifest: Manifest) -> list[tuple[Record, Result]]:
    return [graded(out, student) for student in manifest.students]


def write_course_files(out: Path, manifest: Manifest) -> list[gradebook.Row]:
    """gradebook.csv and summary.html for the students the manifest lists; returns the rows."""
    lab = labs.get(manifest.settings.lab)
    hidden_run = manifest.settings.secret != "none"
    pairs = collect(out, manifest)
    found = [row for rec, res in pairs for row in gradebook.rows_for(lab, rec, res, hidden_run)]
    backends = ", ".join(sorted({res.backend for _, res in pairs})) or manifest.settings.backend
    gradebook.write(Path(out) / GRADEBOOK, found)
    results = {record.id: result for record, result in pairs}
    texts = {record.id: result.source for record, result in pairs if result.source}
    shown = similar.for_batch(Path(out), lab, texts)
    summary.write(Path(out) / SUMMARY, lab.name, found, backends, manifest.shards, results, shown)
    write_manifest(out, manifest)
    return found
