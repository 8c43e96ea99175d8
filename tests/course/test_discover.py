"""Finding submissions: the plain layout, Gradescope's export, GitHub Classroom's clones,
and the files a batch must refuse to follow or to guess between."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from folder_kit import deep, remove_deep

from grader.course.discover import (
    GRADESCOPE_METADATA,
    MAX_DEPTH,
    MAX_ENTRIES,
    MAX_NAME,
    discover,
    original_id,
    parse_gradescope_metadata,
    safe_id,
)
from grader.errors import UsageError

KERNEL = "__global__ void matmul(const float* M, const float* N, float* P, int Width) {}\n"

METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2026-10-01 10:00:00.000000000 -07:00
  :score: 7.5
submission_102:
  :submitters:
  - :name: Grace Hopper
    :sid:
    :email: grace@example.edu
  - :name: "Alan Turing"
    :sid: '1912'
    :email: alan@example.edu
  :history:
  - :submitters:
    - :name: Someone Else
      :sid: '9'
"""


def write(path: Path, text: str = KERNEL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_plain_layout_files_and_folders(tmp_path):
    write(tmp_path / "alice.cu")
    write(tmp_path / "bob" / "kernel.cu")
    write(tmp_path / "notes.txt", "not a submission")
    write(tmp_path / ".hidden.cu")
    found = discover(tmp_path)
    assert found.layout == "plain"
    assert [e.id for e in found.entries] == ["alice", "bob"]
    assert found.entries[0].source == tmp_path / "alice.cu"
    assert found.entries[1].source == tmp_path / "bob" / "kernel.cu"
    assert found.ignored == ["notes.txt"]


def test_a_folder_without_a_kernel_or_with_several_gets_a_reason(tmp_path):
    write(tmp_path / "empty" / "README.md", "nothing")
    write(tmp_path / "two" / "a.cu")
    write(tmp_path / "two" / "b.cu")
    write(tmp_path / "named" / "old.cu")
    write(tmp_path / "named" / "kernel.cu")
    write(tmp_path / "nested" / "src" / "kernel.cu")
    write(tmp_path / "nested" / ".git" / "stash.cu")
    entries = {e.id: e for e in discover(tmp_path).entries}
    assert entries["empty"].source is None
    assert "no .cu file" in entries["empty"].problem
    assert entries["two"].source is None
    assert "several .cu files (a.cu, b.cu)" in entries["two"].problem
    assert entries["named"].source.name == "kernel.cu"
    assert entries["nested"].source == tmp_path / "nested" / "src" / "kernel.cu"


def test_symbolic_links_are_never_followed(tmp_path):
    secret = write(tmp_path.parent / f"{tmp_path.name}-secret.cu", "the hidden cases")
    course = tmp_path / "course"
    write(course / "victim" / "kernel.cu")
    os.makedirs(course / "thief")
    os.symlink(course / "victim" / "kernel.cu", course / "thief" / "kernel.cu")
    os.symlink(secret, course / "mallory.cu")
    entries = {e.id: e for e in discover(course).entries}
    assert entries["thief"].source is None
    assert "symbolic link" in entries["thief"].problem
    assert entries["mallory"].source is None
    assert "symbolic link" in entries["mallory"].problem


def test_two_submissions_of_one_student_are_refused(tmp_path):
    write(tmp_path / "alice.cu")
    write(tmp_path / "alice" / "kernel.cu")
    with pytest.raises(UsageError, match="Two submissions belong to student 'alice'"):
        discover(tmp_path)


def test_a_missing_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not a folder"):
        discover(tmp_path / "nowhere")


def test_gradescope_metadata_names_the_submitters():
    people = parse_gradescope_metadata(METADATA)
    assert [p.id for p in people["submission_101"]] == ["1815"]
    assert people["submission_101"][0].name == "Ada Lovelace"
    group = people["submission_102"]
    assert [(p.id, p.name, p.email) for p in group] == [
        ("grace@example.edu", "Grace Hopper", "grace@example.edu"),
        ("1912", "Alan Turing", "alan@example.edu"),
    ]


def test_gradescope_metadata_is_read_as_yaml_says():
    """Escapes, quoting and numbers as YAML means them: the hand-written reader this
    replaced left "Zo\\xEB" raw."""
    text = (
        "submission_7:\n"
        "  :submitters:\n"
        '  - :name: "Zo\\xEB Ad\\xE9la\\xEFde"\n'
        "    :sid: 2024007\n"
        "    :email: 'zoe@example.edu' # a comment\n"
        "  - :name: 'O''Brien'\n"
        "    :email: ob@example.edu\n"
    )
    zoe, obrien = parse_gradescope_metadata(text)["submission_7"]
    assert (zoe.id, zoe.name, zoe.email) == ("2024007", "Zoë Adélaïde", "zoe@example.edu")
    assert (obrien.id, obrien.name) == ("ob@example.edu", "O'Brien")


@pytest.mark.parametrize("text", ["submission_1: [unclosed\n", "- a list\n"])
def test_metadata_that_is_not_gradescopes_is_a_usage_error(tmp_path, text):
    write(tmp_path / GRADESCOPE_METADATA, text)
    write(tmp_path / "submission_1" / "kernel.cu")
    with pytest.raises(UsageError, match=GRADESCOPE_METADATA):
        discover(tmp_path)


def test_gradescope_export_as_it_unzips(tmp_path):
    export = tmp_path / "assignment_555_export"
    write(export / GRADESCOPE_METADATA, METADATA)
    write(export / "submission_101" / "kernel.cu")
    write(export / "submission_102" / "matmul.cu")
    found = discover(tmp_path)
    assert found.layout == "gradescope"
    entries = {e.id: e for e in found.entries}
    assert set(entries) == {"1815", "grace@example.edu"}
    assert [p.id for p in entries["grace@example.edu"].people] == ["grace@example.edu", "1912"]
    assert entries["1815"].source.name == "kernel.cu"


def test_github_classroom_clones_are_named_by_login(tmp_path):
    for login in ("octocat", "hubot", "mona-lisa"):
        repo = tmp_path / f"matmul-lab-{login}"
        write(repo / "kernel.cu")
        (repo / ".git").mkdir()
    found = discover(tmp_path)
    assert found.layout == "classroom"
    assert [e.id for e in found.entries] == ["hubot", "mona-lisa", "octocat"]


def test_folders_that_are_not_git_clones_are_plain(tmp_path):
    write(tmp_path / "lab-alice" / "kernel.cu")
    write(tmp_path / "lab-bob" / "kernel.cu")
    found = discover(tmp_path)
    assert found.layout == "plain"
    assert [e.id for e in found.entries] == ["lab-alice", "lab-bob"]


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("alice", "alice"),
        ("a/b", "a%2Fb"),
        ("..", "%2E."),
        (" ü ", "%20ü%20"),
        ("x@y.edu", "x@y.edu"),
        ("bob~smith@uni.edu", "bob%7Esmith@uni.edu"),
        ("bob_smith@uni.edu", "bob_smith@uni.edu"),
        ("50%", "50%25"),
        ("张三", "张三"),
        ("\x1b[2J", "%1B%5B2J"),
        ("", "%"),
    ],
)
def test_student_ids_become_one_safe_folder_name(text, safe):
    assert safe_id(text) == safe
    assert original_id(safe) == text


def _ids() -> list[str]:
    """Ids that differ by one character: every ASCII character and some others, alone, at
    the start and inside; and random strings of them."""
    chars = [chr(c) for c in range(1, 128)] + ["ü", "张", "\u202e", "\u00a0", "\udcff", "%"]
    ids = [c for c in chars] + [f"{c}x" for c in chars] + [f"bob{c}smith" for c in chars]
    rng = random.Random(18)
    ids += ["".join(rng.choices(chars, k=rng.randint(1, 12))) for _ in range(3000)]
    return list(dict.fromkeys(ids))


def test_no_two_ids_share_a_folder_and_every_folder_gives_back_its_id():
    ids = _ids()
    names = [safe_id(text) for text in ids]
    assert len(set(names)) == len(ids)
    for text, name in zip(ids, names, strict=True):
        assert original_id(name) == text
        assert "/" not in name and "\0" not in name and not name.startswith(".")
        assert name.isprintable() and name not in (".", "..")


def test_a_folder_name_stays_short_and_unique(tmp_path):
    long = ["ü" * 300, "ü" * 300 + "a", "x" * 400]
    names = [safe_id(text) for text in long]
    assert len(set(names)) == 3
    for name in names:
        assert len(name.encode()) <= MAX_NAME
        (tmp_path / name).mkdir()  # a name the file system takes
        assert original_id(name) is None  # the id is in the folder's grading.json


def test_gradescope_names_that_differ_in_one_character_are_two_students(tmp_path):
    metadata = "".join(
        f"submission_{n}:\n  :submitters:\n  - :name: B\n    :email: {email}\n"
        for n, email in (
            (1, "bob~smith@uni.edu"),
            (2, "bob_smith@uni.edu"),
            (3, "bob smith@uni.edu"),
        )
    )
    write(tmp_path / GRADESCOPE_METADATA, metadata)
    for n in (1, 2, 3):
        write(tmp_path / f"submission_{n}" / "kernel.cu")
    found = discover(tmp_path)
    ids = [original_id(e.id) for e in found.entries]
    assert ids == ["bob smith@uni.edu", "bob~smith@uni.edu", "bob_smith@uni.edu"]
    assert all(e.source is not None for e in found.entries)


# -- folders that must not stop a batch -------------------------------------------------


@pytest.fixture
def course(tmp_path):
    yield tmp_path / "course"
    for student in ("deep", "deeper"):
        if (tmp_path / "course" / student).exists():
            remove_deep(tmp_path / "course" / student)


def test_a_folder_1100_levels_deep_is_that_students_row(course):
    assert sys.getrecursionlimit() < 1100
    write(course / "ann" / "kernel.cu")
    write(deep(course / "deep", 1100) / "kernel.cu")
    write(deep(course / "deeper", MAX_DEPTH + 1) / "kernel.cu")
    write(deep(course / "fine", 0) / "x" / "kernel.cu")
    entries = {e.id: e for e in discover(course).entries}
    assert entries["ann"].source is not None and entries["fine"].source is not None
    for student in ("deep", "deeper"):
        assert entries[student].source is None
        assert entries[student].problem == (
            f"{student} has folders nested more than {MAX_DEPTH} deep, so the grader did not "
            "look through it: submit the .cu file without them."
        )


def test_a_folder_exactly_as_deep_as_allowed_is_looked_through(tmp_path):
    path = tmp_path / "ann"
    for _ in range(MAX_DEPTH):
        path = path / "d"
    write(path / "kernel.cu")
    assert discover(tmp_path).entries[0].source == path / "kernel.cu"


def test_a_folder_of_too_many_entries_is_that_students_row(tmp_path):
    write(tmp_path / "ann" / "kernel.cu")
    crowd = tmp_path / "crowd"
    write(crowd / "kernel.cu")
    for i in range(MAX_ENTRIES):
        os.link(crowd / "kernel.cu", crowd / f"f{i}")
    entries = {e.id: e for e in discover(tmp_path).entries}
    assert entries["ann"].source is not None
    assert entries["crowd"].source is None
    assert f"crowd holds more than {MAX_ENTRIES} files and folders" in entries["crowd"].problem


def test_link_loops_are_never_followed(tmp_path):
    write(tmp_path / "ann" / "src" / "kernel.cu")
    os.symlink("b", tmp_path / "ann" / "a")
    os.symlink("a", tmp_path / "ann" / "b")
    os.symlink(".", tmp_path / "ann" / "src" / "self")
    os.symlink("loop", tmp_path / "loop")
    entries = {e.id: e for e in discover(tmp_path).entries}
    assert entries["ann"].source == tmp_path / "ann" / "src" / "kernel.cu"
    assert "symbolic link" in entries["loop"].problem


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder of mode 000")
def test_an_unreadable_folder_is_that_students_row(tmp_path):
    write(tmp_path / "ann" / "kernel.cu")
    write(tmp_path / "shut" / "inner" / "kernel.cu")
    (tmp_path / "shut" / "inner").chmod(0)
    try:
        entries = {e.id: e for e in discover(tmp_path).entries}
    finally:
        (tmp_path / "shut" / "inner").chmod(0o755)
    assert entries["ann"].source is not None
    assert entries["shut"].problem.startswith("shut/inner cannot be read (Permission denied)")


def test_names_that_are_not_utf8_are_kept_apart_and_readable(tmp_path):
    for raw in (b"caf\xe9", b"caf\xe9\xe9"):
        folder = os.path.join(os.fsencode(tmp_path), raw)
        os.mkdir(folder)
        Path(os.fsdecode(folder), "kernel.cu").write_text(KERNEL)
    found = discover(tmp_path).entries
    assert sorted(e.id for e in found) == ["caf%E9", "caf%E9%E9"]
    assert sorted(e.people[0].id for e in found) == ["caf\\xe9", "caf\\xe9\\xe9"]
