/* Which block stored each output element, so that a grading does not depend on how many
   pool threads ran the blocks.

   Every module is built to call __asan_storeN_noabort(address) before each store it
   makes (shim.py: -fsanitize=kernel-address, writes only, with calls; no shadow memory,
   no red zones), and a census module built by g++ __tsan_writeN(address) (shim.py:
   -fsanitize=thread's instrumentation, whose runtime is these hooks and atomics.cpp). A
   store into an output notes its block in the element's entry (or, for a plain store of
   one element into a pass's one output, in its pool thread's run of elements that block
   stored: claim_one); an element that two blocks store into, one of them with a plain
   store, is a conflict.
   That set of elements is the same whatever order the blocks ran in, so the pass record's
   count of conflicts tells the parent, deterministically, that the blocks' results
   depend on their order, and it runs the launch again one block at a time
   (backend.py). An atomic function of the shim names its target first
   (__grader_rt_atomic), and a store to that address is the atomic's own.

   A census module (backend.py: the smallest public case) has its loads hooked too; one
   built by clang++ (with -fsanitize=kernel-address) may leave the store of a
   read-modify-write (bins[v]++) unhooked, the load's check covering it: the backend runs
   a census module on a single pool thread from the start.

   In the writers' pass (runner.cpp) the entries also keep the module offset of the store
   that last wrote each element, for the line of an overlap; in a pass that runs the
   blocks one at a time, the first element of an output blocks add to (a histogram's
   bins) that a second block updated with a plain store is a "lost" record (and every
   such element is noted: output.cpp's twice_note): on a GPU those updates collide. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "scheduler.h"

namespace rt {

/* -- the shadow of an inline check --------------------------------------------------------
   A module that g++ built on x86-64 checks each store inline (shim.py): it reads the byte
   at (address >> 3) + SHADOW_OFFSET and calls its hook (__asan_report_storeN_noabort)
   only where that byte is not 0. The runner reserves the shadow of the whole address
   space, zero and read-only, before the submission's code runs, and marks the 8-byte
   granules of a pass's outputs alone: a store anywhere else (shared memory, the stack, a
   local array the compiler kept in memory) costs a load and a branch, not a call. */
#if defined(__x86_64__)
constexpr uintptr_t SHADOW_OFFSET = 0x7fff8000;   /* shim.py's -fasan-shadow-offset */
constexpr size_t SHADOW_BYTES = (size_t)1 << 44;  /* of a 47-bit address space */
constexpr unsigned char SHADOW_WATCHED = 0x80;    /* below every offset in a granule */
static bool g_shadow = false;

bool stores_reserve() {
    void* want = reinterpret_cast<void*>(SHADOW_OFFSET);
    void* m = mmap(want, SHADOW_BYTES, PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (m != MAP_FAILED && m != want) munmap(m, SHADOW_BYTES); /* a kernel that took a hint */
    g_shadow = m == want;
    return g_shadow;
}

/* The shadow pages of [lo, lo + bytes), and its granules' bytes within them. */
struct ShadowSpan {
    unsigned char *first, *last;  /* granules */
    char* pages;
    size_t pages_len;
};
static ShadowSpan shadow_of(uintptr_t lo, size_t bytes) {
    static const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    auto at = [](uintptr_t a) {
        return reinterpret_cast<unsigned char*>((a >> 3) + SHADOW_OFFSET);
    };
    ShadowSpan s{at(lo), at(lo + bytes - 1), nullptr, 0};
    uintptr_t from = (uintptr_t)s.first & ~(page - 1);
    uintptr_t to = ((uintptr_t)s.last + page) & ~(page - 1);
    s.pages = reinterpret_cast<char*>(from);
    s.pages_len = to - from;
    return s;
}

/* Every store into [lo, lo + bytes) calls its hook from now on. */
static void shadow_watch(uintptr_t lo, size_t bytes) {
    if (!g_shadow || !bytes) return;
    ShadowSpan s = shadow_of(lo, bytes);
    if (mprotect(s.pages, s.pages_len, PROT_READ | PROT_WRITE) != 0) {
        fail("shadow", "the shadow of an output cannot be written", EXIT_FAULT);
    }
    memset(s.first, SHADOW_WATCHED, (size_t)(s.last - s.first) + 1);
    mprotect(s.pages, s.pages_len, PROT_READ);
}

/* Stores into [lo, lo + bytes) call no hook again; false where the shadow was not as
   shadow_watch left it: the kernel changed it, to store unseen. */
static bool shadow_unwatch(uintptr_t lo, size_t bytes) {
    if (!g_shadow || !bytes) return true;
    ShadowSpan s = shadow_of(lo, bytes);
    bool kept = true;
    for (const unsigned char* b = s.first; b <= s.last && kept; ++b) kept = *b == SHADOW_WATCHED;
    /* fresh zero pages in place of the marked ones, read-only */
    void* m = mmap(s.pages, s.pages_len, PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (m == MAP_FAILED) fail("shadow", "the shadow of an output cannot be cleared", EXIT_FAULT);
    return kept;
}
#else
bool stores_reserve() { return true; } /* every module calls its hooks (shim.py) */
static void shadow_watch(uintptr_t, size_t) {}
static bool shadow_unwatch(uintptr_t, size_t) { return true; }
#endif

/* An element's owner: (block + 1) * 2, plus 1 for a plain store (an atomic's own store
   is 0). Four bytes, half an 8-byte table's memory traffic for a kernel whose every store
   is into an output; a grid of more than 2^31 - 2 blocks, which no lab launches (nor a
   CPU runs in a case's time), names block b and b + 2^31 - 1 alike. */
typedef uint32_t Owner;
static inline Owner owner_of(long block, bool atomic) {
    return (Owner)((unsigned long long)block % 0x7ffffffeULL + 1) * 2 + (atomic ? 0 : 1);
}

struct Owned {
    Stored shape;
    uintptr_t lo = 0;
    int shift = -1; /* log2 of the width, where it is a power of two: no division per store */
    std::vector<Owner> owner; /* the last store's block and kind (owner_of); 0: none */
    std::vector<uint32_t> pc;              /* module offset of that store (the writers' pass) */
    bool watched = false;                  /* this pass notes its stores (stores_arm) */
    bool clean = false;                    /* `owner` holds no entry: it needs no fill */
};
static std::vector<Owned> g_owned;
static int g_armed = 0; /* how many of g_owned this pass watches */
/* The bytes from the lowest armed output to the end of the highest: a store outside them
   (shared memory, the stack, a local array the compiler kept in memory: most of a tiled
   kernel's stores) returns before the worker is looked up. */
uintptr_t g_span_lo = 0;
size_t g_span_len = 0;
static bool g_serial = false;
static bool g_lines = false; /* the writers' pass: each element's last store is kept */
static bool g_alone = false; /* one pool thread runs the blocks: no store of another races */
/* The pass watches one output, its elements a power of two bytes wide, no block adds to
   it, and it keeps no lines: a plain store of one element takes the short way (claim_one). */
static bool g_one = false;
/* The short way's runs reserved for each pool thread: one for each RUN_ELEMENTS of the
   output among them, RUNS_LEAST at least. */
constexpr size_t RUN_ELEMENTS = 64;
constexpr size_t RUNS_LEAST = 1024;
static std::atomic<long long> g_conflicts{0};
static std::atomic<long long> g_crossed{0}; /* stores_read */
static std::atomic<int> g_lost_taken{0};
static Line g_lost;

void stores_prepare(const std::vector<Stored>& outputs) {
    for (const Stored& s : outputs) {
        Owned o;
        o.shape = s;
        o.owner.assign(s.elements, 0);
        o.pc.assign(s.elements, 0);
        if (s.width && !(s.width & (s.width - 1))) o.shift = __builtin_ctzll(s.width);
        g_owned.push_back(std::move(o));
    }
}

void stores_arm(const std::vector<char*>& data, bool serial, bool lines, bool every) {
    g_armed = (int)(data.size() < g_owned.size() ? data.size() : g_owned.size());
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < g_armed; ++i) {
        Owned& o = g_owned[(size_t)i];
        o.lo = (uintptr_t)data[(size_t)i];
        o.watched = every || o.shape.accumulates;
        if (!o.watched) continue;
        if (!o.clean) std::fill(o.owner.begin(), o.owner.end(), 0u);
        o.clean = false;
        if (lines) std::fill(o.pc.begin(), o.pc.end(), 0u);
        lo = std::min(lo, o.lo);
        hi = std::max(hi, o.lo + o.owner.size() * o.shape.width);
        shadow_watch(o.lo, o.owner.size() * o.shape.width);
    }
    g_serial = serial;
    g_lines = lines;
    g_alone = pool_size() == 1;
    g_one = g_armed == 1 && g_owned[0].watched && !g_owned[0].shape.accumulates &&
            g_owned[0].shift >= 0 && !lines && !serial;
    /* ranges enough for blocks that each store a run of RUN_ELEMENTS or more */
    size_t runs = g_one ? g_owned[0].owner.size() / RUN_ELEMENTS / (size_t)pool_size() : 0;
    for (int i = 0; i < pool_size(); ++i) {
        Worker* w = pool_worker(i);
        w->claims = 0;
        w->noted = false;
        w->runs.clear();
        w->runs.reserve(std::max(runs, RUNS_LEAST));
        w->run = StoreRun();
    }
    g_conflicts = 0;
    g_crossed = 0;
    g_lost_taken = 0;
    g_lost = Line();
    g_span_lo = lo;
    g_span_len = hi > lo ? hi - lo : 0;
}

/* Conflicts no store saw: two blocks on two pool threads that both found an element of
   an output no block adds to unowned (or the same owner, each) claimed it twice. */
static long long unseen_conflicts() {
    unsigned long long claims = 0, owned = 0;
    for (int i = 0; i < pool_size(); ++i) {
        Worker* w = pool_worker(i);
        claims += w->claims;
        w->claims = 0;
    }
    if (!claims) return 0;
    for (int i = 0; i < g_armed; ++i) {
        const Owned& o = g_owned[(size_t)i];
        if (!o.watched || o.shape.accumulates) continue;
        for (Owner v : o.owner) owned += v != 0;
    }
    return claims > owned ? (long long)(claims - owned) : 0;
}

/* Whether two blocks' runs of the short way hold one element, or a run holds one that the
   owner table gives another block (an atomic's own store, a wider one, a store past
   a pool thread's runs): those stores are plain, so either is a conflict. Sorted by
   their first element, a run overlaps a run before it of another block exactly where it
   overlaps the one that reaches furthest and that one is another block's, or two runs
   before it did so already (both hold the first element of the later run). */
static bool runs_conflict() {
    std::vector<StoreRun> all;
    bool noted = false;
    for (int i = 0; i < pool_size(); ++i) {
        Worker* w = pool_worker(i);
        all.insert(all.end(), w->runs.begin(), w->runs.end());
        if (w->run.owner) all.push_back(w->run);
        noted = noted || w->noted;
    }
    Owned& o = g_owned[0];
    o.clean = !noted;
    if (all.empty()) return false;
    std::sort(all.begin(), all.end(),
              [](const StoreRun& a, const StoreRun& b) { return a.lo < b.lo; });
    StoreRun furthest = all[0];
    for (const StoreRun& r : all) {
        if (r.lo <= furthest.hi && r.owner / 2 != furthest.owner / 2) return true;
        if (r.hi > furthest.hi) furthest = r;
    }
    if (!noted) return false;
    for (const StoreRun& r : all) {
        for (size_t e = r.lo; e <= r.hi; ++e) {
            Owner v = o.owner[e];
            if (v && v / 2 != r.owner / 2) return true;
        }
    }
    return false;
}

long long stores_disarm() {
    bool kept = true;
    if (g_one && runs_conflict()) g_conflicts.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < g_armed; ++i) {
        const Owned& o = g_owned[(size_t)i];
        if (o.watched) kept = shadow_unwatch(o.lo, o.owner.size() * o.shape.width) && kept;
    }
    if (!g_conflicts.load() && !g_alone) g_conflicts = unseen_conflicts();
    g_armed = 0;
    g_span_len = 0;
    /* the kernel's doing: its own stores into an output might have called no hook */
    if (!kept) fail("shadow", "the kernel changed the shadow of an output", EXIT_FAULT);
    if (g_lost_taken.load() == 2) write_narrowing(g_lost);
    return g_conflicts.load();
}

uint32_t stores_owner(long block) { return owner_of(block, false); }

/* The armed output whose elements hold `a`, with the first and last of its elements an
   access of `bytes` there covers; nullptr where none holds it. */
static const Owned* covering(uintptr_t a, size_t bytes, size_t* first, size_t* last) {
    for (int i = 0; i < g_armed; ++i) {
        const Owned& o = g_owned[(size_t)i];
        size_t width = o.shape.width, elements = o.owner.size();
        if (a - o.lo >= elements * width) continue;
        *first = (a - o.lo) / width;
        *last = std::min((a - o.lo + (bytes ? bytes : 1) - 1) / width, elements - 1);
        return &o;
    }
    return nullptr;
}

void stores_read(uintptr_t a, size_t bytes, uint32_t owner) {
    size_t first = 0, last = 0;
    const Owned* o = covering(a, bytes, &first, &last);
    if (!o || !o->watched) return;
    for (size_t e = first; e <= last; ++e) {
        Owner v = __atomic_load_n(&o->owner[e], __ATOMIC_RELAXED);
        if (v && v / 2 != owner / 2) {
            g_crossed.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
}

long long stores_crossed() { return g_crossed.load(); }

bool stores_elements(uintptr_t a, size_t bytes, Covered* out) {
    if (a - g_span_lo >= g_span_len) return false;
    size_t first = 0, last = 0;
    const Owned* o = covering(a, bytes, &first, &last);
    if (!o || o->shape.accumulates) return false;
    *out = Covered{o->shape.index, first, last, o->owner.size(), o->shape.width, o->lo};
    return true;
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
static void lost(const Owned& o, size_t e, Owner prev, Owner mine,
                 uint32_t pc) {
    int expected = 0;
    if (!g_lost_taken.compare_exchange_strong(expected, 1)) return;
    g_lost.str("lost").kv("index", o.shape.index).kv("element", (long long)e);
    block_of(g_lost, "first", prev / 2 - 1);
    block_of(g_lost, "second", mine / 2 - 1);
    g_lost.kvhex("pc", pc);
    g_lost_taken = 2;
}

/* The element's new owner; the one before. Where other pool threads store too, two
   blocks' stores may read the same owner before either writes it (relaxed, no lock: an
   exchange per store cost a barrier-free kernel most of its time): a store that finds
   no owner counts as a claim of its pool thread, and stores_disarm finds the conflict no
   store saw where claims outnumber the elements owned. An output blocks add to is
   exchanged, since its atomics of several blocks claim one element by design. */
static inline Owner claim(Owned& o, Owner* slot, Owner mine, Worker* w) {
    Owner prev = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (prev == mine) return prev;
    if (!g_alone && o.shape.accumulates) return __atomic_exchange_n(slot, mine, __ATOMIC_RELAXED);
    __atomic_store_n(slot, mine, __ATOMIC_RELAXED);
    w->claims += !prev;
    return prev;
}

static inline void note(Owned& o, size_t e, Owner mine, uint32_t pc, Worker* w) {
    w->noted = true;
    Owner prev = claim(o, &o.owner[e], mine, w);
    if (g_lines) o.pc[e] = pc;
    if (!prev || prev / 2 == mine / 2 || !((prev | mine) & 1)) return;
    g_conflicts.fetch_add(1, std::memory_order_relaxed);
    if (g_serial && o.shape.accumulates) {
        twice_note(Twice::UPDATES, o.shape.index, e, nullptr, 0); /* one pool thread */
        lost(o, e, prev, mine, pc);
    }
}

/* The short way of a plain store of one aligned element into the pass's one output
   (g_one); false for any other store (an atomic's own, a wider or unaligned one), which
   takes the whole way. A block's stores next to those before it extend its pool thread's
   run (Worker::run), with no entry in the owner table, which a barrier-free kernel's
   every store wrote and read (saxpy over 16M elements on 2 pool threads: 17 of its 53
   ms); runs_conflict finds at disarm what note would have found. Past the runs reserved,
   a pool thread whose blocks store scattered elements notes the rest in the table. */
static inline bool claim_one(uintptr_t a, size_t bytes, Worker* w) {
    Owned& o = g_owned[0];
    uintptr_t from = a - o.lo; /* within: the span is this output's alone */
    if (bytes != o.shape.width || (from & (bytes - 1)) || a == (uintptr_t)w->atomic_target) {
        return false;
    }
    w->atomic_target = nullptr;
    size_t e = from >> o.shift;
    StoreRun& run = w->run;
    if (run.owner == w->owner && e + 1 >= run.lo && e <= run.hi + 1) {
        run.lo = std::min(run.lo, e);
        run.hi = std::max(run.hi, e);
    } else if (w->runs.size() < w->runs.capacity()) {
        if (run.owner) w->runs.push_back(run);
        run = StoreRun{w->owner, e, e};
    } else {
        note(o, e, w->owner, 0, w);
    }
    return true;
}

/* Whether this pass looks at a store to `a`: inlined in every hook, so that those it does
   not (most of a tiled kernel's) return before a frame is set up. */
static inline bool watched(uintptr_t a) {
    return g_hazards || g_profiling || a - g_span_lo < g_span_len;
}

/* A store the pass may look at, out of line (`store`) behind every hook's `watched` or
   `quick`. */
static __attribute__((always_inline)) inline void note_store(uintptr_t a, size_t bytes,
                                                             uintptr_t ret) {
    if (g_hazards) hazard_access(a, bytes, true, ret); /* which asks for a busy worker itself */
    if (g_profiling) profile_access(a, bytes, ret, true); /* and so does this */
    if (a - g_span_lo >= g_span_len) return;
    Worker* w = tw;
    if (!w || !w->busy) return;
    if (g_one && claim_one(a, bytes, w)) return;
    for (int i = 0; i < g_armed; ++i) {
        Owned& o = g_owned[(size_t)i];
        size_t width = o.shape.width, total = o.owner.size() * width;
        if (a - o.lo >= total || !o.watched) continue;
        bool atomic = a == (uintptr_t)w->atomic_target;
        if (!atomic) w->atomic_target = nullptr;
        Owner mine = owner_of(w->block, atomic);
        uint32_t pc = g_serial ? caller_pc(ret) : 0; /* for a line, kept by serial passes */
        size_t from = a - o.lo, to = from + (bytes ? bytes : 1) - 1;
        size_t first = o.shift >= 0 ? from >> o.shift : from / width;
        size_t last = o.shift >= 0 ? to >> o.shift : to / width;
        for (size_t e = first; e <= last && e < o.owner.size(); ++e) note(o, e, mine, pc, w);
        return;
    }
}

static __attribute__((noinline)) void store(uintptr_t a, size_t bytes, uintptr_t ret) {
    note_store(a, bytes, ret);
}

/* A store the short way notes (claim_one), noted before `store` sets up a frame for
   note_store: on several pool threads a barrier-free kernel's every store into its
   output comes here (saxpy over 16M elements on 2 pool threads: 63 ms through `store`,
   53 ms here). False where note_store must note the store, which then does. */
static inline bool quick(uintptr_t a, size_t bytes) {
    if (!g_one || g_hazards || g_profiling || a - g_span_lo >= g_span_len) return false;
    Worker* w = tw;
    return w && w->busy && claim_one(a, bytes, w);
}

void on_store(uintptr_t a, size_t bytes, uintptr_t ret) {
    if (watched(a)) store(a, bytes, ret);
}

/* An atomic on the target of the atomic before it, no plain store between: a run that
   may be a thread spinning on a flag (scheduler.h). Out of line, so that on_atomic keeps
   no frame (a call of spin_note in each atomic cost the naive matmul that reads by
   atomicAdd(p, 0) 40%: bench/cpu_backend.py). */
static __attribute__((noinline)) void atomic_again(Worker* w, const void* target, uintptr_t ret) {
    spin_note(*w, (uintptr_t)target);
    w->atomic_target = target; /* again: other threads may have run meanwhile */
    w->atomic_thread = (uint32_t)running_linear();
    if (g_profiling) profile_atomic((uintptr_t)target, ret);
}

/* Inlined in __grader_rt_atomic, every atomic's hook. */
static __attribute__((always_inline)) inline void atomic_entered(const void* target,
                                                                 uintptr_t ret) {
    Worker* w = tw;
    if (w && w->busy) {
        bool again = target == w->atomic_target;
        ++w->atomics;
        w->atomic_target = target;
        w->atomic_thread = (uint32_t)running_linear();
        if (__builtin_expect(again, 0)) return atomic_again(w, target, ret);
        if (w->spin_count) w->spin_count = 0;
    }
    if (g_profiling) profile_atomic((uintptr_t)target, ret);
}

void on_atomic(const void* target, uintptr_t ret) { atomic_entered(target, ret); }

bool announced(const void* target) {
    const Worker* w = tw;
    return w && w->atomic_target == target && w->atomic_thread == (uint32_t)running_linear();
}

}  // namespace rt

#define GRADER_HOOK extern "C" __attribute__((visibility("default")))
#define GRADER_STORE(name, size)                                                  \
    GRADER_HOOK void name(uintptr_t a) {                                          \
        if (rt::watched(a) && !rt::quick(a, size))                                 \
            rt::store(a, size, (uintptr_t)__builtin_return_address(0));            \
    }
GRADER_STORE(__asan_store1_noabort, 1)
GRADER_STORE(__asan_store2_noabort, 2)
GRADER_STORE(__asan_store4_noabort, 4)
GRADER_STORE(__asan_store8_noabort, 8)
GRADER_STORE(__asan_store16_noabort, 16)
GRADER_HOOK void __asan_storeN_noabort(uintptr_t a, size_t n) {
    if (rt::watched(a)) rt::store(a, n, (uintptr_t)__builtin_return_address(0));
}
/* an inline check's call: the store is into a granule of an output (stores_arm) */
#define GRADER_REPORT(name, size)                                                          \
    GRADER_HOOK void name(uintptr_t a) {                                                   \
        if (!rt::quick(a, size)) rt::store(a, size, (uintptr_t)__builtin_return_address(0)); \
    }
GRADER_REPORT(__asan_report_store1_noabort, 1)
GRADER_REPORT(__asan_report_store2_noabort, 2)
GRADER_REPORT(__asan_report_store4_noabort, 4)
GRADER_REPORT(__asan_report_store8_noabort, 8)
GRADER_REPORT(__asan_report_store16_noabort, 16)
GRADER_HOOK void __asan_report_store_n_noabort(uintptr_t a, size_t n) {
    rt::note_store(a, n, (uintptr_t)__builtin_return_address(0));
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
    rt::atomic_entered(target, (uintptr_t)__builtin_return_address(0));
}
