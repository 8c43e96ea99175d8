"""bench/warm_ab.py: warm checks of several trees of the grader, interleaved on one machine,
each tree with its own grader, cache and bytecode."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("warm_ab", ROOT / "bench" / "warm_ab.py")
warm_ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(warm_ab)


def test_a_tree_imports_its_own_grader_with_its_own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", str(ROOT)]))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = warm_ab.tree_env(tmp_path / "tree", tmp_path / "cache")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "tree"), "/elsewhere"]
    assert env["GRADER_CACHE"] == str(tmp_path / "cache")
    assert "PYTHONDONTWRITEBYTECODE" not in env


def test_a_tree_must_hold_a_grader(tmp_path):
    assert warm_ab.tree_arg(f"main={ROOT}") == ("main", ROOT)
    with pytest.raises(argparse.ArgumentTypeError):
        warm_ab.tree_arg(f"empty={tmp_path}")


def test_two_trees_are_checked_in_turn_and_each_gets_a_median(tmp_path):
    """On the CPU backend, which every machine has: one lab, one run."""
    trees = {"a": ROOT, "b": ROOT}
    lines = warm_ab.compare(trees, ["matmul-naive"], 1, "cpu", tmp_path)
    assert [line.split()[:2] for line in lines] == [["matmul-naive", "a"], ["matmul-naive", "b"]]
    assert all(not math.isnan(float(line.split()[2])) for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # a cache each
