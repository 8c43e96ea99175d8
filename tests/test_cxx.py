"""source_hash names what the runner, the shim and the sandbox are built from: it follows
every edit of a source, though it reads a file again only when the file's stat changes."""

from __future__ import annotations

import os

from grader.toolchain import cxx


def test_the_hash_follows_each_edit_of_a_source(tmp_path, monkeypatch):
    monkeypatch.setattr(cxx, "PACKAGE", tmp_path)
    source = tmp_path / "runtime" / "a.cpp"
    source.parent.mkdir()
    source.write_text("int a;")
    first = cxx.source_hash([source])
    assert cxx.source_hash([source]) == first
    source.write_text("int b;")  # the same size: its times tell
    os.utime(source, ns=(1, 1))
    second = cxx.source_hash([source])
    assert second != first
    source.write_text("int bb;")
    os.utime(source, ns=(1, 1))
    assert cxx.source_hash([source]) not in (first, second)


def test_the_hash_covers_each_sources_place_and_the_generated_text(tmp_path, monkeypatch):
    monkeypatch.setattr(cxx, "PACKAGE", tmp_path)
    a, b = tmp_path / "a.h", tmp_path / "b.h"
    a.write_text("x")
    b.write_text("x")
    assert cxx.source_hash([a]) != cxx.source_hash([b])
    assert cxx.source_hash([a, b]) == cxx.source_hash([b, a])
    assert cxx.source_hash([a], "one") != cxx.source_hash([a], "two")
