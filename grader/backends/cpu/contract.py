"""The contract between the CPU backend and its runner (runtime/*.cpp): every number and
word the grader and the C++ share, written once, here.

The grader reads this module. The runner's build writes it as the C++ header contract.h
(grader.backends.cpu.runner.contract_header), which the runtime includes: the runner's own names,
and a check of the shim's copies (include/grader_codes.h, which every module is compiled
against without the runner), so that a runner whose shim disagrees with this table does
not build. tests/cpu/test_contract.py checks that each side uses all of it and nothing
past it."""

from __future__ import annotations

from enum import IntEnum

from grader.model.interface import MAX_LOCAL
from grader.model.launch import CANARY_BITS, SHARED_FILL_BITS
from grader.toolchain.header import ANY, AT_MOST_ONCE, ONCE


class Exit(IntEnum):
    """How the runner ends (EXIT_* in C++)."""

    OK = 0
    USAGE = 2  # a command line or job.txt it cannot read: the grader's own mistake
    SANDBOX = 3  # a layer of the sandbox could not be applied
    LOAD = 4  # the module did not load, or does not fit the launch
    SETUP = 5  # the launch could not be prepared (before any code of the submission ran)
    FAULT = 42  # a fault in the kernel, or a check of the shim that stops it
    TIMEOUT = 43  # the worker's own watchdog stopped the kernel


# A phase's timeout counts the CPU time it worked (runtime/signals.cpp), so that a busy
# machine does not make a kernel hang; one that waits without working is stopped at this
# many times its seconds of wall time.
WALL_FACTOR = 8

# The runner's numbers: name -> (C++ type, value).
NUMBERS = {
    "CANARY": ("uint32_t", CANARY_BITS),  # the fill of the pages around each buffer
    "SHARED_FILL": ("uint32_t", SHARED_FILL_BITS),  # shared memory no thread wrote
    "FIBER_STACK": ("size_t", MAX_LOCAL),  # a CUDA thread's stack: its local memory at most
    "WALL_FACTOR": ("unsigned", WALL_FACTOR),
}

# job.txt, which grader.backends.cpu.job writes for `runner run`: one key a line, its
# values after it, and how many lines of it a job has (JOB_* in C++). The runner refuses a
# job with a key not here, or with a key more or fewer times than it says.
JOB_KEYS = {
    "module": ONCE,  # the module's path, from the job folder
    "kernel": ONCE,
    "grid": ONCE,  # x y z
    "block": ONCE,  # x y z
    "shared": ONCE,  # bytes of dynamic shared memory
    "jobs": ONCE,  # threads of the pool
    "timeout": ONCE,  # seconds of a pass, and of loading the module
    "passes": ONCE,
    "hazards": ONCE,  # 1: find the shared-memory access a missing barrier exposes
    "profile": ONCE,  # 1: the first pass's memory profile (runtime/profile.cpp)
    "apart": ONCE,  # 1: the blocks store disjoint elements (job.blocks_apart)
    "output_limit": ONCE,  # bytes of printf output kept
    "memory_headroom": ONCE,  # bytes of address space past what the runner holds
    "cpu": ONCE,  # seconds of CPU time
    "fsize": ONCE,  # bytes of the largest file written
    "require_fs": ONCE,  # 1: stop unless landlock isolates the files
    "require_net": ONCE,  # 1: stop unless seccomp or a namespace isolates the network
    "scratch": ONCE,  # the job folder, the only one it may read and write
    "uid": AT_MOST_ONCE,  # uid gid: the user a worker started by root becomes
    "preload": ANY,  # a library the module needs, loaded before the sandbox closes
    "arg": ANY,  # buffer ELEMENTS ACCESS WIDTH NAME, or scalar CTYPE VALUE
    "constant": ANY,  # BYTES NAME: a variable filled from its CONSTANT file
    "carry": ANY,  # BYTES NAME: a variable written back to its CARRY file
    "variable": ANY,  # NAME: a __device__ or __constant__ variable whose accesses a profile counts
}

# The files of a job folder that both sides name (FILE_* in C++); {} is a buffer's
# ordinal, a pass or a variable's name, in that order.
FILES = {
    "job": "job.txt",
    "input": "buf_{}.bin",  # a buffer's elements
    "output": "out.{}.{}.bin",  # a buffer as a pass left it, with the fill on its open side
    "constant": "const_{}.bin",  # a variable's bytes to start from
    "carry": "carry_{}.bin",  # a carried variable as the first pass left it
    "printf": "printf.txt",  # the first pass's printf output
    "token": "token.txt",  # the seals' and the profile's, blanked before the submission runs
}

# -- the shim's codes: include/grader_codes.h, in modules and the runner alike ---------------


class Magic(IntEnum):
    """The first word of what the registration footer declares (grader::*_MAGIC)."""

    SIG = 0x47524431  # a kernel's parameters: grader_sig_NAME
    VAR = 0x47525631  # a variable: grader_var_NAME
    SHARED = 0x47525331  # a static __shared__ declaration


class Barrier(IntEnum):
    """The barrier a thread waits at (GRADER_BAR_*): a "divergence" record's op."""

    SYNC = 0
    COUNT = 1
    AND = 2
    OR = 3


class WarpOp(IntEnum):
    """The warp operation a thread waits in (GRADER_WARP_*): a "divergence" record's op."""

    SYNC = 0
    SHFL = 1
    SHFL_UP = 2
    SHFL_DOWN = 3
    SHFL_XOR = 4
    BALLOT = 5
    ANY = 6
    ALL = 7
    MATCH_ANY = 8
    REDUCE_ADD = 9
    REDUCE_MIN = 10
    REDUCE_MAX = 11
    REDUCE_AND = 12
    REDUCE_OR = 13
    REDUCE_XOR = 14


class Base(IntEnum):
    """The low byte of a kernel parameter's type code (grader::T_*); bits 8-11 are its
    pointer depth, bit 12 a const pointee."""

    OTHER = 0  # a type of the submission's own
    VOID = 1
    BOOL = 2
    CHAR = 3
    SCHAR = 4
    UCHAR = 5
    SHORT = 6
    USHORT = 7
    INT = 8
    UINT = 9
    LONG = 10
    ULONG = 11
    LLONG = 12
    ULLONG = 13
    FLOAT = 14
    DOUBLE = 15
    LDOUBLE = 16
    FLOAT2 = 17
    FLOAT3 = 18
    FLOAT4 = 19
    INT2 = 20
    INT3 = 21
    INT4 = 22
    UINT2 = 23
    UINT3 = 24
    UINT4 = 25
    DOUBLE2 = 26
    CHAR4 = 27
    UCHAR4 = 28


# Each code's name in grader_codes.h, {} its member's.
SHIM_NAMES = {
    Magic: "grader::{}_MAGIC",
    Barrier: "GRADER_BAR_{}",
    WarpOp: "GRADER_WARP_{}",
    Base: "grader::T_{}",
}
# What the student wrote, for each barrier and warp operation.
BARRIER_CALLS = {
    Barrier.SYNC: "__syncthreads()",
    Barrier.COUNT: "__syncthreads_count()",
    Barrier.AND: "__syncthreads_and()",
    Barrier.OR: "__syncthreads_or()",
}
WARP_CALLS = {
    WarpOp.SYNC: "__syncwarp()",
    WarpOp.SHFL: "__shfl_sync()",
    WarpOp.SHFL_UP: "__shfl_up_sync()",
    WarpOp.SHFL_DOWN: "__shfl_down_sync()",
    WarpOp.SHFL_XOR: "__shfl_xor_sync()",
    WarpOp.BALLOT: "__ballot_sync()",
    WarpOp.ANY: "__any_sync()",
    WarpOp.ALL: "__all_sync()",
    WarpOp.MATCH_ANY: "__match_any_sync()",
    WarpOp.REDUCE_ADD: "__reduce_add_sync()",
    WarpOp.REDUCE_MIN: "__reduce_min_sync()",
    WarpOp.REDUCE_MAX: "__reduce_max_sync()",
    WarpOp.REDUCE_AND: "__reduce_and_sync()",
    WarpOp.REDUCE_OR: "__reduce_or_sync()",
    WarpOp.REDUCE_XOR: "__reduce_xor_sync()",
}
# The C type of each base.
BASE_TYPES = {
    Base.VOID: "void",
    Base.BOOL: "bool",
    Base.CHAR: "char",
    Base.SCHAR: "signed char",
    Base.UCHAR: "unsigned char",
    Base.SHORT: "short",
    Base.USHORT: "unsigned short",
    Base.INT: "int",
    Base.UINT: "unsigned int",
    Base.LONG: "long",
    Base.ULONG: "unsigned long",
    Base.LLONG: "long long",
    Base.ULLONG: "unsigned long long",
    Base.FLOAT: "float",
    Base.DOUBLE: "double",
    Base.LDOUBLE: "long double",
    Base.FLOAT2: "float2",
    Base.FLOAT3: "float3",
    Base.FLOAT4: "float4",
    Base.INT2: "int2",
    Base.INT3: "int3",
    Base.INT4: "int4",
    Base.UINT2: "uint2",
    Base.UINT3: "uint3",
    Base.UINT4: "uint4",
    Base.DOUBLE2: "double2",
    Base.CHAR4: "char4",
    Base.UCHAR4: "uchar4",
}
