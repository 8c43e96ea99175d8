"""The build cache keeps to its size bound: least recently used entries go first, while
recent entries and those a process holds (the runner) stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from grader.errors import SetupError
from grader.toolchain import build_cache, nvcc

HOUR = 3600


def entry(root: Path, name: str, size: int, age: float) -> Path:
    """A cache entry of `size` bytes last used `age` seconds ago."""
    path = root / name
    if name.endswith(".json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    else:
        path.mkdir(parents=True)
        (path / "module.so").write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize(
    ("text", "size"),
    [("", 1 << 30), ("1024", 1024), ("500M", 500 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29)],
)
def test_the_bound_is_read_from_the_environment(monkeypatch, text, size):
    monkeypatch.setenv("GRADER_CACHE_SIZE", text)
    assert build_cache.size_limit() == size


def test_a_bound_that_is_not_a_size_is_refused(monkeypatch):
    monkeypatch.setenv("GRADER_CACHE_SIZE", "lots")
    with pytest.raises(SetupError, match="GRADER_CACHE_SIZE='lots' is not a size"):
        build_cache.size_limit()


def test_least_recently_used_entries_go_first_and_recent_ones_stay(tmp_path):
    oldest = entry(tmp_path, "nvcc/a.json", 1000, 5 * HOUR)
    old = entry(tmp_path, "cpu/mod-old", 1000, 4 * HOUR)
    kept = entry(tmp_path, "cpu/mod-kept", 1000, 3 * HOUR)
    fresh = entry(tmp_path, "cpu/mod-fresh", 1000, 60)  # inside the grace period
    build_cache.used(kept)  # a hit makes it the most recently used
    assert build_cache.prune(tmp_path, limit=2500) == 2000
    assert not oldest.exists() and not old.exists()
    assert kept.exists() and fresh.exists()
    assert build_cache.prune(tmp_path, limit=0) == 0  # the rest is recent
    assert [p.name for *_, p in build_cache.entries(tmp_path)] == ["mod-fresh", "mod-kept"]


def test_an_entry_a_process_holds_is_never_evicted(tmp_path):
    runner = entry(tmp_path, "cpu/runner-abc", 5000, 0)
    assert build_cache.hold(runner)
    then = time.time() - 48 * HOUR
    os.utime(runner, (then, then))
    other = entry(tmp_path, "cpu/mod-x", 10, 5 * HOUR)
    assert build_cache.prune(tmp_path, limit=0) == 10
    assert (runner / "module.so").exists() and not other.exists()
    assert not list((tmp_path / "cpu").glob("*.evicted-*"))


def test_storing_an_entry_prunes_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setenv("GRADER_CACHE_SIZE", "3000")
    monkeypatch.setattr(build_cache, "_last_prune", -build_cache.PRUNE_EVERY)
    stale = entry(tmp_path, "cpu/mod-stale", 4000, 2 * HOUR)
    nvcc._cache_store("k" * 64, {"ok": True})  # a new nvcc inspection
    assert not stale.exists()
    assert nvcc._cache_load("k" * 64) == {"ok": True}
