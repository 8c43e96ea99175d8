/* Declarations shared by the runner's sources. The student's module sees the same
   symbols through include/grader_cuda.h, with CUDA's type names. */
#ifndef GRADER_RT_H
#define GRADER_RT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "contract.h"
#include "fiber.h"
#include "record.h"

struct GUint3 {
    unsigned int x, y, z;
};

struct grader_loop_ctl {
    unsigned int bx, by, bz;
    int reverse;
};

extern "C" {
extern __thread GUint3 threadIdx;
extern __thread GUint3 blockIdx;
extern GUint3 blockDim;
extern GUint3 gridDim;
extern __thread int grader_rt_cur;
extern __thread int grader_rt_loop_stop;
extern int grader_rt_float_atomics;
}

namespace rt {

/* Bytes copied aside from where they lie, to be put back there: a parked block's shared
   memory and stacks (scheduler.cpp), the module's writable data (module.cpp). */
struct Kept {
    std::vector<char> bytes;
    std::vector<std::pair<char*, size_t>> spans; /* where each piece goes */
    void clear() {
        bytes.clear();
        spans.clear();
    }
    void keep(char* lo, size_t len) {
        spans.emplace_back(lo, len);
        bytes.insert(bytes.end(), lo, lo + len);
    }
    void put_back() const {
        size_t at = 0;
        for (const auto& span : spans) {
            memcpy(span.first, bytes.data() + at, span.second);
            at += span.second;
        }
    }
};

/* The running thread's linear index in its block. A fiber notes its own in grader_rt_cur
   when it is entered; a block that runs as a loop notes none there (-1), a store a thread
   that was a tenth of saxpy's time on one core, and its thread is threadIdx's. */
inline int running_linear() {
    int cur = grader_rt_cur;
    if (cur >= 0) return cur;
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

/* -- memory: buffers and areas with guard pages on both sides -------------------------- */
constexpr size_t GUARD_BYTES = 16u << 20;

struct Area {
    char* map = nullptr;  /* start of the whole reservation */
    size_t map_len = 0;
    char* lo = nullptr;   /* the accessible pages */
    size_t lo_len = 0;
    char* data = nullptr; /* where the buffer starts: its end on a guard, or its start */
    size_t bytes = 0;
};
/* `end_aligned`: the data ends where the trailing guard begins; otherwise it starts
   right after the leading guard. The rest of the accessible pages is `fill`ed. */
bool area_create(Area* a, size_t bytes, bool end_aligned, size_t align, uint32_t fill);
void area_destroy(Area* a);
void fill_words(void* p, size_t bytes, uint32_t word);

/* One static __shared__ declaration, as the module describes it (grader_shared_decl in
   include/grader_cuda.h, field for field; its magic is grader::SHARED_MAGIC). */
struct SharedDecl {
    int magic;
    int slot;
    long long bytes;
    int element;
    int rank;
    int extent[4];
    int line;
    int reserved;
    const char* name;
};

/* Regions the fault handler knows: each buffer, each block's dynamic shared memory, and
   (found through the faulting thread's own worker) its static shared slots. */
enum RegionKind { REGION_BUFFER = 1, REGION_SHARED = 2, REGION_STACK = 3, REGION_STATIC = 4 };
struct Region {
    char* lo;   /* whole reservation, guards included */
    char* hi;
    char* data;
    size_t bytes;
    int kind;
    int index; /* buffer index, worker id, or static shared slot */
    const SharedDecl* decl = nullptr; /* a static shared slot's declaration */
};
void regions_set(const std::vector<Region>& r);
void regions_add(const Region& r);
void regions_clear();
const Region* region_find(uintptr_t addr);
/* The static shared slot of this thread's worker next to `addr` (scheduler.cpp). */
const Region* static_shared_region(uintptr_t addr);
/* The fault record's fields for an access at `addr` in `r`: kind, index, offset, bytes,
   and for a static __shared__ array its name, shape and line. */
void region_describe(const Region& r, uintptr_t addr, Line& l);

/* -- which block wrote each output element --------------------------------------------
   When the two passes leave different outputs, a third pass runs the blocks one after
   another and compares the outputs after each block with what they held before it: an
   element that a second block changes to another value was written by two blocks. */
struct Tracked {
    char* data;
    size_t bytes;
    int index;    /* buffer ordinal */
    size_t width; /* bytes per element: 1 or 4 */
};
void writers_begin(const std::vector<Tracked>& outputs, GUint3 grid);
void writers_after_block(long block);
void writers_end(); /* writes the "overlap" record, if any */

/* -- which block stored each output element (stores.cpp) ------------------------------ */
struct Stored {
    size_t elements;
    size_t width;     /* bytes per element */
    bool accumulates; /* blocks add to it (atomics) */
    int index;        /* buffer ordinal */
};
/* Before the submission's code runs: the shadow that a module's inline checks read
   (false where it cannot be had). */
bool stores_reserve();
/* Before the sandbox: a table for each output. */
void stores_prepare(const std::vector<Stored>& outputs);
/* Watch this pass's outputs (their data, in the order prepared), from empty tables;
   `serial`: the blocks run one at a time, so lost updates are kept; `lines`: the
   writers' pass, which keeps each element's last store for the line of an overlap;
   `every`: each output, where not only those blocks add to (runner.cpp says when). */
void stores_arm(const std::vector<char*>& data, bool serial, bool lines, bool every);
/* Stop watching: the pass's conflicts (elements two blocks stored into, one of them
   plainly), after writing the "lost" record of a serial pass, if any. */
long long stores_disarm();
/* The owner a plain store of `block` notes in an output element's entry. */
uint32_t stores_owner(long block);
/* A load of `bytes` at `a` by the block whose stores note `owner`: counted where it reads
   an output element another block stored into this pass (a pass that watches every
   output keeps each element's last storer). Blocks that read each other's stores may
   leave outputs that depend on which ran first; the pass record says how many such
   loads it saw (stores_crossed), and the parent then runs the cases whose blocks ran at
   once again in grid order (grader/grading/grid_order.py). */
void stores_read(uintptr_t a, size_t bytes, uint32_t owner);
long long stores_crossed();
/* From the lowest output the pass watches to the end of the highest (stores_arm). */
extern uintptr_t g_span_lo;
extern size_t g_span_len;
static inline bool in_outputs(uintptr_t a) { return a - g_span_lo < g_span_len; }
/* The elements of one output that an access of `bytes` at `address` covers (a float4
   store sets four). */
struct Covered {
    int index = 0;                  /* the output's ordinal */
    size_t first = 0, last = 0;     /* the first and last element covered */
    size_t elements = 0, width = 0; /* how many it has, and their bytes */
    uintptr_t lo = 0;               /* where its element 0 lies */
};
/* The output elements an access covers, unless blocks add to that output. */
bool stores_elements(uintptr_t address, size_t bytes, Covered* out);
/* The module offset of the last store into an output element, in a serial pass; or 0. */
uint32_t stores_pc(int index, size_t element);

/* -- what a module's hooks report (counts.cpp, stores.cpp) ----------------------------- */
/* A load, or a store, of `bytes` at `a` by the running thread, the hook called from `ret`
   (its return address in the module). */
void on_load(uintptr_t a, size_t bytes, uintptr_t ret);
void on_store(uintptr_t a, size_t bytes, uintptr_t ret);
/* The running thread enters an atomic function on `target` (__grader_rt_atomic); whether
   it is in one on `target` now. */
void on_atomic(const void* target, uintptr_t ret);
bool announced(const void* target);

/* -- accesses that race among a block's threads (hazards.cpp) ------------------------- */
extern bool g_hazards; /* the job asks for them */
void hazard_access(uintptr_t address, size_t bytes, bool write, uintptr_t return_address);
void hazards_warp_passed(); /* the running thread passed a warp operation */
void hazards_report();      /* the "hazard" records, if any */

/* -- the first pass's memory profile (profile.cpp) ------------------------------------- */
extern bool g_profiling; /* the pass being run is profiled: the hooks log what they see */
/* Before the sandbox: room for `capacity` accesses of a block, and the record's token. */
void profile_prepare(size_t capacity, const std::string& token);
/* A __device__ (global) or __constant__ variable of the module, whose accesses count. */
void profile_variable(const void* at, size_t bytes, bool constant);
/* The pass's kernel buffers, each [data, data + bytes), and its blocks' threads:
   profiling starts. */
void profile_begin(const std::vector<Area>& buffers, int threads);
/* A load or store of `bytes` at `a` by the running thread, called from `ret`. */
void profile_access(uintptr_t a, size_t bytes, uintptr_t ret, bool store);
/* The atomic function the running thread entered, on `target` (its own store follows). */
void profile_atomic(uintptr_t target, uintptr_t ret);
/* Every thread of the running block waits at a barrier: the accesses so far, as
   requests, and each thread's count of its instructions' times starts again. A warp's
   lanes meet the k-th time of an instruction between the same two barriers: a loop whose
   trip count differs by lane, entered once a stretch (a tile's halo loads), pairs its
   lanes' trips in each stretch, as a GPU does, not the trips of one lane's third stretch
   with another's fourth. The log holds one stretch, not the block's all. */
void profile_barrier();
/* The running block's accesses, as requests (its pool thread calls it as it ends). */
void profile_block_end();
/* The running block parks, or a parked one runs again (scheduler.cpp): its accesses so far
   become requests, as at a barrier, and its threads' counts of global loads are swapped
   with `loads`, the parked block's. */
void profile_swap_loads(std::vector<uint32_t>& loads);
/* Profiling ends: the "profile" record of the pass. */
void profile_end();

/* -- the launch ----------------------------------------------------------------------- */
typedef void (*LoopFn)(void**, const grader_loop_ctl*);
typedef void (*CallFn)(void**);

struct Launch {
    LoopFn loop = nullptr;
    CallFn call = nullptr;
    void** args = nullptr;
    GUint3 grid{1, 1, 1};
    GUint3 block{1, 1, 1};
    size_t shared_bytes = 0;
    bool reverse = false;
    bool end_aligned = true;
    bool serial = false; /* one block at a time, in order, each followed by writers_after_block */
    long nblocks = 0;
    int nthreads = 0;
    std::atomic<bool> needs_fibers{false};
    /* Blocks are handed out in chunks from a counter on its own cache line, so the pool
       threads do not slow each other down on it. */
    long chunk = 1;
    alignas(64) std::atomic<long> next_block{0};
    char pad[64 - sizeof(std::atomic<long>)];
    /* Pool threads still running blocks, and those of them that wait with nothing to run
       (scheduler.cpp's stall). */
    std::atomic<int> running{0};
    std::atomic<int> stalled{0};
    void* module = nullptr;
    void* (*tls_anchor)() = nullptr;
};

/* A finding about barriers or warps, kept until the pass ends (first one only). */
struct Divergence {
    bool set = false;
    const char* what = "";  /* "returned", "lines", "warp" */
    GUint3 block{0, 0, 0};
    GUint3 thread{0, 0, 0};
    int line = 0;
    GUint3 other{0, 0, 0};
    int other_line = 0;
    int other_state = 0; /* 0 returned, 1 at a barrier, 2 at a warp operation */
    int op = 0;
};
void divergence_record(const Divergence& d);
Divergence divergence_take();

/* Start the pool of OS threads that run blocks, each with its fiber stacks and memory
   for launches shaped like `shape`; returns how many started. Must run before the
   sandbox forbids new threads and limits memory. */
int pool_start(int jobs, Launch& shape);
int pool_size();
/* Runs the launch on every pool thread and returns when all blocks are done. */
void pool_run(Launch* launch);
/* The pool thread with this id (for the watchdog), or 0. */
pthread_t pool_thread(int i);

/* What a thread of the pool is doing, for the fault handler and the watchdog. */
struct Snapshot {
    bool in_kernel;
    GUint3 thread;
    GUint3 block;
    /* where the thread waits while it has given its turn away (spin_wait), as module_pc
       gives it, else 0: a probe that finds the scheduler between its turns names it */
    uintptr_t wait_pc;
};
bool current_snapshot(Snapshot* s);
/* The stack of the running fiber, to tell a stack overflow from other faults. */
bool stack_guard_hit(uintptr_t addr);
size_t fiber_stack_bytes();

/* -- the module --------------------------------------------------------------------- */
struct Module {
    void* handle = nullptr;
    uintptr_t base = 0;
    uintptr_t text_lo = 0, text_hi = 0;
    size_t tls_size = 0;
};
extern Module module;
/* The module offset of the call a hook returns to (`ret`, its return address, is one past
   the call), or 0 when the caller is not the module's. */
inline uint32_t caller_pc(uintptr_t ret) {
    return ret >= module.text_lo && ret < module.text_hi ? (uint32_t)(ret - 1 - module.base) : 0;
}
/* Program counter relative to the module, or 0 when pc is elsewhere; scans the stack
   from sp for a return address into the module when pc itself is not in it. */
uintptr_t module_pc(uintptr_t pc, uintptr_t sp, uintptr_t stack_hi);

/* -- the seal on records that narrow a race (output.cpp) ------------------------------
   A waw hazard, an overlap or a lost update narrows a race to the case it showed in; the
   parent believes them only where the "seal" records after each pass, carrying the job's
   token, count as many as the report holds. Hidden: the module, loaded into this
   process, cannot link to them by name. */
/* Before the module loads: the token the job gave (runner.cpp's take_token). */
__attribute__((visibility("hidden"))) void seal_prepare(const std::string& token);
/* Writes a record that narrows a race, and counts it. */
__attribute__((visibility("hidden"))) void write_narrowing(Line& l);
/* Element `element` of buffer `index` was stored twice as a record that narrows a race
   says: by two threads of a block in pass 0 (hazards.cpp's waw: `value`, of `width`
   bytes, is what a store overwrote), by two blocks (memory.cpp's overlap: each value a
   block left), or updated plainly by two blocks (stores.cpp's lost: no value). The
   runner's "twice" record counts the elements the two thread orders left different that
   these do not explain: where one holds a value its stores twice did not leave, the
   threads computed it differently (they read what others store), and one genuine store
   twice, or a store twice into every element, must not narrow that race to its case. */
enum class Twice { THREADS, BLOCKS, UPDATES };
__attribute__((visibility("hidden"))) void twice_note(Twice kind, int index, size_t element,
                                                      const void* value, size_t width);
/* Whether passes 0 and 1 leaving `first` and `second` in the element is a store order. */
__attribute__((visibility("hidden"))) bool twice_explains(int index, size_t element,
                                                          const void* first, const void* second,
                                                          size_t width);
/* Whether any element was noted so. */
__attribute__((visibility("hidden"))) bool twice_any();
/* The "seal" record: the token, and how many such records the runtime has written. */
__attribute__((visibility("hidden"))) void seal_write();

/* -- output, faults, watchdog ----------------------------------------------------------- */
void output_init(size_t limit);
void output_enable(bool on);
void output_flush(const char* path);
size_t output_total();
void output_flush_fd(int fd);

void signals_install();
void signals_thread_init(); /* a sigaltstack for this thread */
void watchdog_start();
/* A phase of `seconds` of work on `cores` threads (signals.cpp says how it is measured). */
void watchdog_arm(double seconds, const char* phase, int cores);
void watchdog_disarm();

/* The first pass's findings land here; fault reports say which pass they came from. */
extern int current_pass;

}  // namespace rt

#endif
