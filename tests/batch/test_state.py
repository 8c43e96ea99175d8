"""The resumable state: what changes a submission's key, and what marks a folder done."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from batch_data import make_result

from grader.batch.run import store
from grader.batch.state import (
    RECORD,
    REPORT_JSON,
    Settings,
    already_graded,
    read_record,
    secret_fingerprint,
    student_dir,
)
from grader.course.discover import Entry, Person

SECRET = "correct horse battery staple"
BASE = Settings("conv2d", "cpu", 10.0, True, secret_fingerprint(SECRET))


def test_the_key_follows_content_settings_version_and_secret():
    key = BASE.key(b"kernel")
    assert BASE.key(b"kernel") == key
    assert BASE.key(b"kernel ") != key
    for change in (
        {"lab": "conv2d-clamp"},
        {"backend": "cuda"},
        {"timeout": 5.0},
        {"timing": False},
        {"profile": True},  # a resumed batch asked for ncu's profiles grades again
        {"grader_version": "9.9.9"},
        {"secret": secret_fingerprint("another secret")},
        {"secret": secret_fingerprint(None)},
    ):
        assert dataclasses.replace(BASE, **change).key(b"kernel") != key


def test_the_fingerprint_does_not_contain_the_secret():
    fingerprint = secret_fingerprint(SECRET)
    assert SECRET not in fingerprint and len(fingerprint) == 16
    assert secret_fingerprint(None) == secret_fingerprint("") == "none"


def test_a_folder_is_done_only_once_its_record_is_written(tmp_path: Path):
    entry = Entry("ada", [Person("ada", "Ada")], tmp_path / "ada.cu", tmp_path / "ada.cu")
    assert not already_graded(tmp_path, entry, "k1")
    store(tmp_path, entry, "k1", make_result("conv2d", submission="ada.cu"))
    folder = student_dir(tmp_path, "ada")
    assert sorted(p.name for p in folder.iterdir()) == [
        RECORD,
        "junit.xml",
        "report.html",
        REPORT_JSON,
    ]
    assert already_graded(tmp_path, entry, "k1")
    assert not already_graded(tmp_path, entry, "k2")
    assert read_record(folder).people == [Person("ada", "Ada")]
    (folder / REPORT_JSON).unlink()  # a half-written folder is graded again
    assert not already_graded(tmp_path, entry, "k1")
