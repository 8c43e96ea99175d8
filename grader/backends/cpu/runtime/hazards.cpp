/* Accesses that race among the threads of a block, watched in the census run (the
   smallest public case, on one pool thread, in the module built with load hooks:
   backend.py), and in a run the parent makes to explain a race another case showed. The
   job asks with `hazards 1`; the first pass's loads and stores are watched, and each
   kind of finding is written once, as a "hazard" record naming both accesses' threads
   and program counters:

   - raw, war: a thread read a shared word another thread wrote since the last barrier,
     or wrote one another read since then; the stretch after a block's last barrier
     counts as much as any other (each read is checked against every write of another
     thread in the stretch, and each write against every read);
   - waw: two threads of one block stored into one output element with no barrier
     between them (a block's result stored by every thread); every element that
     happened to is noted with the value each such store overwrote (output.cpp's
     twice_note);
   - unset: a thread read an output element before any thread stored into it (y[i] +=
     ... on an output that arrives holding the grader's poison).

   Each word keeps its last access of each kind and the last by another thread, with the
   epoch it happened in: the block's count of released barriers, so that an access before
   the last barrier is no hazard. Lanes of one warp are ordered by a warp operation both
   passed in between (__syncwarp, a shuffle): each thread counts the warp operations it
   has passed in the block. Two atomic functions' accesses never race with each other; an
   atomic and a plain access of another thread in one stretch do (a merge that reads a
   shared histogram while other threads still add to it).

   A module built with an address sanitizer's hooks (clang++'s census build: shim.py) may
   leave a store unhooked where a hook of the same address dominates it with no call
   between (the store of partial[t] += ..., after its load's hook): no other thread runs
   in between, so a shared word whose value changed since its last hooked access, in the
   same stretch between barriers, was written by the thread of that access, and is
   counted so at the next one. g++'s census build hooks every store before it is made,
   which leaves no such change. */
#include "scheduler.h"

namespace rt {

bool g_hazards = false;

struct Access {
    uint32_t thread = 0, epoch = 0, pc = 0; /* thread + 1, epoch, module offset */
    uint32_t warp_ops = 0;                  /* the warp operations the thread had passed */
    bool atomic = false;                    /* an atomic function's own load or store */
};
/* The last two accesses of one kind by different threads, the latest first. */
struct Pair {
    Access latest, other;
};
struct Word {
    Pair written, read;
    Access seen;        /* the last hooked access */
    uint32_t value = 0; /* the word as that access, a load, found it */
    bool known = false;
};
struct Shadow {
    uintptr_t lo = 0;
    size_t len = 0;
    std::vector<Word> words;
};
static Shadow g_shadows[3];             /* static slots, dynamic area, thread_local block */
static std::vector<std::vector<Access>> g_stores; /* each output's last store per element */
static std::vector<uint32_t> g_warp_ops;          /* per thread of the running block */
static long g_block = -1;
enum Found { SHARED, WAW, UNSET, KINDS };
static bool g_found[KINDS] = {};
static Line g_record[KINDS];

/* The shadow word of `a` in one of the running block's shared areas, or null; `mapped`
   says whether the word may be read (the static slots lie between guard pages). */
static Word* word_of(const Worker& w, uintptr_t a, bool* mapped) {
    const uintptr_t lows[3] = {(uintptr_t)w.statics.map, (uintptr_t)w.dyn.lo,
                               (uintptr_t)w.tls_block};
    const size_t lens[3] = {w.statics.map_len, w.dyn.lo_len, w.tls_block ? module.tls_size : 0};
    for (int i = 0; i < 3; ++i) {
        if (!lens[i] || a - lows[i] >= lens[i]) continue;
        Shadow& s = g_shadows[i];
        if (s.lo != lows[i] || s.len != lens[i]) {
            s.lo = lows[i];
            s.len = lens[i];
            s.words.assign(lens[i] / 4 + 1, Word());
        }
        uintptr_t word = a & ~(uintptr_t)3;
        *mapped = word >= lows[i] && word + 4 <= lows[i] + lens[i];
        if (i == 0) {
            const Region* r = static_shared_region(a);
            *mapped = r && word >= (uintptr_t)r->data && word + 4 <= (uintptr_t)r->data + r->bytes;
        }
        return &s.words[(a - lows[i]) / 4];
    }
    return nullptr;
}

/* The last store into element `e` of output `index`. */
static Access& stored(int index, size_t e, size_t elements) {
    if ((size_t)index >= g_stores.size()) g_stores.resize((size_t)index + 1);
    std::vector<Access>& out = g_stores[(size_t)index];
    if (out.size() < elements) out.resize(elements);
    return out[e];
}

/* The running block's warp-operation counts, from zero at its start. */
static std::vector<uint32_t>& warp_ops(const Worker& w) {
    if (w.block != g_block) {
        g_block = w.block;
        g_warp_ops.assign((size_t)blockDim.x * blockDim.y * blockDim.z, 0);
    }
    return g_warp_ops;
}

static Access now(const Worker& w, uintptr_t ret) {
    int me = running_linear();
    std::vector<uint32_t>& ops = warp_ops(w);
    Access a;
    a.thread = (uint32_t)me + 1;
    a.epoch = w.epoch;
    a.pc = caller_pc(ret);
    a.warp_ops = (size_t)me < ops.size() ? ops[(size_t)me] : 0;
    return a;
}

/* Whether `before`, by another thread, may be seen out of order by `after`: both in one
   stretch between barriers, and not lanes of one warp with a warp operation between. */
static bool races(const Access& before, const Access& after) {
    if (!before.thread || before.thread == after.thread || before.epoch != after.epoch) {
        return false;
    }
    if (before.atomic && after.atomic) return false; /* atomics order themselves */
    bool same_warp = (before.thread - 1) / 32 == (after.thread - 1) / 32;
    return !(same_warp && after.warp_ops > before.warp_ops);
}

static const Access* racing(const Pair& p, const Access& a) {
    if (races(p.latest, a)) return &p.latest;
    if (races(p.other, a)) return &p.other;
    return nullptr;
}

static void remember(Pair& p, const Access& a) {
    if (p.latest.epoch != a.epoch) p.other = Access();
    if (p.latest.thread != a.thread) p.other = p.latest;
    p.latest = a;
}

static void thread_xyz(Line& l, const char* key, uint32_t id) {
    uint32_t t = id - 1;
    l.kv3(key, t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y));
}

static void found(Found kind, const char* what, uintptr_t a, const Access& me,
                  const Access* other) {
    g_found[kind] = true;
    Line& l = g_record[kind];
    l.str("hazard").kv("what", what);
    thread_xyz(l, "thread", me.thread);
    if (other) thread_xyz(l, "other", other->thread);
    l.kv3("block", blockIdx.x, blockIdx.y, blockIdx.z);
    l.kvhex("pc", me.pc).kvhex("other_pc", other ? other->pc : 0);
    const Region* r = region_find(a);
    if (r) region_describe(*r, a, l);
}

static void shared_access(Word& d, uintptr_t a, bool write, const Access& me) {
    if (!g_found[SHARED]) {
        const Access* other = write ? racing(d.read, me) : racing(d.written, me);
        if (other) found(SHARED, write ? "war" : "raw", a, me, other);
    }
    remember(write ? d.written : d.read, me);
}

/* An access to a shared word, after the unhooked store its changed value shows. */
static void shared_word(Word& d, uintptr_t a, bool write, const Access& me, bool mapped) {
    uint32_t value = mapped ? *reinterpret_cast<const volatile uint32_t*>(a & ~(uintptr_t)3) : 0;
    /* in one stretch: a block's start refills its shared memory */
    bool changed = d.known && d.seen.epoch == me.epoch && value != d.value;
    if (mapped && changed) shared_access(d, a, true, d.seen);
    shared_access(d, a, write, me);
    d.seen = me;
    d.known = mapped && !write; /* a hooked store's value is known only after it */
    d.value = value;
}

static void output_access(uintptr_t a, const Covered& c, size_t e, bool write,
                          const Access& me) {
    Access& last = stored(c.index, e, c.elements);
    if (!write) {
        if (!last.thread && !g_found[UNSET]) found(UNSET, "unset", a, me, nullptr);
        return;
    }
    if (races(last, me)) {
        if (!g_found[WAW]) found(WAW, "waw", a, me, &last);
        /* before the store: the element holds what the other thread stored */
        twice_note(Twice::THREADS, c.index, e, reinterpret_cast<const void*>(a), c.width);
    }
    last = me;
}

void hazard_access(uintptr_t a, size_t bytes, bool write, uintptr_t ret) {
    Worker* w = tw;
    if (!g_hazards || current_pass != 0 || !w || !w->busy) return;
    bool atomic = a == (uintptr_t)w->atomic_target;
    /* where it lies first: most of a kernel's loads are of its inputs, which race with nothing */
    bool mapped = false;
    if (Word* d = word_of(*w, a, &mapped)) {
        Access me = now(*w, ret);
        me.atomic = atomic; /* races with a plain access of another thread, not an atomic */
        shared_word(*d, a, write, me, mapped);
        return;
    }
    if (atomic) return; /* an output the blocks add into is set by no one thread */
    Covered c;
    if (!stores_elements(a, bytes, &c)) return;
    Access me = now(*w, ret);
    /* a vector access (a float4 store) sets, or reads, every element it covers */
    for (size_t e = c.first; e <= c.last; ++e) {
        output_access(c.lo + e * c.width, c, e, write, me);
    }
}

void hazards_warp_passed() {
    Worker* w = tw;
    if (!g_hazards || current_pass != 0 || !w || !w->busy) return;
    std::vector<uint32_t>& ops = warp_ops(*w);
    size_t me = (size_t)running_linear();
    if (me < ops.size()) ++ops[me];
}

void hazards_report() {
    for (int k = 0; k < KINDS; ++k) {
        if (!g_found[k]) continue;
        if (k == WAW) {
            write_narrowing(g_record[k]); /* narrows the race to its case: sealed */
        } else {
            g_record[k].write();
        }
    }
}

}  // namespace rt
