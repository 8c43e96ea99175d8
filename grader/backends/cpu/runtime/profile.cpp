/* The CPU model of a kernel's memory profile (grader/model/profile.py says what it
   measures): what the first pass of a census module (built with load hooks: build.py)
   loads, stores and updates atomically in the kernel's buffers, its __device__ and
   __constant__ variables and the running block's shared memory, grouped into warp-level
   requests as a GPU forms them. Anything else a thread touches (its stack, its locals) is
   not counted: on a GPU it sits in registers or local memory.

   Every hook logs the access with its thread (linear id in the block), the program
   counter of the hooked instruction (the hook's return address, as a module offset), the
   address and the size. When a block ends, its log becomes requests: the k-th time a
   thread executed the instruction at pc, and the k-th time every other lane of its warp
   (linear id / 32) did, form one request, and the warp's lanes that did not are idle in
   it, as in a SIMT warp whose lanes run a loop a different number of times. Per request:
   - global: sectors, the distinct 32-byte segments its lanes touch;
   - shared: wavefronts, the most distinct 4-byte words one of the 32 banks holds among
     its lanes' words (lanes on one word share it); 8- and 16-byte accesses are served
     half and quarter warps at a time, so each such part counts, and the request keeps
     the wavefronts past those its width needs, plus one: `sectors` - `requests` is then
     the bank conflicts Nsight Compute counts;
   - constant: the distinct 4-byte words its lanes read (a divergent read serialises);
   - atomics: one request, by space. The shim's atomic function names its target first
     (__grader_rt_atomic) and its own store to it follows, which is not a plain store;
     a load of the target is still a load, so calling the hook before a plain load hides
     nothing.
   And each thread's global loads and atomics (an atomic reads its target: a thread that
   reads through atomicAdd(&in[j], 0) makes loads in all but name), of which the busiest
   thread's count is kept, and the busiest block's (its threads' together) with the
   count of blocks: a block runs on one SM, and a kernel waits for its busiest.

   A profiled pass runs on one pool thread, each block as fibers from its start, so that
   every thread runs the same copy of the kernel's code (a block that starts as a loop
   runs its first thread in the loop's copy: scheduler.cpp) and one instruction has one pc.
   A block whose log fills up before it ends has its finished warps' accesses made into
   requests then.

   The cost is the log's (conv3d's reference logs 2.2 million accesses), so it is kept
   small without changing a request: a warp's accesses become requests once each of its
   threads has finished or waits at a barrier, while the cache holds them; an access that
   repeats the previous lane's in the same request (the same address and width: a warp's
   read of one __constant__ word) adds its lane and bytes unlogged; and the log counts as
   full where it would have held every access.

   The totals reach the parent in one "profile" record, after the pass, with the token the
   job gave: the runner read it and blanked its file before any code of the submission
   ran (runner.cpp), so a record the kernel writes itself does not carry it. */
#include <algorithm>
#include <unordered_map>

#include "scheduler.h"

namespace rt {

bool g_profiling = false;

namespace {

enum Kind : uint8_t {
    GLOBAL_LOAD,
    GLOBAL_STORE,
    SHARED_LOAD,
    SHARED_STORE,
    CONSTANT_LOAD,
    GLOBAL_ATOMIC,
    SHARED_ATOMIC,
    KINDS
};
/* The record's names of the kinds with traffic, in Kind's order. */
const char* const TRAFFIC[] = {"global_loads", "global_stores", "shared_loads", "shared_stores",
                               "constant_loads"};
constexpr size_t SECTOR = 32, WORD = 4, BANKS = 32, WARP = 32, WAVEFRONT_BYTES = BANKS * WORD;

struct Access {
    uintptr_t addr;
    uint32_t pc;
    uint32_t k; /* the thread's k-th time at pc */
    uint16_t thread;
    uint16_t bytes;
    uint8_t kind;
};
struct Totals {
    unsigned long long requests = 0, sectors = 0, bytes = 0, lanes = 0;
};
struct Range {
    uintptr_t lo;
    size_t len;
    bool constant;
};

std::vector<Access> g_log; /* the running block's, as much as it holds */
size_t g_capacity = 0;
std::string g_token;
std::vector<Range> g_variables, g_ranges;
/* Each instruction's slot, a small number: (slot, thread) counts sit in a flat array. */
std::unordered_map<uint32_t, uint32_t> g_slots;
struct SlotCache {
    uint32_t pc = UINT32_MAX, slot = 0;
};
SlotCache g_slot_cache[4096]; /* direct-mapped, before the map: a few dozen pcs in all */
int g_threads = 0;            /* a block's */
/* thread * g_stride + slot -> how many times the thread executed the slot's pc so far
   in the running block: a thread's counts side by side, as it runs through its pcs */
std::vector<uint32_t> g_seen;
size_t g_stride = 0;
std::vector<uint32_t> g_loads; /* each thread's global loads and atomics in the block */
Totals g_totals[KINDS];
unsigned long long g_busiest = 0;
unsigned long long g_busiest_block = 0; /* the most global loads and atomics of one block */
unsigned long long g_blocks = 0;
/* the atomic function a thread is in, and its target */
uint16_t g_atomic_thread = 0;
uintptr_t g_atomic_target = 0;
std::vector<uint64_t> g_scratch; /* a request's segments or words */
/* The warps with accesses in the log, a bit each (all of them for a block of more than 64
   warps, which no GPU launches: its log is never made into requests early). */
uint64_t g_log_warps = 0;
/* The log as it was before accesses became requests a warp at a time and repeats were
   left out (warp_starts, repeated): how many accesses of each warp it would hold, and in
   all, which decides when it is full, so that a full log splits the requests it split. */
std::vector<size_t> g_warp_held;
size_t g_held = 0;
/* The running thread's accesses' request keys, addresses and widths in order, and those
   of the previous lane of its warp, where that lane ran just before it (repeated). */
struct Step {
    uint64_t key;
    uintptr_t addr;
    uint16_t bytes;
};
std::vector<Step> g_previous_lane, g_this_lane;
uint16_t g_lane = UINT16_MAX;
/* The most steps a lane's record (and join's) holds, reserved before the sandbox limits
   memory: past them an access is logged and looked up, as every access once was. */
constexpr size_t LANE_STEPS = 1 << 16;

enum Space { NONE, GLOBAL, SHARED, CONSTANT };

/* Where `a` is: in shared memory, or in one of g_ranges, whose index `*range` gets. */
Space space_of(const Worker& w, uintptr_t a, size_t* range) {
    if (in_shared(w, a)) return SHARED;
    for (size_t i = 0; i < g_ranges.size(); ++i) {
        const Range& r = g_ranges[i];
        if (a - r.lo < r.len) {
            *range = i;
            return r.constant ? CONSTANT : GLOBAL;
        }
    }
    return NONE;
}

uint16_t running_thread() { return (uint16_t)running_linear(); }

/* -- requests -------------------------------------------------------------------------- */

/* How many distinct `unit`-byte pieces the lanes of [first, last) touch; g_scratch holds
   them, in order, from its start. */
size_t pieces(const Access* first, const Access* last, size_t unit) {
    g_scratch.clear();
    bool sorted = true; /* lanes in order mostly touch addresses in order */
    for (const Access* a = first; a != last; ++a) {
        uintptr_t end = a->addr + (a->bytes ? a->bytes : 1) - 1;
        sorted = sorted && (g_scratch.empty() || g_scratch.back() <= a->addr / unit);
        for (uintptr_t p = a->addr / unit; p <= end / unit; ++p) g_scratch.push_back(p);
    }
    if (!sorted) std::sort(g_scratch.begin(), g_scratch.end());
    return (size_t)(std::unique(g_scratch.begin(), g_scratch.end()) - g_scratch.begin());
}

/* The most distinct words one bank holds among the lanes of [first, last). */
unsigned long long busiest_bank(const Access* first, const Access* last) {
    size_t words = pieces(first, last, WORD);
    unsigned long long per_bank[BANKS] = {}, most = 0;
    for (size_t i = 0; i < words; ++i) most = std::max(most, ++per_bank[g_scratch[i] % BANKS]);
    return most;
}

/* A shared request's wavefronts beyond those its width needs, plus one. The banks serve
   a whole warp's accesses of up to 4 bytes at once, and 8- and 16-byte ones a half and a
   quarter warp at a time: each part needs a wavefront of its own. */
unsigned long long wavefronts(const Access* first, const Access* last) {
    size_t widest = WORD;
    for (const Access* a = first; a != last; ++a) widest = std::max<size_t>(widest, a->bytes);
    size_t lanes = std::max<size_t>(1, WAVEFRONT_BYTES / widest);
    unsigned long long found = 0, parts = 0;
    for (const Access* a = first; a != last; ++parts) {
        const Access* end = a;
        while (end != last && end->thread % WARP / lanes == a->thread % WARP / lanes) ++end;
        found += busiest_bank(a, end);
        a = end;
    }
    return found - parts + 1;
}

/* One request: the lanes of [first, last), in lane order, one warp's at one instruction's
   k-th time. */
void request(const Access* first, const Access* last) {
    Totals& t = g_totals[first->kind];
    ++t.requests;
    t.lanes += (unsigned long long)(last - first);
    for (const Access* a = first; a != last; ++a) t.bytes += a->bytes;
    switch (first->kind) {
        case GLOBAL_LOAD:
        case GLOBAL_STORE: t.sectors += pieces(first, last, SECTOR); break;
        case SHARED_LOAD:
        case SHARED_STORE: t.sectors += wavefronts(first, last); break;
        case CONSTANT_LOAD: t.sectors += pieces(first, last, WORD); break;
        default: break;
    }
}

/* Room in each thread's row of g_seen for twice the slots, the counts kept. */
void widen() {
    size_t stride = std::max<size_t>(64, 2 * g_stride);
    std::vector<uint32_t> wider((size_t)g_threads * stride, 0);
    for (size_t t = 0; t < (size_t)g_threads && g_stride; ++t) {
        std::copy_n(g_seen.begin() + (ptrdiff_t)(t * g_stride), g_stride,
                    wider.begin() + (ptrdiff_t)(t * stride));
    }
    g_seen.swap(wider);
    g_stride = stride;
}

uint32_t slot_of(uint32_t pc) {
    SlotCache& cached = g_slot_cache[pc % 4096];
    if (cached.pc == pc) return cached.slot;
    auto found = g_slots.emplace(pc, (uint32_t)g_slots.size());
    if (found.second && g_slots.size() > g_stride) widen();
    cached = SlotCache{pc, found.first->second};
    return cached.slot;
}

/* What makes accesses one request: the instruction (its slot), its k-th time, the kind
   of access and the warp (a block has 32 warps at most). */
uint64_t request_key(const Access& a) {
    return (uint64_t)a.k << 32 | (uint64_t)a.pc << 8 | (uint64_t)a.kind << 5 | a.thread / WARP;
}

/* Request keys -> their indices, by open addressing; an entry of an older generation is
   empty, so that the table is not cleared for each block. One entry holds key, index and
   generation, which three arrays held: a probe touches one place. */
struct RequestTable {
    struct Entry {
        uint64_t key = 0;
        uint32_t value = 0, generation = 0;
    };
    std::vector<Entry> entries;
    uint32_t generation = 0, count = 0;
    int bits = 0;

    void reset(size_t most) {
        size_t size = 1;
        for (bits = 0; size < 2 * most; ++bits) size <<= 1;
        if (entries.size() < size) entries.resize(size);
        ++generation;
        count = 0;
    }
    uint32_t index(uint64_t key) {
        size_t mask = ((size_t)1 << bits) - 1;
        size_t at = (size_t)(key * 0x9E3779B97F4A7C15ull >> (64 - bits)) & mask;
        for (;; at = (at + 1) & mask) {
            Entry& e = entries[at];
            if (e.generation != generation) {
                e = Entry{key, count++, generation};
                return e.value;
            }
            if (e.key == key) return e.value;
        }
    }
};
RequestTable g_requests;
std::vector<uint32_t> g_request_of, g_starts, g_next;
/* The previous thread's accesses' requests, in order, and the running one's: a thread's
   j-th access mostly joins the previous thread's j-th access's request (a warp's lanes run
   the same code), which its key confirms before the table is asked. */
struct Joined {
    uint64_t key;
    uint32_t request;
};
std::vector<Joined> g_before, g_now;

/* The index of each access's request, in g_request_of. */
void join(const Access* first, size_t n) {
    g_before.clear();
    g_now.clear();
    for (size_t i = 0, j = 0; i < n; ++i, ++j) {
        if (i == 0 || first[i].thread != first[i - 1].thread) {
            g_before.swap(g_now);
            g_now.clear();
            j = 0;
        }
        uint64_t key = request_key(first[i]);
        bool hint = j < g_before.size() && g_before[j].key == key;
        g_request_of[i] = hint ? g_before[j].request : g_requests.index(key);
        if (j < LANE_STEPS) g_now.push_back(Joined{key, g_request_of[i]});
    }
}
std::vector<Access> g_grouped; /* the accesses, one request after another */

/* [first, last) as requests: each access's request found by a hash, the accesses put
   request by request (a counting sort), each request's lanes in lane order. Linear: the
   log of a block can hold a million accesses, which sorting took most of the run. */
void requests(Access* first, Access* last) {
    size_t n = (size_t)(last - first);
    g_requests.reset(std::max<size_t>(n, 1));
    g_request_of.resize(n);
    join(first, n);
    g_starts.assign(g_requests.count + 1, 0);
    for (uint32_t r : g_request_of) ++g_starts[r + 1];
    for (size_t r = 1; r < g_starts.size(); ++r) g_starts[r] += g_starts[r - 1];
    g_next.assign(g_starts.begin(), g_starts.end() - 1);
    g_grouped.resize(n);
    for (size_t i = 0; i < n; ++i) g_grouped[g_next[g_request_of[i]]++] = first[i];
    for (size_t r = 0; r + 1 < g_starts.size(); ++r) {
        Access* lo = g_grouped.data() + g_starts[r];
        Access* hi = g_grouped.data() + g_starts[r + 1];
        auto by_lane = [](const Access& x, const Access& y) { return x.thread < y.thread; };
        if (!std::is_sorted(lo, hi, by_lane)) std::sort(lo, hi, by_lane); /* they mostly are */
        request(lo, hi);
    }
}

/* The warps of [first, last), a bit each. */
uint64_t warps_of(const Access* first, const Access* last) {
    uint64_t found = 0;
    for (const Access* a = first; a != last; ++a) {
        found |= a->thread / WARP < 64 ? 1ull << (a->thread / WARP) : ~0ull;
    }
    return found;
}

/* The lane records of repeated() forgotten: a request they name may be made already. */
void forget_lanes() {
    g_previous_lane.clear();
    g_this_lane.clear();
    g_lane = UINT16_MAX;
}

/* A full log: the accesses of the warps before the running thread's `warp`, each of whose
   threads has finished or waits at a barrier (a profiled pass runs them in order), become
   requests, and the rest stay; a log of the running warp's alone becomes requests whole. */
void flush(size_t warp) {
    size_t before = 0;
    for (size_t v = 0; v < warp && v < g_warp_held.size(); ++v) before += g_warp_held[v];
    size_t upto = before ? warp : SIZE_MAX; /* the warps below it become requests */
    auto rest = std::stable_partition(g_log.begin(), g_log.end(),
                                      [&](const Access& a) { return a.thread / WARP < upto; });
    requests(g_log.data(), g_log.data() + (rest - g_log.begin()));
    g_log.erase(g_log.begin(), rest);
    g_log_warps = warps_of(g_log.data(), g_log.data() + g_log.size());
    for (size_t v = 0; v < upto && v < g_warp_held.size(); ++v) {
        g_held -= g_warp_held[v];
        g_warp_held[v] = 0;
    }
    forget_lanes();
}

/* Whether every thread of `warp` has finished or waits at a barrier: it accesses nothing
   more before the barrier lets it go on (profile_barrier). */
bool settled(const Worker& w, size_t warp) {
    size_t end = std::min((warp + 1) * WARP, (size_t)w.n);
    for (size_t t = warp * WARP; t < end; ++t) {
        State s = w.fibers[t].state;
        if (s != DONE && s != AT_BARRIER) return false;
    }
    return true;
}

/* A warp with no access in the log is about to log one: where every warp in the log has
   settled, the log becomes requests now, a warp's accesses at a time, which the cache
   holds (a barrier's worth of a block's did not: conv3d's reference logs a quarter of a
   million). They are the requests one pass makes at the barrier: a request is one warp's,
   and the warps in the log log nothing more until then. */
void warp_starts(const Worker& w) {
    for (uint64_t left = g_log_warps; left; left &= left - 1) {
        if (!settled(w, (size_t)__builtin_ctzll(left))) return;
    }
    requests(g_log.data(), g_log.data() + g_log.size());
    g_log.clear();
    g_log_warps = 0;
}

/* A global address as the GPU would have it: the buffer at a 256-byte boundary, as
   cudaMalloc places it (a checked pass ends each buffer at its guard page, so the host
   address of its start may be anywhere), and the buffers far apart. */
uintptr_t rebased(size_t range, uintptr_t a) {
    return (uintptr_t)(range + 1) << 40 | (a - g_ranges[range].lo);
}

/* The whole log becomes requests, at a barrier or the block's end: each thread's counts
   of its pcs start again. */
void drain() {
    requests(g_log.data(), g_log.data() + g_log.size());
    g_log.clear();
    g_log_warps = 0;
    std::fill(g_warp_held.begin(), g_warp_held.end(), 0);
    g_held = 0;
    forget_lanes();
    std::fill(g_seen.begin(), g_seen.end(), 0);
}

/* The running `thread` logs: where the previous lane of its warp ran just before it, that
   lane's record is the one repeated() compares with. */
void follow(uint16_t thread) {
    if (thread == g_lane) return;
    bool next = thread == g_lane + 1 && thread / WARP == g_lane / WARP;
    g_previous_lane.swap(g_this_lane);
    if (!next) g_previous_lane.clear();
    g_this_lane.clear();
    g_lane = thread;
}

/* Whether `a` repeats, in the same request, the access the previous lane made at the same
   place in its run: the same key, address and width, whose sectors (or words) the request
   has already. Then only its lane and its bytes count, and it is not logged: a warp's read
   of one __constant__ word is one access and 31 repeats (conv3d's reference reads 2
   million). Not shared memory's: which lanes share a wavefront depends on their width. */
bool repeated(const Access& a) {
    size_t j = g_this_lane.size();
    uint64_t key = request_key(a);
    if (j < LANE_STEPS) g_this_lane.push_back(Step{key, a.addr, a.bytes});
    bool sectors = a.kind == GLOBAL_LOAD || a.kind == GLOBAL_STORE || a.kind == CONSTANT_LOAD;
    if (!sectors || j >= g_previous_lane.size()) return false;
    const Step& before = g_previous_lane[j];
    if (before.key != key || before.addr != a.addr || before.bytes != a.bytes) return false;
    Totals& t = g_totals[a.kind];
    ++t.lanes;
    t.bytes += a.bytes;
    return true;
}

/* An access: numbered (its pc's slot, and how many times its thread executed that pc
   before, in the running block since its last barrier), counted among its thread's
   loads, and logged unless it repeats the previous lane's. */
void log(const Worker& w, uintptr_t a, size_t bytes, uintptr_t ret, Kind kind) {
    uint16_t thread = running_thread();
    size_t warp = thread / WARP;
    if (g_log_warps && warp < 64 && !(g_log_warps >> warp & 1)) warp_starts(w);
    if (g_held == g_capacity) flush(warp);
    ++g_held;
    if (warp < g_warp_held.size()) ++g_warp_held[warp];
    follow(thread);
    uint32_t slot = slot_of(caller_pc(ret));
    uint32_t k = g_seen[(size_t)thread * g_stride + slot]++;
    if (kind == GLOBAL_LOAD || kind == GLOBAL_ATOMIC) ++g_loads[thread];
    Access access{a, slot, k, thread, (uint16_t)std::min<size_t>(bytes, UINT16_MAX), kind};
    if (repeated(access)) return;
    g_log.push_back(access);
    g_log_warps |= warp < 64 ? 1ull << warp : ~0ull;
}

}  // namespace

void profile_prepare(size_t capacity, const std::string& token) {
    g_capacity = capacity;
    g_log.reserve(capacity);
    g_scratch.reserve(4 * WARP);
    for (auto* steps : {&g_previous_lane, &g_this_lane}) steps->reserve(LANE_STEPS);
    for (auto* joined : {&g_before, &g_now}) joined->reserve(LANE_STEPS);
    g_token = token;
}

void profile_variable(const void* at, size_t bytes, bool constant) {
    g_variables.push_back(Range{(uintptr_t)at, bytes, constant});
}

void profile_begin(const std::vector<Area>& buffers, int threads) {
    g_ranges = g_variables;
    for (const Area& b : buffers) g_ranges.push_back(Range{(uintptr_t)b.data, b.bytes, false});
    for (Totals& t : g_totals) t = Totals();
    g_busiest = 0;
    g_busiest_block = 0;
    g_blocks = 0;
    g_loads.assign((size_t)threads, 0);
    g_threads = threads;
    g_slots.clear();
    for (SlotCache& cached : g_slot_cache) cached = SlotCache();
    g_seen.clear();
    g_stride = 0;
    g_warp_held.assign(((size_t)threads + WARP - 1) / WARP, 0);
    g_held = 0;
    forget_lanes();
    g_profiling = true;
}

void profile_access(uintptr_t a, size_t bytes, uintptr_t ret, bool store) {
    Worker* w = tw;
    if (!w || !w->busy) return;
    size_t range = 0;
    Space space = space_of(*w, a, &range);
    if (space == NONE || (store && space == CONSTANT)) return;
    bool atomics_own = store && a == g_atomic_target && running_thread() == g_atomic_thread;
    if (atomics_own) return;
    g_atomic_target = 0;
    Kind kind = space == CONSTANT ? CONSTANT_LOAD
                : space == SHARED ? (store ? SHARED_STORE : SHARED_LOAD)
                                  : (store ? GLOBAL_STORE : GLOBAL_LOAD);
    log(*w, space == GLOBAL ? rebased(range, a) : a, bytes, ret, kind);
}

void profile_atomic(uintptr_t target, uintptr_t ret) {
    Worker* w = tw;
    if (!w || !w->busy) return;
    g_atomic_thread = running_thread();
    g_atomic_target = target;
    size_t range = 0;
    Space space = space_of(*w, target, &range);
    if (space == GLOBAL || space == SHARED) {
        log(*w, space == GLOBAL ? rebased(range, target) : target, 0, ret,
            space == GLOBAL ? GLOBAL_ATOMIC : SHARED_ATOMIC);
    }
}

void profile_barrier() { drain(); }

void profile_swap_loads(std::vector<uint32_t>& loads) {
    drain();
    g_loads.swap(loads);
    g_loads.resize((size_t)g_threads, 0);
}

void profile_block_end() {
    drain();
    unsigned long long block = 0;
    for (uint32_t& loads : g_loads) {
        g_busiest = std::max<unsigned long long>(g_busiest, loads);
        block += loads;
        loads = 0;
    }
    g_busiest_block = std::max(g_busiest_block, block);
    ++g_blocks;
    g_atomic_target = 0;
}

void profile_end() {
    g_profiling = false;
    Line l;
    l.str("profile").kv("token", g_token.c_str());
    for (int k = GLOBAL_LOAD; k <= CONSTANT_LOAD; ++k) {
        const Totals& t = g_totals[k];
        l.str(" ").str(TRAFFIC[k]).str("=").num((long long)t.requests).str(",");
        l.num((long long)t.sectors).str(",").num((long long)t.bytes).str(",").num((long long)t.lanes);
    }
    l.kv("global_atomics", (long long)g_totals[GLOBAL_ATOMIC].requests);
    l.kv("shared_atomics", (long long)g_totals[SHARED_ATOMIC].requests);
    l.kv("busiest", (long long)g_busiest);
    l.kv("busiest_block", (long long)g_busiest_block);
    l.kv("blocks", (long long)g_blocks);
    l.write();
}

}  // namespace rt
