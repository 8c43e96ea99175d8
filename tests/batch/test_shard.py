"""Sharding and merging, on OUT folders written by the batch's own storing code from
results of the real model (grading itself is exercised in test_course.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from batch_data import make_result

from grader.batch import merge, outputs, parse_shard
from grader.batch.outputs import Manifest
from grader.batch.run import store
from grader.batch.shard import Shard
from grader.batch.state import Settings, secret_fingerprint
from grader.course.discover import Entry, Person
from grader.errors import UsageError

STUDENTS = [f"student{i:02d}" for i in range(30)]
SETTINGS = Settings("matmul-naive", "cpu", 5.0, False, secret_fingerprint(None))


def entry(student: str) -> Entry:
    path = Path(f"/course/{student}.cu")
    return Entry(student, [Person(student)], path, path)


def result_for(student: str):
    failing = ("width-100",) if int(student[-2:]) % 3 == 0 else ()
    return make_result("matmul-naive", failing, submission=f"{student}.cu")


def write_out(out: Path, students: list[str], shard: Shard | None, settings=SETTINGS) -> None:
    for student in students:
        key = hashlib.sha256(student.encode()).hexdigest()
        store(out, entry(student), key, result_for(student))
    manifest = Manifest(settings, students, str(shard) if shard else None)
    outputs.write_course_files(out, manifest)


@pytest.mark.parametrize(("text", "shard"), [("1/3", Shard(1, 3)), (" 2 / 8 ", Shard(2, 8))])
def test_shards_parse(text, shard):
    assert parse_shard(text) == shard
    assert str(shard) == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "", "1/0"])
def test_odd_shards_are_refused(text):
    with pytest.raises(UsageError, match="--shard takes I/N"):
        parse_shard(text)


def test_every_student_is_in_exactly_one_shard_and_always_the_same():
    shards = [Shard(i, 4) for i in range(1, 5)]
    owners = [[s for s in shards if s.holds(student)] for student in STUDENTS]
    assert all(len(o) == 1 for o in owners)
    assert all(any(s.holds(st) for st in STUDENTS) for s in shards)
    # a fixed expectation: the hash is part of the format, shards must agree across machines
    assert [s.index for s in shards if s.holds("alice")] == [
        int.from_bytes(hashlib.sha256(b"alice").digest()[:8], "big") % 4 + 1
    ]


def test_merging_three_shards_gives_the_gradebook_of_one_run(tmp_path):
    write_out(tmp_path / "whole", STUDENTS, None)
    parts = []
    for i in range(1, 4):
        shard = Shard(i, 3)
        part = tmp_path / f"shard-{i}"
        write_out(part, [s for s in STUDENTS if shard.holds(s)], shard)
        parts.append(part)
    rows = merge(parts, tmp_path / "merged")
    assert len(rows) == len(STUDENTS)
    whole = (tmp_path / "whole" / outputs.GRADEBOOK).read_bytes()
    assert (tmp_path / "merged" / outputs.GRADEBOOK).read_bytes() == whole
    for student in STUDENTS:
        assert (tmp_path / "merged" / "students" / student / "report.html").is_file()
    summary = (tmp_path / "merged" / outputs.SUMMARY).read_text()
    assert "merged from shards 1/3, 2/3, 3/3" in summary


def test_merge_refuses_a_missing_shard_a_repeat_and_another_batch(tmp_path):
    for i in (1, 2):
        shard = Shard(i, 3)
        write_out(tmp_path / f"s{i}", [s for s in STUDENTS if shard.holds(s)], shard)
    with pytest.raises(UsageError, match="Shard 3/3 is missing"):
        merge([tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    with pytest.raises(UsageError, match="Shard 1/3 is given twice"):
        merge([tmp_path / "s1", tmp_path / "s1", tmp_path / "s2"], tmp_path / "m")
    other = Settings("matmul-naive", "cpu", 5.0, False, secret_fingerprint("another"))
    shard = Shard(3, 3)
    write_out(tmp_path / "s3", [s for s in STUDENTS if shard.holds(s)], shard, other)
    with pytest.raises(UsageError, match="graded differently \\(secret\\)"):
        merge([tmp_path / f"s{i}" for i in (1, 2, 3)], tmp_path / "m")


def test_merge_refuses_what_is_not_a_shard(tmp_path):
    write_out(tmp_path / "whole", STUDENTS[:3], None)
    with pytest.raises(UsageError, match="not a shard"):
        merge([tmp_path / "whole"], tmp_path / "m")
    with pytest.raises(UsageError, match="holds no batch output"):
        merge([tmp_path / "nothing"], tmp_path / "m")
    with pytest.raises(UsageError, match="merge into a new folder"):
        merge([tmp_path / "whole"], tmp_path / "whole")
