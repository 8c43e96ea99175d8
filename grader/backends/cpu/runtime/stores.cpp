/* Which block stored each output element, so that a grading does not depend on how many
   pool threads ran the blocks.

   Every module is built to call __asan_storeN_noabort(address) before each store it
   makes (shim.py: -fsanitize=kernel-address, writes only, with calls; no shadow memory,
   no red zones), and a census module built by g++ __tsan_writeN(address) (shim.py:
   -fsanitize=thread's instrumentation, whose runtime is these hooks and atomics.cpp). A
   store into an output notes its block in the element's entry; an element that two
   blocks store into, one of them with a plain store, is a conflict.
   That set of elements is the same whatever order the blocks ran in, so the pass record's
   count of conflicts tells the parent, deterministically, that the blocks' results
   depend on their order, and it runs the launch again one block at a time
   (backend.py). An atomic function of the shim names its target first
   (__grader_rt_atomic), and a store to that address is the atomic's own.

   A census module (backend.py: the smallest public case) has its loads hooked too; one
   built by clang++ (with -fsanitize=kernel-address) may leave the store of a
   read-modify-write (bins[v]++) unhooked, the load's check covering it: the backend runs
   a census module on a single pool thread from the start.

   In a pass that runs the blocks one at a time the entries also keep the module offset
   of the store that last wrote each element, for the line of an overlap, and the first
   element of an output blocks add to (a histogram's bins) that a second block updated
   with a plain store is a "lost" record: on a GPU those updates collide. */
#include <algorithm>

#include "scheduler.h"

namespace rt {

struct Owned {
    Stored shape;
    uintptr_t lo = 0;
    std::vector<unsigned long long> owner; /* (block + 1) * 2 + plain of the last store; 0 none */
    std::vector<uint32_t> pc;              /* module offset of that store (serial passes) */
};
static std::vector<Owned> g_owned;
static int g_armed = 0; /* how many of g_owned this pass watches */
/* The bytes from the lowest armed output to the end of the highest: a store outside them
   (shared memory, the stack, a local array the compiler kept in memory: most of a tiled
   kernel's stores) returns before the worker is looked up. */
static uintptr_t g_span_lo = 0;
static size_t g_span_len = 0;
static bool g_serial = false;
static std::atomic<long long> g_conflicts{0};
static std::atomic<int> g_lost_taken{0};
static Line g_lost;

void stores_prepare(const std::vector<Stored>& outputs) {
    for (const Stored& s : outputs) {
        Owned o;
        o.shape = s;
        o.owner.assign(s.elements, 0);
        o.pc.assign(s.elements, 0);
        g_owned.push_back(std::move(o));
    }
}

void stores_arm(const std::vector<char*>& data, bool serial) {
    for (size_t i = 0; i < g_owned.size() && i < data.size(); ++i) {
        Owned& o = g_owned[i];
        std::fill(o.owner.begin(), o.owner.end(), 0ull);
        std::fill(o.pc.begin(), o.pc.end(), 0u);
        o.lo = (uintptr_t)data[i];
    }
    g_serial = serial;
    g_conflicts = 0;
    g_lost_taken = 0;
    g_lost = Line();
    g_armed = (int)(data.size() < g_owned.size() ? data.size() : g_owned.size());
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < g_armed; ++i) {
        const Owned& o = g_owned[(size_t)i];
        lo = std::min(lo, o.lo);
        hi = std::max(hi, o.lo + o.owner.size() * o.shape.width);
    }
    g_span_lo = lo;
    g_span_len = hi > lo ? hi - lo : 0;
}

long long stores_disarm() {
    g_armed = 0;
    g_span_len = 0;
    if (g_lost_taken.load() == 2) g_lost.write();
    return g_conflicts.load();
}

bool stores_elements(uintptr_t a, size_t bytes, Covered* out) {
    if (a - g_span_lo >= g_span_len) return false;
    for (int i = 0; i < g_armed; ++i) {
        const Owned& o = g_owned[(size_t)i];
        size_t width = o.shape.width, elements = o.owner.size();
        if (a - o.lo >= elements * width) continue;
        if (o.shape.accumulates) return false;
        size_t last = (a - o.lo + (bytes ? bytes : 1) - 1) / width;
        *out = Covered{o.shape.index, (a - o.lo) / width, std::min(last, elements - 1),
                       elements, width, o.lo};
        return true;
    }
    return false;
}

uint32_t stores_pc(int index, size_t element) {
    for (const Owned& o : g_owned) {
        if (o.shape.index == index && element < o.pc.size()) return o.pc[element];
    }
    return 0;
}

static void block_of(Line& l, const char* key, unsigned long long b) {
    l.kv3(key, (unsigned)(b % gridDim.x), (unsigned)((b / gridDim.x) % gridDim.y),
          (unsigned)(b / ((unsigned long long)gridDim.x * gridDim.y)));
}

/* The first plain update of an accumulated output by a second block, in a serial pass. */
static void lost(const Owned& o, size_t e, unsigned long long prev, unsigned long long mine,
                 uint32_t pc) {
    int expected = 0;
    if (!g_lost_taken.compare_exchange_strong(expected, 1)) return;
    g_lost.str("lost").kv("index", o.shape.index).kv("element", (long long)e);
    block_of(g_lost, "first", prev / 2 - 1);
    block_of(g_lost, "second", mine / 2 - 1);
    g_lost.kvhex("pc", pc);
    g_lost_taken = 2;
}

static inline void note(Owned& o, size_t e, unsigned long long mine, uint32_t pc) {
    unsigned long long prev = __atomic_load_n(&o.owner[e], __ATOMIC_RELAXED);
    if (prev != mine) prev = __atomic_exchange_n(&o.owner[e], mine, __ATOMIC_RELAXED);
    if (g_serial) o.pc[e] = pc;
    if (!prev || prev / 2 == mine / 2 || !((prev | mine) & 1)) return;
    g_conflicts.fetch_add(1, std::memory_order_relaxed);
    if (g_serial && o.shape.accumulates) lost(o, e, prev, mine, pc);
}

/* Whether this pass looks at a store to `a`: inlined in every hook, so that those it does
   not (most of a tiled kernel's) return before a frame is set up. */
static inline bool watched(uintptr_t a) {
    return g_hazards || g_profiling || a - g_span_lo < g_span_len;
}

static __attribute__((noinline)) void store(uintptr_t a, size_t bytes, uintptr_t ret) {
    if (g_hazards) hazard_access(a, bytes, true, ret); /* which asks for a busy worker itself */
    if (g_profiling) profile_access(a, bytes, ret, true); /* and so does this */
    if (a - g_span_lo >= g_span_len) return;
    Worker* w = tw;
    if (!w || !w->busy) return;
    for (int i = 0; i < g_armed; ++i) {
        Owned& o = g_owned[(size_t)i];
        size_t width = o.shape.width, total = o.owner.size() * width;
        if (a - o.lo >= total) continue;
        bool atomic = a == (uintptr_t)w->atomic_target;
        if (!atomic) w->atomic_target = nullptr;
        unsigned long long mine = (unsigned long long)(w->block + 1) * 2 + (atomic ? 0 : 1);
        uint32_t pc = caller_pc(ret);
        size_t first = (a - o.lo) / width;
        size_t last = (a - o.lo + (bytes ? bytes : 1) - 1) / width;
        for (size_t e = first; e <= last && e < o.owner.size(); ++e) note(o, e, mine, pc);
        return;
    }
}

void on_store(uintptr_t a, size_t bytes, uintptr_t ret) {
    if (watched(a)) store(a, bytes, ret);
}

static uint32_t linear_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

void on_atomic(const void* target, uintptr_t ret) {
    Worker* w = tw;
    if (w && w->busy) {
        ++w->atomics;
        w->atomic_target = target;
        w->atomic_thread = linear_thread();
    }
    if (g_profiling) profile_atomic((uintptr_t)target, ret);
}

bool announced(const void* target) {
    const Worker* w = tw;
    return w && w->atomic_target == target && w->atomic_thread == linear_thread();
}

}  // namespace rt

#define GRADER_HOOK extern "C" __attribute__((visibility("default")))
#define GRADER_STORE(name, size)                                                  \
    GRADER_HOOK void name(uintptr_t a) {                                          \
        if (rt::watched(a)) rt::store(a, size, (uintptr_t)__builtin_return_address(0)); \
    }
GRADER_STORE(__asan_store1_noabort, 1)
GRADER_STORE(__asan_store2_noabort, 2)
GRADER_STORE(__asan_store4_noabort, 4)
GRADER_STORE(__asan_store8_noabort, 8)
GRADER_STORE(__asan_store16_noabort, 16)
GRADER_HOOK void __asan_storeN_noabort(uintptr_t a, size_t n) {
    if (rt::watched(a)) rt::store(a, n, (uintptr_t)__builtin_return_address(0));
}
GRADER_STORE(__tsan_write1, 1)
GRADER_STORE(__tsan_write2, 2)
GRADER_STORE(__tsan_write4, 4)
GRADER_STORE(__tsan_write8, 8)
GRADER_STORE(__tsan_write16, 16)
/* an access of another size, or aligned below it (a packed struct's member) */
GRADER_HOOK void __tsan_write_range(uintptr_t a, size_t n) {
    if (rt::watched(a)) rt::store(a, n, (uintptr_t)__builtin_return_address(0));
}
/* the store of an object's vtable pointer */
GRADER_HOOK void __tsan_vptr_update(uintptr_t a, void*) {
    if (rt::watched(a)) rt::store(a, sizeof(void*), (uintptr_t)__builtin_return_address(0));
}
GRADER_HOOK void __grader_rt_atomic(const void* target) {
    rt::on_atomic(target, (uintptr_t)__builtin_return_address(0));
}
