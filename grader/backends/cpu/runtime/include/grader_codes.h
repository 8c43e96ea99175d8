/* The codes of the barriers and warp operations: the shim passes them to the scheduler
   (grader_cuda.h), the scheduler acts on them (runtime/scheduler.cpp), and its
   "divergence" records name them, which grader/backends/cpu/protocol.py reads back
   (BARRIERS, WARP_OPS; tests/cpu/test_contract.py ties the two). */
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
