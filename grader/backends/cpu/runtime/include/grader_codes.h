/* The codes the shim and the runner share, which the grader reads too: the barriers and
   warp operations the shim passes to the scheduler (grader_cuda.h; runtime/scheduler.cpp
   acts on them, and its "divergence" records name them), and the first word and the type
   codes of what the registration footer declares (grader_cuda.h; the runner and
   grader/backends/cpu/describe.py read them). Every module is compiled against this copy;
   grader/backends/cpu/contract.py is the table, and the runner's build checks this
   against it (contract.h). */
#pragma once

enum {
    GRADER_BAR_SYNC = 0,
    GRADER_BAR_COUNT = 1,
    GRADER_BAR_AND = 2,
    GRADER_BAR_OR = 3,
};

enum {
    GRADER_WARP_SYNC = 0,
    GRADER_WARP_SHFL = 1,
    GRADER_WARP_SHFL_UP = 2,
    GRADER_WARP_SHFL_DOWN = 3,
    GRADER_WARP_SHFL_XOR = 4,
    GRADER_WARP_BALLOT = 5,
    GRADER_WARP_ANY = 6,
    GRADER_WARP_ALL = 7,
    GRADER_WARP_MATCH_ANY = 8,
    GRADER_WARP_REDUCE_ADD = 9,
    GRADER_WARP_REDUCE_MIN = 10,
    GRADER_WARP_REDUCE_MAX = 11,
    GRADER_WARP_REDUCE_AND = 12,
    GRADER_WARP_REDUCE_OR = 13,
    GRADER_WARP_REDUCE_XOR = 14,
};

namespace grader {
enum { SIG_MAGIC = 0x47524431, VAR_MAGIC = 0x47525631, SHARED_MAGIC = 0x47525331 };
enum Base {
    T_OTHER = 0, T_VOID, T_BOOL, T_CHAR, T_SCHAR, T_UCHAR, T_SHORT, T_USHORT, T_INT, T_UINT,
    T_LONG, T_ULONG, T_LLONG, T_ULLONG, T_FLOAT, T_DOUBLE, T_LDOUBLE,
    T_FLOAT2, T_FLOAT3, T_FLOAT4, T_INT2, T_INT3, T_INT4, T_UINT2, T_UINT3, T_UINT4,
    T_DOUBLE2, T_CHAR4, T_UCHAR4
};
}  // namespace grader
