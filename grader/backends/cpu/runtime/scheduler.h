/* One pool thread's view of a block: its CUDA threads as fibers, and their stacks. */
#ifndef GRADER_SCHEDULER_H
#define GRADER_SCHEDULER_H

#include "rt.h"

namespace rt {

enum State : uint8_t { NOT_STARTED, RUNNABLE, AT_BARRIER, AT_WARP, DONE };

struct Fiber {
    /* what every switch touches comes first */
    Context ctx;
    State state = NOT_STARTED;
    int stack = -1;
    GUint3 tid;
    /* waiting at a block barrier */
    int bar_kind = 0, bar_line = 0, bar_result = 0;
    /* waiting at a warp operation */
    int w_op = 0, w_line = 0, w_arg = 0, w_width = 32;
    unsigned int w_mask = 0;
    unsigned long long w_value = 0, w_result = 0;
};

/* Static __shared__ slots: [guard][slot 0][guard][slot 1]...[guard], each slot a fixed
   capacity. An array ends on the guard after its slot in the first pass and starts right
   after the guard before it in the second, so an index past either end faults. */
struct StaticSlot {
    const SharedDecl* decl = nullptr; /* the declaration last seen in this slot */
    char* data = nullptr;
    size_t used = 0; /* the largest array placed here this launch: the bytes filled per block */
};
struct StaticSlots {
    char* map = nullptr;
    size_t map_len = 0;
    int count = 0;
    bool end_aligned = true;
    std::vector<StaticSlot> slots;
};

/* Elements lo..hi of the pass's one output, each stored by the block whose owner entry
   is `owner` (stores.cpp's short way); owner 0: none. */
struct StoreRun {
    uint32_t owner = 0;
    size_t lo = 0, hi = 0;
};

struct Worker {
    int id = 0;
    pthread_t thread{};
    bool ready = false; /* has its shared memory and stacks: a member of the pool */
    Context sched{};    /* the pool thread's own stack */
    Context loop_ctx{}; /* the fiber that runs a block as a plain loop */
    std::vector<Fiber> fibers;
    std::vector<int> order; /* linear thread ids in the order of this pass */
    int n = 0;
    int pos = 0; /* position in `order` of the running fiber */
    /* counts kept as fibers change state, so a sweep's end needs no scan to know what
       to do next */
    int n_runnable = 0; /* RUNNABLE or NOT_STARTED */
    int n_done = 0;
    int n_warp = 0;
    /* per warp: the lanes waiting at a warp operation, and every lane their masks name,
       so that an arriving lane learns in a step whether the warp can go on */
    std::vector<unsigned> warp_waiting, warp_needed;
    int bar_count = 0; /* predicates true among the threads at the barrier */
    std::vector<int> finished; /* done fibers whose stacks are not yet reclaimed */
    bool fiber_mode = false;
    bool loop_done = false;
    int loop_stack = -1;
    /* n + 1 stacks, each below a guard page */
    char* stacks = nullptr;
    size_t stacks_len = 0;
    int stack_count = 0;
    std::vector<char> guarded; /* per stack: its guard page is set (on its first use) */
    std::vector<int> free_stacks;
    /* shared memory: the module's thread_local block (a __shared__ declaration the
       build could not rewrite), this thread's dynamic shared memory area, and its static
       shared slots */
    char* tls_block = nullptr;
    Area dyn;
    char* dyn_base = nullptr;
    size_t dyn_span = 0;
    StaticSlots statics;
    /* what its blocks executed (counts.cpp) */
    unsigned long long shared_loads = 0, atomics = 0;
    /* the block it runs, and the target of the atomic function it is in, and the linear
       id of the thread that entered it (stores.cpp) */
    long block = 0;
    uint32_t owner = 0; /* what its block's plain stores note as their owner (stores_owner) */
    unsigned long long claims = 0; /* stores that found an output element unowned */
    bool noted = false;            /* this pass noted an element in an owner table */
    /* the short way's stores of its blocks this pass, as runs of elements: those ended,
       within a capacity reserved when the pass is armed, and the one it extends */
    std::vector<StoreRun> runs;
    StoreRun run;
    const void* atomic_target = nullptr;
    uint32_t atomic_thread = 0;
    uint32_t epoch = 0; /* block starts and barriers released so far (hazards.cpp) */
    /* the barrier lines the running block met, and how often (a hang's loop: signals.cpp) */
    int met_line[4] = {0, 0, 0, 0};
    long met_count[4] = {0, 0, 0, 0};
    /* for the watchdog and the fault handler */
    volatile int busy = 0;
    char* altstack = nullptr;
};

/* __thread, not thread_local: no initialiser to run, so a hook reads it without a call */
extern __thread Worker* tw;
extern Launch* g_launch;

/* Whether `a` lies in the shared memory of the block `w` runs: its static slots, its
   dynamic area, or the module's thread_local block. */
static inline bool in_shared(const Worker& w, uintptr_t a) {
    if (a - (uintptr_t)w.dyn.lo < w.dyn.lo_len) return true;
    if (a - (uintptr_t)w.statics.map < w.statics.map_len) return true;
    return w.tls_block && a - (uintptr_t)w.tls_block < module.tls_size;
}

/* Shared memory is filled with SHARED_FILL at each block start (contract.h): a quiet NaN
   with a payload no arithmetic makes, so an output that carries it was computed from
   shared memory that no thread wrote. Each fiber's stack is FIBER_STACK bytes. */
constexpr size_t DYN_SHARED_CAPACITY = 232448 + 4096; /* 227 KB, and slack */

constexpr size_t STATIC_SLOT_BYTES = 48u << 10; /* a block's static shared memory at most */
constexpr size_t STATIC_GUARD_BYTES = 64u << 10;

/* Readies `w` for launches shaped like `L`; false when it could not get its fiber stacks. */
bool worker_prepare(Worker& w, Launch& L);
void run_block(Worker& w, long linear);
/* A member of the pool, 0 <= i < pool_size(). */
Worker* pool_worker(int i);

/* What the blocks of a pass executed (counts.cpp); taking them resets them. */
struct Counts {
    unsigned long long shared_loads, atomics;
};
void counts_take(Counts* c);

}  // namespace rt

#endif
