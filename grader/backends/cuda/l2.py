"""The L2 cache's persisting lines, kept out of timing: L2 lines marked persisting (a
window of accesses set aside on a stream, or device code's evict_last and persisting
hints) survive the flush before a timed launch, and would hand the next launch data it
did not load. Device code cannot set a window or the set-aside; only host code can, and
the grader's sets neither; but the hints are device code's, so the set-aside is held at
0, the timed stream's window cleared, and every persisting line made normal again before
each timed launch, where the flush then evicts it. PyCUDA does not expose these calls:
they go through ctypes to libcuda, on the context PyCUDA made current (vmm.libcuda)."""

from __future__ import annotations

import ctypes
import time

from grader.backends.cuda import vmm

LIMIT_PERSISTING_L2 = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
ATTRIBUTE_MAX_PERSISTING_L2 = 108  # CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
STREAM_ACCESS_POLICY_WINDOW = 1  # CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW


class _Window(ctypes.Structure):
    """CUaccessPolicyWindow: all zero is no window (0 bytes, normal hits and misses)."""

    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class _StreamValue(ctypes.Union):
    """CUstreamAttrValue (CUlaunchAttributeValue since CUDA 12: 64 bytes)."""

    _fields_ = [("accessPolicyWindow", _Window), ("pad", ctypes.c_char * 64)]


_SIGNATURES = {
    "cuCtxGetDevice": (ctypes.POINTER(ctypes.c_int),),
    "cuDeviceGetAttribute": (ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int),
    "cuCtxSetLimit": (ctypes.c_int, ctypes.c_size_t),
    "cuCtxResetPersistingL2Cache": (),
    "cuStreamSetAttribute": (ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_StreamValue)),
}


class PersistingL2:
    """The current context's persisting L2, emptied for timing. A device without one
    (before Ampere) has nothing to empty, and every call is then none."""

    def __init__(self) -> None:
        self.lib = vmm.libcuda(_SIGNATURES)
        device, most = ctypes.c_int(), ctypes.c_int()
        vmm.call(self.lib, "cuCtxGetDevice", ctypes.byref(device))
        args = (ctypes.byref(most), ATTRIBUTE_MAX_PERSISTING_L2, device.value)
        vmm.call(self.lib, "cuDeviceGetAttribute", *args)
        self.present = most.value > 0
        self.window = "none set"  # what clear() found of the stream's window
        self.resets, self.seconds = 0, 0.0  # what reset() cost the host

    def clear(self, stream: int | None = None) -> None:
        """No L2 set aside for persisting lines, and no window on `stream` (None: the
        default stream, which the timed launches use): once per timing, as only host code
        sets either. A stream the driver sets no window on has none to clear. What
        reset() cost starts again here: a worker keeps one handle for all its timings
        (timing.Rig), and each timing's note says its own."""
        self.resets, self.seconds = 0, 0.0
        if not self.present:
            return
        vmm.call(self.lib, "cuCtxSetLimit", LIMIT_PERSISTING_L2, 0)
        try:
            vmm.call(
                self.lib,
                "cuStreamSetAttribute",
                stream,
                STREAM_ACCESS_POLICY_WINDOW,
                ctypes.byref(_StreamValue()),
            )
        except vmm.VmmError as refused:
            self.window = f"none can be set ({refused})"
        else:
            self.window = "cleared"

    def reset(self) -> None:
        """Every persisting line made normal, for the flush to evict: before each timed
        launch, as device code may mark lines in any launch."""
        if not self.present:
            return
        started = time.perf_counter()
        vmm.call(self.lib, "cuCtxResetPersistingL2Cache")
        self.seconds += time.perf_counter() - started
        self.resets += 1

    def said(self) -> str:
        """What was done, for the timing's note, with what a reset costs."""
        if not self.present:
            return "this GPU keeps no persisting L2 lines"
        each = self.seconds / max(self.resets, 1) * 1e6
        return (
            f"persisting L2 lines reset before every launch ({each:.0f} µs each) with none "
            f"set aside, the stream's access-policy window {self.window}"
        )
