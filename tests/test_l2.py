"""The persisting L2 kept out of timing (grader.backends.cuda.l2), the parts that need no
GPU: the driver's structures, and which calls are made, on a stand-in for libcuda."""

from __future__ import annotations

import ctypes

import pytest

from grader.backends.cuda import l2, vmm


class FakeDriver:
    """libcuda's calls as l2 makes them: each recorded, each 0 (success) unless `refuse`
    names it; a device whose persisting L2 set-aside may be `most` bytes."""

    def __init__(self, most: int, refuse: str = "") -> None:
        self.most, self.refuse, self.calls = most, refuse, []

    def __getattr__(self, name: str):
        def function(*args):
            self.calls.append((name, args))
            if name == "cuDeviceGetAttribute":
                args[0]._obj.value = self.most
            return 1 if name == self.refuse else 0

        return function


@pytest.fixture
def driver(monkeypatch):
    def make(most: int, refuse: str = "") -> FakeDriver:
        fake = FakeDriver(most, refuse)
        monkeypatch.setattr(vmm, "libcuda", lambda signatures: fake)
        return fake

    return make


def test_the_driver_s_structures_have_its_sizes():
    assert ctypes.sizeof(l2._Window) == 32
    assert ctypes.sizeof(l2._StreamValue) == 64


def test_clear_sets_nothing_aside_and_clears_the_stream_window_and_reset_makes_lines_normal(
    driver,
):
    fake = driver(most=75 << 20)
    cache = l2.PersistingL2()
    cache.clear()
    cache.reset()
    cache.reset()
    names = [name for name, _ in fake.calls]
    assert names[-4:] == [
        "cuCtxSetLimit",
        "cuStreamSetAttribute",
        "cuCtxResetPersistingL2Cache",
        "cuCtxResetPersistingL2Cache",
    ]
    limit = next(args for name, args in fake.calls if name == "cuCtxSetLimit")
    assert limit == (l2.LIMIT_PERSISTING_L2, 0)
    stream, attribute, value = next(a for n, a in fake.calls if n == "cuStreamSetAttribute")
    assert stream is None and attribute == l2.STREAM_ACCESS_POLICY_WINDOW
    assert bytes(value._obj) == bytes(64)  # a window of 0 bytes: none
    assert cache.window == "cleared" and cache.resets == 2
    assert "reset before every launch" in cache.said()


def test_each_timing_on_a_kept_handle_counts_its_own_resets(driver):
    driver(most=75 << 20)
    cache = l2.PersistingL2()  # one per worker (timing.Rig), cleared per timing
    cache.clear()
    cache.reset()
    cache.reset()
    cache.clear()
    cache.reset()
    assert cache.resets == 1


def test_a_device_without_persisting_lines_is_left_alone(driver):
    fake = driver(most=0)
    cache = l2.PersistingL2()
    cache.clear()
    cache.reset()
    assert [n for n, _ in fake.calls] == ["cuCtxGetDevice", "cuDeviceGetAttribute"]
    assert cache.said() == "this GPU keeps no persisting L2 lines"


def test_a_stream_that_takes_no_window_has_none_to_clear_and_a_failed_reset_is_an_error(driver):
    driver(most=1 << 20, refuse="cuStreamSetAttribute")
    cache = l2.PersistingL2()
    cache.clear()
    assert cache.window.startswith("none can be set (cuStreamSetAttribute failed")
    driver(most=1 << 20, refuse="cuCtxResetPersistingL2Cache")
    with pytest.raises(vmm.VmmError, match="cuCtxResetPersistingL2Cache failed"):
        l2.PersistingL2().reset()
