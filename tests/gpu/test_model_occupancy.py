"""The occupancy grader.model.occupancy works out for sm_90, against the driver's own
(cuOccupancyMaxActiveBlocksPerMultiprocessor) on an sm_90 GPU (H100, H200), for kernels
nvcc compiles here: each kernel's registers and static shared memory are the driver's
figures for it (cuFuncGetAttribute), the ones ptxas reports."""

from __future__ import annotations

import ctypes
import subprocess

import pytest

from grader.model.occupancy import occupancy
from grader.model.result import KernelResources
from grader.toolchain import nvcc

KERNELS = r"""
extern "C" __global__ void light(float* a) { a[threadIdx.x] = 1.0f; }

extern "C" __global__ void tiled(float* a) {
    __shared__ float t[12 * 1024];  // 48 KiB
    t[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = t[(threadIdx.x + 1) % 1024];
}

extern "C" __global__ void heavy(const float* a, float* b, int n) {
    float acc[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = a[threadIdx.x + j];
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + 1) % 48] + 1.0f;
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 48; ++j) s += acc[j];
    b[threadIdx.x] = s;
}

extern "C" __global__ void dynamic(float* a) {
    extern __shared__ float d[];
    d[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = d[0];
}
"""
BLOCKS = (32, 64, 96, 128, 256, 384, 512, 768, 1024)
DYNAMIC = {"dynamic": (0, 10 * 1024, 40 * 1024)}
# CUfunction_attribute and CUdevice_attribute values (cuda.h)
MAX_THREADS_PER_BLOCK, SHARED_SIZE_BYTES, NUM_REGS = 0, 1, 4
COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR = 75, 76


class Driver:
    """The few driver calls the comparison needs, on device 0's primary context."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.call("cuInit", 0)
        self.device = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(self.device), 0)
        context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), self.device)
        self.call("cuCtxSetCurrent", context)

    def call(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        assert code == 0, f"{name} failed with CUresult {code}"

    def attribute(self, which: int) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), which, self.device)
        return value.value

    def functions(self, cubin: bytes, names) -> dict[str, ctypes.c_void_p]:
        module = ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(cubin))
        found = {}
        for name in names:
            found[name] = ctypes.c_void_p()
            self.call("cuModuleGetFunction", ctypes.byref(found[name]), module, name.encode())
        return found

    def function_attribute(self, function, which: int) -> int:
        value = ctypes.c_int()
        self.call("cuFuncGetAttribute", ctypes.byref(value), which, function)
        return value.value

    def blocks(self, function, threads: int, dynamic: int) -> int:
        found = ctypes.c_int()
        self.call(
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            ctypes.byref(found),
            function,
            threads,
            ctypes.c_size_t(dynamic),
        )
        return found.value


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    driver = Driver()
    capability = (
        driver.attribute(COMPUTE_CAPABILITY_MAJOR),
        driver.attribute(COMPUTE_CAPABILITY_MINOR),
    )
    if capability != (9, 0):
        pytest.skip(f"the limits are sm_90's; this GPU is sm_{capability[0]}{capability[1]}")
    if nvcc.find() is None:
        pytest.skip("no nvcc to compile the kernels with")
    folder = tmp_path_factory.mktemp("occupancy")
    (folder / "k.cu").write_text(KERNELS)
    cmd = [
        nvcc.find(),
        "-cubin",
        "-arch=sm_90",
        "-o",
        str(folder / "k.cubin"),
        str(folder / "k.cu"),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    names = ("light", "tiled", "heavy", "dynamic")
    return driver, driver.functions((folder / "k.cubin").read_bytes(), names)


@pytest.mark.parametrize("name", ["light", "tiled", "heavy", "dynamic"])
def test_the_calculators_blocks_are_the_drivers(compiled, name):
    driver, functions = compiled
    function = functions[name]
    registers = driver.function_attribute(function, NUM_REGS)
    shared = driver.function_attribute(function, SHARED_SIZE_BYTES)
    largest = driver.function_attribute(function, MAX_THREADS_PER_BLOCK)
    resources = KernelResources(registers=registers, shared_bytes=shared)
    compared = []
    for threads in (t for t in BLOCKS if t <= largest):
        for dynamic in DYNAMIC.get(name, (0,)):
            ours = occupancy(resources, threads, dynamic)
            theirs = driver.blocks(function, threads, dynamic)
            compared.append((threads, dynamic, ours.blocks_per_sm, theirs))
    wrong = [c for c in compared if c[2] != c[3]]
    assert compared and not wrong, (
        f"{name} ({registers} registers, {shared} bytes of static shared memory): "
        f"(threads, dynamic shared bytes, ours, the driver's) that differ: {wrong}"
    )
