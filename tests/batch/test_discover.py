"""Finding submissions: the plain layout, Gradescope's export, GitHub Classroom's clones,
and the files a batch must refuse to follow or to guess between."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.batch.discover import (
    GRADESCOPE_METADATA,
    discover,
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
    [("alice", "alice"), ("a/b", "a_b"), ("..", "_"), (" ü ", "_"), ("x@y.edu", "x@y.edu")],
)
def test_student_ids_become_one_safe_folder_name(text, safe):
    assert safe_id(text) == safe
