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
    /* gave its turn away while it waits for the word at wait_addr to change (spin_note) */
    bool waits = false;
    uintptr_t wait_addr = 0;
    uint64_t wait_value = 0;
    uintptr_t wait_pc = 0; /* the module's load it waits at (Snapshot::wait_pc) */
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

/* What a pool thread keeps of one block it has started: the block's fibers, the state of
   its barriers and warps, and while it is parked a copy of its shared memory and of what
   its threads' stacks use (the pool thread's stacks are the running block's). The
   running block's is the Worker's own (a base), so code that reads w.fibers reads the
   running block's; a parked block's waits in Worker::parked. */
struct Resident {
    std::vector<Fiber> fibers;
    int pos = 0; /* position in `order` of the running fiber */
    /* counts kept as fibers change state, so a sweep's end needs no scan to know what
       to do next */
    int n_runnable = 0; /* RUNNABLE or NOT_STARTED */
    int n_done = 0;
    int n_warp = 0;
    int n_waiting = 0; /* RUNNABLE fibers that gave their turn away waiting (Fiber::waits) */
    int waited_by = -1; /* the thread that last began to wait (its Fiber::waits) */
    /* per warp: the lanes waiting at a warp operation, and every lane their masks name,
       so that an arriving lane learns in a step whether the warp can go on */
    std::vector<unsigned> warp_waiting, warp_needed;
    int bar_count = 0; /* predicates true among the threads at the barrier */
    std::vector<int> finished; /* done fibers whose stacks are not yet reclaimed */
    bool fiber_mode = false;
    bool loop_done = false;
    int loop_stack = -1;
    std::vector<int> free_stacks; /* of its pool thread's stacks */
    long block = 0;        /* the block it runs */
    GUint3 index{0, 0, 0}; /* blockIdx */
    uint32_t owner = 0; /* what its block's plain stores note as their owner (stores_owner) */
    /* the barrier lines the running block met, and how often (a hang's loop: signals.cpp) */
    int met_line[4] = {0, 0, 0, 0};
    long met_count[4] = {0, 0, 0, 0};
    /* while parked: its shared memory, the used part of its threads' stacks, and its
       threads' global loads (profile.cpp) */
    Kept shared_kept, stacks_kept;
    std::vector<uint32_t> profile_loads;
};

struct Worker : Resident {
    int id = 0;
    pthread_t thread{};
    bool ready = false; /* has its shared memory and stacks: a member of the pool */
    Context sched{};    /* the pool thread's own stack */
    Context loop_ctx{}; /* the fiber that runs a block as a plain loop */
    std::vector<int> order; /* linear thread ids in the order of this pass */
    int n = 0;
    /* n + 1 stacks, each below a guard page, which the running block uses: a parked
       block keeps a copy of the used part of its own */
    char* stacks = nullptr;
    size_t stacks_len = 0;
    int stack_count = 0;
    std::vector<char> guarded; /* per stack: its guard page is set (on its first use) */
    std::vector<Resident> parked; /* the blocks it has started that wait for others */
    size_t park_limit = 0;   /* the most blocks it parks at once (PARKED_THREADS) */
    long next = 0, last = 0; /* the blocks of its chunk not yet started */
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
    /* the target of the atomic function the running thread is in, and that thread's
       linear id (stores.cpp): next to what each atomic touches besides */
    const void* atomic_target = nullptr;
    uint32_t atomic_thread = 0;
    /* the running thread's run of loads of one address that found one value (spin_note) */
    int spin_count = 0;
    uintptr_t spin_addr = 0;
    uint64_t spin_value = 0;
    unsigned long long claims = 0; /* stores that found an output element unowned */
    bool noted = false;            /* this pass noted an element in an owner table */
    /* the short way's stores of its blocks this pass, as runs of elements: those ended,
       within a capacity reserved when the pass is armed, and the one it extends */
    std::vector<StoreRun> runs;
    StoreRun run;
    uint32_t epoch = 0; /* block starts and barriers released so far (hazards.cpp) */
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
/* Runs blocks of `L` until none is left to start and every one it started has finished. */
void run_blocks(Worker& w, Launch& L);

/* -- threads that wait for another by reading a word until it changes ------------------
   A GPU runs a block's threads, and a small grid's blocks, at once, so a thread may spin
   on a flag that another thread or block sets later; a fiber runs until it blocks. So
   the hooks of loads and atomics note each access: SPIN_LOADS accesses in a row of one
   address that find one value, with no other access between, are a thread waiting, and
   it lets the block's other threads run (spin_wait); a block whose every running thread
   waits, for words that none of them changed, lets another block run. No ordinary
   thread loads one word that often with nothing else between (a block has at most 1024
   threads, which a block that runs as a loop notes as one). */
constexpr int SPIN_LOADS = 4096;
/* While another thread of its block waits (the one that last began to), a thread waits
   after SPIN_FOLLOW such loads: the block is waiting for another. At SPIN_LOADS, a block
   whose 256 threads all spin on one flag made 256 x 4096 hooked loads a wait (a chained
   scan of 512 such blocks took 13 s on one pool thread), and 512 threads each spinning
   on a word of its own 512 x 4096 (lanes in bench/cpu_backend.py, 5 s). The thread that
   last began to wait takes SPIN_LOADS again, so that a lone thread spinning on a flag no
   one sets spends its time at its own line, where a hang's probes find it. */
constexpr int SPIN_FOLLOW = 64;
/* The threads of the blocks a pool thread parks at once, at most: two SMs of a GPU hold
   as many. */
constexpr int PARKED_THREADS = 4096;
/* The bytes of the copies of their stacks that a run's parked blocks keep, at most,
   each pool thread an equal share: what one pool thread parking PARKED_THREADS whole
   stacks keeps, so that the rerun on one pool thread that a smaller share asks for
   (park) always has room. */
constexpr size_t PARKED_STACKS = (size_t)PARKED_THREADS * FIBER_STACK;
/* The blocks of `nthreads` threads each that a pool thread parks at once. */
static inline long blocks_parked(int nthreads) {
    return nthreads < PARKED_THREADS ? PARKED_THREADS / (nthreads > 0 ? nthreads : 1) : 1;
}
void spin_wait(Worker& w);

/* The word holding the access at `a`: an aligned word never crosses into a guard page. */
static inline uint64_t word_at(uintptr_t a) {
    return *reinterpret_cast<const volatile uint64_t*>(a & ~(uintptr_t)7);
}

/* Whether another thread of the running thread's block waits now, the one that last
   began to (SPIN_FOLLOW). */
static inline bool follows(const Worker& w) {
    int by = w.waited_by;
    return by >= 0 && by != grader_rt_cur && w.fibers[(size_t)by].waits;
}

/* A load or atomic of `a` by the running thread. The word is read from the second access
   on: the first, which the access itself follows, may fault. */
static inline void spin_note(Worker& w, uintptr_t a) {
    if (a != w.spin_addr) {
        w.spin_addr = a;
        w.spin_count = 0;
        return;
    }
    uint64_t v = word_at(a);
    if (v != w.spin_value || w.spin_count == 0) {
        w.spin_value = v;
        w.spin_count = 1;
    } else if (++w.spin_count >= SPIN_LOADS ||
               (w.spin_count >= SPIN_FOLLOW && follows(w))) {
        spin_wait(w);
    }
}
/* A member of the pool, 0 <= i < pool_size(). */
Worker* pool_worker(int i);

/* What the blocks of a pass executed (counts.cpp); taking them resets them. */
struct Counts {
    unsigned long long shared_loads, atomics;
};
void counts_take(Counts* c);

}  // namespace rt

#endif
