"""Scratch folders a killed grader left: swept when their process is gone, and nothing
else ever touched; and a folder a grader is done with, removed in the background."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.toolchain import scratch

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="only Linux's /proc tells a grader's process"
)


@pytest.fixture
def tmp(tmp_path, monkeypatch) -> Path:
    """A private temporary directory, where the sweep looks."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def dead_prefix() -> str:
    """The prefix a grader process that has exited gave its folders."""
    code = "from grader.toolchain import scratch; print(scratch.prefix('cpu'))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def leftover(tmp: Path, prefix: str) -> Path:
    """A folder as a killed run leaves it: files, a subfolder, a worker's job."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp))
    (folder / "job").mkdir()
    (folder / "job" / "module.so").write_bytes(b"\x7fELF")
    return folder


def test_a_dead_graders_folder_is_swept_and_a_live_ones_is_not(tmp):
    dead = leftover(tmp, dead_prefix())
    live = leftover(tmp, scratch.prefix("cpu"))
    scratch.sweep()
    assert not dead.exists()
    assert (live / "job" / "module.so").exists()


def test_a_reused_pid_does_not_keep_a_folder_alive(tmp):
    kind, pid, started, host, _ = scratch.prefix("cpu").split("-")[1:]
    reused = leftover(tmp, f"grader-{kind}-{pid}-{int(started) + 1}-{host}-")
    scratch.sweep()
    assert not reused.exists()


def test_links_files_and_other_names_are_never_touched(tmp):
    dead = dead_prefix()
    outside = tmp / "precious"
    outside.mkdir()
    (outside / "thesis.tex").write_text("years of work")
    (tmp / f"{dead}linkto0a").symlink_to(outside)
    inside = leftover(tmp, dead)
    (inside / "job" / "escape").symlink_to(outside)
    (tmp / f"{dead}aplainfi").write_text("")  # a file, not a folder
    kept = [tmp / f"{dead.rsplit('-', 2)[0]}-00000000-otherhos", tmp / "grader-cpu-notmine0"]
    for folder in kept:  # of another boot or PID namespace; of another naming
        folder.mkdir()
    scratch.sweep()
    assert not inside.exists()  # removed without following the link inside it
    assert (outside / "thesis.tex").read_text() == "years of work"
    assert (tmp / f"{dead}linkto0a").is_symlink() and (tmp / f"{dead}aplainfi").exists()
    assert all(folder.exists() for folder in kept)


def test_another_users_folder_is_never_touched(tmp, monkeypatch):
    others = leftover(tmp, dead_prefix())
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    else:
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # as another user
    scratch.sweep()
    assert (others / "job" / "module.so").exists()


def test_a_discarded_folder_is_gone_once_settled(tmp_path):
    for i in range(3):
        folder = tmp_path / f"grader-cpu-{i}"
        (folder / "job").mkdir(parents=True)
        (folder / "job" / "out.0.0.bin").write_bytes(b"\0" * 4096)
        scratch.discard(folder)
    scratch.settle()
    assert list(tmp_path.iterdir()) == []
