"""Cores and memory are what this process may use: its CPU affinity, then the CPU quota
and memory limit of its cgroup (v2, or v1) and those above it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import machine

PHYSICAL = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity (Linux)"
)


@needs_affinity
def test_cores_follow_the_affinity_like_taskset():
    one = sorted(os.sched_getaffinity(0))[:1]
    code = (
        f"import os; from grader import machine; os.sched_setaffinity(0, {one}); "
        "print(machine.cores())"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "1", done.stderr


@pytest.fixture
def cgroups(tmp_path, monkeypatch):
    """A cgroup tree of our own, with this process in /course/grading."""
    monkeypatch.setattr(machine, "CGROUP_ROOT", tmp_path / "cgroup")
    monkeypatch.setattr(machine, "PROC_CGROUP", tmp_path / "proc-self-cgroup")
    machine._chain.cache_clear()
    yield tmp_path
    machine._chain.cache_clear()


def test_a_cgroup_v2_quota_and_memory_limit_above_this_process_bind(cgroups):
    (cgroups / "proc-self-cgroup").write_text("0::/course/grading\n")
    root = cgroups / "cgroup"
    leaf = root / "course" / "grading"
    leaf.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    (leaf / "cpu.max").write_text("max 100000\n")
    (leaf / "memory.max").write_text("max\n")
    (leaf.parent / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs, one level up
    (leaf.parent / "memory.max").write_text(f"{3 << 30}\n")
    assert machine.cores() == 1
    assert machine.memory() == min(3 << 30, PHYSICAL)
    assert machine.slots(1 << 30) == 1


def test_a_cgroup_v1_quota_binds_too(cgroups):
    (cgroups / "proc-self-cgroup").write_text("4:memory:/job\n2:cpu,cpuacct:/job\n0::/\n")
    cpu = cgroups / "cgroup" / "cpu,cpuacct" / "job"
    memory = cgroups / "cgroup" / "memory" / "job"
    cpu.mkdir(parents=True)
    memory.mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text("200000\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    (memory / "memory.limit_in_bytes").write_text(f"{1 << 30}\n")
    assert machine.cores() == min(2, len(os.sched_getaffinity(0)))
    assert machine.memory() == min(1 << 30, PHYSICAL)


def test_no_cgroup_limits_leave_the_affinity_and_the_physical_memory(cgroups):
    (cgroups / "proc-self-cgroup").write_text("0::/\n")
    (cgroups / "cgroup").mkdir()
    assert machine.cores() == len(os.sched_getaffinity(0))
    assert machine.memory() == PHYSICAL
