/* The block scheduler: every CUDA thread of a block is a fiber on one OS thread.

   A block starts as a plain loop (grader_loop_K, generated in the student's module, runs
   thread after thread with the kernel body inlined). The first barrier or warp operation
   hands the block over to fibers: the thread that called it keeps the loop's stack as its
   own, the threads before it in the order have finished, and the ones after it start as
   fresh fibers. Kernels that never synchronise therefore never pay for fibers, and the
   launch remembers that a kernel does, so its later blocks start as fibers directly.

   Fibers run in sweeps over the pass's order (forward or reverse). A fiber runs until it
   blocks at a barrier or warp operation, or finishes, and then switches straight to the
   next runnable fiber of the sweep. When a sweep ends with nothing runnable, the barrier
   is released, or, if the threads cannot all meet, the divergence is recorded and the
   block is let go on as a GPU would.

   A thread that spins on a flag gives its turn away (spin_wait, scheduler.h), and a
   block whose every runnable thread waits so is parked, a copy of its shared memory and
   of the used part of its stacks kept (park), while its pool thread runs a block not
   started yet on the same stacks, or a parked one whose flag changed (run_blocks), as a
   GPU runs a small grid's blocks at once. A pool thread left with nothing to run sleeps
   while another runs blocks (stall). */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "scheduler.h"

extern "C" {
__attribute__((visibility("default"))) __thread GUint3 threadIdx;
__attribute__((visibility("default"))) __thread GUint3 blockIdx;
__attribute__((visibility("default"))) GUint3 blockDim = {1, 1, 1};
__attribute__((visibility("default"))) GUint3 gridDim = {1, 1, 1};
__thread int grader_rt_cur; /* the running fiber, -1 in a loop (rt::running_linear); no module sees it */
__attribute__((visibility("default"))) __thread int grader_rt_loop_stop;
__attribute__((visibility("default"))) int grader_rt_float_atomics;
}

namespace rt {

__thread Worker* tw = nullptr;
Launch* g_launch = nullptr;

/* -- divergence findings --------------------------------------------------------------- */
static std::mutex g_div_lock;
static Divergence g_div;

static unsigned long long linear(GUint3 b) {
    return b.x + (unsigned long long)gridDim.x * (b.y + (unsigned long long)gridDim.y * b.z);
}

/* The pass keeps the finding of the first block in grid order that had one (within it,
   the first), which is the same whatever thread ran which block when. */
void divergence_record(const Divergence& d) {
    std::lock_guard<std::mutex> hold(g_div_lock);
    if (!g_div.set || linear(d.block) < linear(g_div.block)) {
        g_div = d;
        g_div.set = true;
    }
}

Divergence divergence_take() {
    std::lock_guard<std::mutex> hold(g_div_lock);
    Divergence d = g_div;
    g_div = Divergence();
    return d;
}

/* -- stacks ---------------------------------------------------------------------------- */
static size_t page() {
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

static size_t stack_stride() { return page() + FIBER_STACK; }

static bool stacks_reserve(Worker& w, int count) {
    if (w.stack_count >= count) return true;
    if (w.stacks) munmap(w.stacks, w.stacks_len);
    w.stacks_len = stack_stride() * (size_t)count;
    void* m = mmap(nullptr, w.stacks_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        w.stacks = nullptr;
        w.stack_count = 0;
        return false;
    }
    w.stacks = static_cast<char*>(m);
    w.guarded.assign((size_t)count, 0);
    w.stack_count = count;
    return true;
}

/* Stack i, its guard page set when it is first used: a block that runs as a loop uses
   stack 0 alone, and finished fibers hand theirs on, so most workers set a few guards,
   not a block's threads' worth on each pool thread (mprotect's on one mmap lock). */
static char* stack_lo(Worker& w, int i) {
    if (!w.guarded[(size_t)i]) {
        mprotect(w.stacks + stack_stride() * i, page(), PROT_NONE);
        w.guarded[(size_t)i] = 1;
    }
    return w.stacks + stack_stride() * i + page();
}

/* Usable size of stack i. Tops at the same offset in every stack would all fall in the
   same cache sets (the stride is a multiple of 4 KiB); shortening each stack by a
   different multiple of 64 bytes spreads them. */
static size_t stack_size(int i) { return FIBER_STACK - (size_t)((i * 7) % 64) * 64; }

static char* stack_top(Worker& w, int i) { return stack_lo(w, i) + stack_size(i); }

static int take_stack(Worker& w) {
    int s = w.free_stacks.back();
    w.free_stacks.pop_back();
    return s;
}

size_t fiber_stack_bytes() { return FIBER_STACK; }

bool stack_guard_hit(uintptr_t addr) {
    Worker* w = tw;
    if (!w || !w->stacks) return false;
    uintptr_t lo = (uintptr_t)w->stacks;
    if (addr < lo || addr >= lo + w->stacks_len) return false;
    return (addr - lo) % stack_stride() < page();
}

/* -- static shared slots ------------------------------------------------------------------ */
static size_t whole_pages(size_t n) { return (n + page() - 1) / page() * page(); }
static size_t slot_span() { return whole_pages(STATIC_SLOT_BYTES); }
static size_t slot_guard() { return whole_pages(STATIC_GUARD_BYTES); }
static size_t slot_stride() { return slot_span() + slot_guard(); }
static char* slot_lo(const StaticSlots& s, int i) {
    return s.map + slot_guard() + (size_t)i * slot_stride();
}

[[noreturn]] static void statics_failed(const char* detail) {
    fail("static_shared", detail, EXIT_FAULT);
}

/* As many slots as the module's rewritten declarations, each filled, placed for this
   launch's pass. */
static void statics_prepare(StaticSlots& s, Launch& L) {
    const int* wanted = static_cast<const int*>(dlsym(L.module, "grader_shared_slots"));
    int n = wanted && *wanted > 0 ? *wanted : 0;
    if (n > s.count) {
        if (s.map) munmap(s.map, s.map_len);
        s.map_len = slot_guard() + (size_t)n * slot_stride();
        void* m = mmap(nullptr, s.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) statics_failed("no memory for the static shared slots");
        s.map = static_cast<char*>(m);
        s.count = n;
        for (int i = 0; i < n; ++i) {
            if (mprotect(slot_lo(s, i), slot_span(), PROT_READ | PROT_WRITE) != 0) {
                statics_failed("no memory for the static shared slots");
            }
        }
    }
    s.end_aligned = L.end_aligned;
    s.slots.assign((size_t)s.count, StaticSlot());
    for (int i = 0; i < s.count; ++i) fill_words(slot_lo(s, i), slot_span(), SHARED_FILL);
}

const Region* static_shared_region(uintptr_t addr) {
    static thread_local Region found;
    Worker* w = tw;
    if (!w || !w->statics.map) return nullptr;
    const StaticSlots& s = w->statics;
    uintptr_t lo = (uintptr_t)s.map;
    if (addr < lo || addr >= lo + s.map_len) return nullptr;
    /* Guard j lies between slot j-1 (whose end touches it in the first pass) and slot j
       (whose start follows it in the second). */
    long j = (long)((addr - lo) / slot_stride());
    bool in_guard = (addr - lo) % slot_stride() < slot_guard();
    long pick = j;
    if (in_guard) {
        bool before = j > 0 && s.slots[(size_t)(j - 1)].decl;
        bool after = j < s.count && s.slots[(size_t)j].decl;
        pick = (s.end_aligned ? before || !after : !after && before) ? j - 1 : j;
    }
    if (pick < 0) pick = 0;
    if (pick >= s.count) pick = s.count - 1;
    const StaticSlot& slot = s.slots[(size_t)pick];
    found = Region{s.map,     s.map + s.map_len, slot.data, slot.decl ? (size_t)slot.decl->bytes : 0,
                   REGION_STATIC, (int)pick};
    found.decl = slot.decl;
    if (!found.data) found.data = slot_lo(s, (int)pick);
    return &found;
}

/* -- preparing a pool thread for a launch ---------------------------------------------- */
/* The running block's fibers, for blocks shaped like `L`. */
static void resident_prepare(Worker& w, Launch& L) {
    w.fibers.assign((size_t)L.nthreads, Fiber());
    w.warp_waiting.assign((size_t)(L.nthreads + 31) / 32, 0u);
    w.warp_needed.assign((size_t)(L.nthreads + 31) / 32, 0u);
    for (int i = 0; i < L.nthreads; ++i) {
        Fiber& f = w.fibers[(size_t)i];
        f.tid.x = (unsigned)i % L.block.x;
        f.tid.y = ((unsigned)i / L.block.x) % L.block.y;
        f.tid.z = (unsigned)i / (L.block.x * L.block.y);
    }
}

bool worker_prepare(Worker& w, Launch& L) {
    w.n = L.nthreads;
    w.order.resize((size_t)w.n);
    for (int i = 0; i < w.n; ++i) w.order[(size_t)i] = L.reverse ? w.n - 1 - i : i;
    w.next = w.last = 0;
    w.park_limit = (size_t)blocks_parked(w.n);
    bool stacks = stacks_reserve(w, L.nthreads + 1);
    resident_prepare(w, L);
    /* The module's static shared memory is its thread_local block; touching the anchor
       makes this thread's copy exist, and dlinfo says where it is. */
    w.tls_block = nullptr;
    if (L.tls_anchor && module.tls_size) {
        L.tls_anchor();
        void* block = nullptr;
        if (dlinfo(module.handle, RTLD_DI_TLS_DATA, &block) == 0) {
            w.tls_block = static_cast<char*>(block);
        }
    }
    statics_prepare(w.statics, L);
    /* Dynamic shared memory ends on the trailing guard (first pass) or starts on the
       leading one (second pass), like the buffers. */
    w.dyn_span = (L.shared_bytes + 15) / 16 * 16;
    if (L.end_aligned) {
        w.dyn_base = w.dyn.lo + w.dyn.lo_len - w.dyn_span;
    } else {
        w.dyn_base = w.dyn.lo;
    }
    return stacks;
}

/* -- switching between fibers ----------------------------------------------------------- */
static void fiber_entry(void* arg);

static void finish(Worker& w, Fiber& f) {
    f.state = DONE;
    --w.n_runnable;
    ++w.n_done;
    w.finished.push_back((int)(&f - w.fibers.data()));
}

static void enter(Worker& w, Fiber& g, Context* from) {
    int lin = (int)(&g - w.fibers.data());
    threadIdx = g.tid;
    grader_rt_cur = lin;
    w.spin_addr = 0; /* a run of loads is one thread's */
    if (g.state == NOT_STARTED) {
        g.stack = take_stack(w);
        context_init(&g.ctx, stack_lo(w, g.stack), stack_size(g.stack), fiber_entry, &w);
        g.state = RUNNABLE;
    }
    context_switch(from, &g.ctx);
}

/* The running fiber `me` has blocked or finished: run the next runnable fiber of this
   sweep, or go back to the scheduler when the sweep is over. */
static void yield(Worker& w, Fiber& me) {
    for (int p = w.pos + 1; w.n_runnable > 0 && p < w.n; ++p) {
        Fiber& g = w.fibers[(size_t)w.order[(size_t)p]];
        if (g.state == RUNNABLE || g.state == NOT_STARTED) {
            w.pos = p;
            enter(w, g, &me.ctx);
            return;
        }
    }
    w.pos = w.n;
    context_switch(&me.ctx, &w.sched);
}

static void fiber_entry(void* arg) {
    Worker& w = *static_cast<Worker*>(arg);
    g_launch->call(g_launch->args);
    Fiber& f = w.fibers[(size_t)grader_rt_cur];
    finish(w, f);
    yield(w, f);
    abort(); /* a finished fiber is never resumed */
}

static void loop_entry(void* arg) {
    Worker& w = *static_cast<Worker*>(arg);
    Launch& L = *g_launch;
    grader_loop_ctl c = {L.block.x, L.block.y, L.block.z, L.reverse ? 1 : 0};
    grader_rt_cur = -1; /* running_linear: threadIdx says which thread runs */
    L.loop(L.args, &c);
    w.loop_done = true;
    context_switch(&w.loop_ctx, &w.sched);
    abort();
}

/* The block was running as a loop and thread grader_rt_cur reached a barrier or warp
   operation: from here on it runs as fibers. */
static void reset_fibers(Worker& w, int in_use);

static void to_fibers(Worker& w) {
    reset_fibers(w, w.loop_stack);
    w.fiber_mode = true;
    g_launch->needs_fibers.store(true, std::memory_order_relaxed);
    grader_rt_loop_stop = 1;
    int cur = grader_rt_cur = running_linear();
    int pos = g_launch->reverse ? w.n - 1 - cur : cur;
    w.pos = pos;
    for (int p = 0; p < pos; ++p) w.fibers[(size_t)w.order[(size_t)p]].state = DONE;
    w.n_done = pos;
    w.n_runnable = w.n - pos;
    Fiber& f = w.fibers[(size_t)cur];
    f.state = RUNNABLE;
    f.stack = w.loop_stack;
    w.loop_stack = -1;
}

/* -- warp operations -------------------------------------------------------------------- */
static unsigned lanes_present(Worker& w, int warp) {
    int count = w.n - warp * 32;
    return count >= 32 ? 0xffffffffu : ((1u << count) - 1u);
}

static unsigned long long lane_value(Worker& w, int lo, unsigned group, int lane, int self) {
    if (lane >= 0 && lane < 32 && ((group >> lane) & 1u)) {
        return w.fibers[(size_t)(lo + lane)].w_value;
    }
    return w.fibers[(size_t)(lo + self)].w_value;
}

static unsigned long long warp_result(Worker& w, int lo, unsigned group, int lane) {
    Fiber& f = w.fibers[(size_t)(lo + lane)];
    unsigned mask = f.w_mask & group;
    int width = f.w_width;
    if (width < 1 || width > 32 || (width & (width - 1))) width = 32;
    int seg = lane & ~(width - 1);
    int in_seg = lane & (width - 1);
    switch (f.w_op) {
        case GRADER_WARP_SHFL:
            return lane_value(w, lo, group, seg + (f.w_arg & (width - 1)), lane);
        case GRADER_WARP_SHFL_UP:
            return in_seg < f.w_arg ? f.w_value : lane_value(w, lo, group, lane - f.w_arg, lane);
        case GRADER_WARP_SHFL_DOWN:
            return in_seg + f.w_arg >= width ? f.w_value
                                             : lane_value(w, lo, group, lane + f.w_arg, lane);
        case GRADER_WARP_SHFL_XOR: {
            int src = lane ^ f.w_arg;
            if (src < seg || src >= seg + width) return f.w_value;
            return lane_value(w, lo, group, src, lane);
        }
        default:
            break;
    }
    unsigned long long acc = 0;
    bool all = true, any = false;
    unsigned int rmin = 0xffffffffu, rmax = 0, rand_ = 0xffffffffu, ror = 0, rxor = 0;
    unsigned long long rsum = 0;
    for (int l = 0; l < 32; ++l) {
        if (!((mask >> l) & 1u)) continue;
        unsigned long long v = w.fibers[(size_t)(lo + l)].w_value;
        unsigned int u = (unsigned int)v;
        if (v) acc |= 1ull << l;
        if (f.w_op == GRADER_WARP_MATCH_ANY && v == f.w_value) acc |= 1ull << l;
        all = all && v != 0;
        any = any || v != 0;
        rsum += u;
        rmin = u < rmin ? u : rmin;
        rmax = u > rmax ? u : rmax;
        rand_ &= u;
        ror |= u;
        rxor ^= u;
    }
    switch (f.w_op) {
        case GRADER_WARP_BALLOT: return acc & 0xffffffffull;
        case GRADER_WARP_ANY: return any ? 1 : 0;
        case GRADER_WARP_ALL: return all ? 1 : 0;
        case GRADER_WARP_MATCH_ANY: { /* lanes holding the same value */
            unsigned long long m = 0;
            for (int l = 0; l < 32; ++l) {
                if (((mask >> l) & 1u) && w.fibers[(size_t)(lo + l)].w_value == f.w_value) {
                    m |= 1ull << l;
                }
            }
            return m;
        }
        case GRADER_WARP_REDUCE_ADD: return (unsigned int)rsum;
        case GRADER_WARP_REDUCE_MIN: return rmin;
        case GRADER_WARP_REDUCE_MAX: return rmax;
        case GRADER_WARP_REDUCE_AND: return rand_;
        case GRADER_WARP_REDUCE_OR: return ror;
        case GRADER_WARP_REDUCE_XOR: return rxor;
        default: return 0; /* GRADER_WARP_SYNC */
    }
}

/* Resolves the warp's waiting lanes once every lane their masks name is waiting too.
   `force` resolves with the lanes that are there (after recording a divergence). */
static bool warp_try(Worker& w, int warp, bool force) {
    int lo = warp * 32;
    unsigned present = lanes_present(w, warp);
    unsigned group = w.warp_waiting[(size_t)warp] & present;
    if (!group) return false;
    if (!force && (w.warp_needed[(size_t)warp] & present & ~group)) return false;
    w.warp_waiting[(size_t)warp] = w.warp_needed[(size_t)warp] = 0; /* all of them go on */
    unsigned long long results[32];
    for (int l = 0; l < 32; ++l) {
        if ((group >> l) & 1u) results[l] = warp_result(w, lo, group, l);
    }
    for (int l = 0; l < 32; ++l) {
        if (!((group >> l) & 1u)) continue;
        Fiber& f = w.fibers[(size_t)(lo + l)];
        f.w_result = results[l];
        f.state = RUNNABLE;
        --w.n_warp;
        ++w.n_runnable;
    }
    return true;
}

/* A warp whose lanes can never all arrive: one named in a mask finished or waits at a
   __syncthreads. */
static void warp_stuck(Worker& w, int warp) {
    int lo = warp * 32;
    unsigned present = lanes_present(w, warp);
    for (int l = 0; l < 32; ++l) {
        Fiber& f = w.fibers[(size_t)(lo + l)];
        if (!((present >> l) & 1u) || f.state != AT_WARP) continue;
        for (int m = 0; m < 32; ++m) {
            if (!((f.w_mask & present) >> m & 1u)) continue;
            Fiber& g = w.fibers[(size_t)(lo + m)];
            if (g.state == AT_WARP) continue;
            Divergence d;
            d.what = "warp";
            d.block = blockIdx;
            d.thread = f.tid;
            d.line = f.w_line;
            d.op = f.w_op;
            d.other = g.tid;
            d.other_state = g.state == DONE ? 0 : 1;
            d.other_line = g.state == AT_BARRIER ? g.bar_line : 0;
            divergence_record(d);
            warp_try(w, warp, true);
            return;
        }
    }
    warp_try(w, warp, true);
}

/* -- block barriers ----------------------------------------------------------------- */
/* Every fiber that has not finished waits at a barrier: check they wait at the same one,
   record who had returned instead, and let them all go on. */
static void release_barrier(Worker& w) {
    if (g_profiling) profile_barrier();
    Fiber* first = nullptr;
    Fiber* done = nullptr;
    Fiber* other_line = nullptr;
    int waiting = w.n - w.n_done;
    int count = w.bar_count;
    for (int i = 0; i < w.n; ++i) {
        Fiber& f = w.fibers[(size_t)i];
        if (f.state == DONE) {
            if (!done) done = &f;
            continue;
        }
        if (!first) {
            first = &f;
        } else if (!other_line && (f.bar_line != first->bar_line || f.bar_kind != first->bar_kind)) {
            other_line = &f;
        }
        switch (f.bar_kind) {
            case GRADER_BAR_COUNT: f.bar_result = count; break;
            case GRADER_BAR_AND: f.bar_result = count == waiting ? 1 : 0; break;
            case GRADER_BAR_OR: f.bar_result = count > 0 ? 1 : 0; break;
            default: f.bar_result = 0; break;
        }
        f.state = RUNNABLE;
    }
    w.n_runnable += waiting;
    w.bar_count = 0;
    ++w.epoch;
    if (first && (other_line || done)) {
        Divergence d;
        d.what = other_line ? "lines" : "returned";
        d.block = blockIdx;
        d.thread = first->tid;
        d.line = first->bar_line;
        Fiber* o = other_line ? other_line : done;
        d.other = o->tid;
        d.other_line = other_line ? other_line->bar_line : 0;
        d.other_state = other_line ? 1 : 0;
        d.op = first->bar_kind;
        divergence_record(d);
    }
}

/* -- threads and blocks that wait for others ----------------------------------------- */
/* The running thread waits for the word it keeps reading (scheduler.h): it stays
   runnable, and the block's other threads run before it comes back. */
void spin_wait(Worker& w) {
    w.spin_count = 0;
    if (!w.fiber_mode) to_fibers(w);
    Fiber& f = w.fibers[(size_t)grader_rt_cur];
    f.waits = true;
    f.wait_addr = w.spin_addr;
    f.wait_value = w.spin_value;
    uintptr_t top = (uintptr_t)stack_top(w, f.stack);
    f.wait_pc = module_pc(0, (uintptr_t)__builtin_frame_address(0), top);
    w.waited_by = grader_rt_cur;
    ++w.n_waiting;
    yield(w, f);
    f.waits = false;
    --w.n_waiting;
}

/* Whether a waiting fiber of `r`, the running block or a parked one, would find its word
   changed. A parked block's shared memory holds the running block's words: only its own
   threads, all parked, change its own. */
static bool woken(const Worker& w, const Resident& r) {
    if (!r.n_waiting) return false;
    bool parked = &r != static_cast<const Resident*>(&w);
    for (const Fiber& f : r.fibers) {
        if (!f.waits || (parked && in_shared(w, f.wait_addr))) continue;
        if (word_at(f.wait_addr) != f.wait_value) return true;
    }
    return false;
}

static bool any_woken(const Worker& w) {
    return std::any_of(w.parked.begin(), w.parked.end(),
                       [&](const Resident& r) { return woken(w, r); });
}

static bool more_blocks(const Worker& w, const Launch& L) {
    return w.next < w.last || L.next_block.load(std::memory_order_relaxed) < L.nblocks;
}

/* Every runnable fiber of the running block waits for a word none of them changed. */
static bool all_wait(Worker& w) {
    return w.n_waiting >= w.n_runnable && !woken(w, w);
}

/* The block whose threads all wait had better be parked where another can run (a block
   not started yet, where room is left to start it once this one is parked: room(); or a
   parked one some word of which changed). Parked where no block can start, it would be
   resumed and parked again, none of its threads running, which a hang's probes then find
   nowhere. */
static bool should_park(Worker& w) {
    if (w.parked.size() + 1 < w.park_limit && more_blocks(w, *g_launch)) return true;
    return any_woken(w);
}

/* Nothing this pool thread holds can run until another stores: while another pool thread
   runs blocks, it gives its core to them for a moment, so that on a loaded machine a
   chained scan's next block gets the CPU, and the waiting block's CPU time (the
   watchdog's) is not spent spinning. Where every pool thread waits so, none will store:
   it spins, and the watchdog stops the hang as soon as before. */
static void stall(Launch& L) {
    if (L.stalled.fetch_add(1) + 1 < L.running.load(std::memory_order_relaxed)) {
        struct timespec pause_ts = {0, 50 * 1000};
        nanosleep(&pause_ts, nullptr);
    }
    L.stalled.fetch_sub(1);
}

/* Runs sweeps until every fiber of the block has finished (true), or it should park. */
static bool schedule(Worker& w) {
    for (;;) {
        for (int lin : w.finished) {
            Fiber& f = w.fibers[(size_t)lin];
            if (f.stack >= 0) w.free_stacks.push_back(f.stack);
            f.stack = -1;
        }
        w.finished.clear();
        if (w.n_done == w.n) return true;
        if (w.n_runnable > 0) {
            if (w.n_waiting && all_wait(w)) {
                if (should_park(w)) return false;
                stall(*g_launch);
            }
            for (int p = 0; p < w.n; ++p) {
                Fiber& f = w.fibers[(size_t)w.order[(size_t)p]];
                if (f.state == RUNNABLE || f.state == NOT_STARTED) {
                    w.pos = p;
                    enter(w, f, &w.sched);
                    break;
                }
            }
            continue;
        }
        if (w.n_warp > 0) {
            for (int warp = 0; warp * 32 < w.n; ++warp) {
                bool waiting = false;
                for (int l = warp * 32; l < w.n && l < warp * 32 + 32; ++l) {
                    waiting = waiting || w.fibers[(size_t)l].state == AT_WARP;
                }
                if (waiting) warp_stuck(w, warp);
            }
            continue;
        }
        release_barrier(w);
    }
}

/* Every fiber not started, every stack free but `in_use` (the loop's, when a block
   changes from a loop to fibers). */
static void reset_fibers(Worker& w, int in_use) {
    w.free_stacks.clear();
    for (int i = w.stack_count - 1; i >= 0; --i) {
        if (i != in_use) w.free_stacks.push_back(i);
    }
    for (Fiber& f : w.fibers) {
        f.state = NOT_STARTED;
        f.stack = -1;
    }
    w.n_runnable = w.n;
    w.n_done = 0;
    w.n_warp = 0;
    std::fill(w.warp_waiting.begin(), w.warp_waiting.end(), 0u);
    std::fill(w.warp_needed.begin(), w.warp_needed.end(), 0u);
    w.bar_count = 0;
    w.finished.clear();
}

/* -- one block ------------------------------------------------------------------------- */
/* Calls f(lo, bytes) for each piece of the running block's shared memory: the module's
   thread_local block, each static slot's arrays, and the dynamic area with a few bytes
   past it (check_shared_tail). */
template <class F>
static void each_shared(Worker& w, F f) {
    if (w.tls_block) f(w.tls_block, module.tls_size);
    StaticSlots& s = w.statics;
    for (int i = 0; i < s.count; ++i) {
        size_t used = s.slots[(size_t)i].used;
        char* lo = slot_lo(s, i);
        if (used) f(s.end_aligned ? lo + slot_span() - used : lo, used);
    }
    if (w.dyn_span) {
        size_t room = (size_t)(w.dyn.lo + w.dyn.lo_len - w.dyn_base);
        f(w.dyn_base, room < w.dyn_span + 256 ? room : w.dyn_span + 256);
    }
}

static void check_shared_tail(Worker& w, Launch& L) {
    /* Bytes just past the dynamic shared memory: the alignment slack in the first pass,
       a few more in the second. A changed byte means a write past the end. */
    size_t end = (size_t)(w.dyn.lo + w.dyn.lo_len - w.dyn_base);
    size_t limit = L.end_aligned ? w.dyn_span : (w.dyn_span + 256 < end ? w.dyn_span + 256 : end);
    const unsigned char* p = reinterpret_cast<const unsigned char*>(w.dyn_base);
    uint32_t fill = SHARED_FILL;
    const unsigned char* f = reinterpret_cast<const unsigned char*>(&fill);
    for (size_t i = L.shared_bytes; i < limit; ++i) {
        if (p[i] != f[i % 4]) {
            Divergence d;
            d.what = "shared_tail";
            d.block = blockIdx;
            d.line = (int)i;
            divergence_record(d);
            return;
        }
    }
}

/* The running block has finished. */
static void end_block(Worker& w, Launch& L) {
    w.busy = 0;
    if (g_profiling) profile_block_end();
    if (w.dyn_span) check_shared_tail(w, L);
    if (L.serial) writers_after_block(w.block);
}

/* Calls f(lo, bytes) for the used part of each stack of the running block's live
   threads: from where the thread stopped (context_sp) to the stack's top. */
template <class F>
static void each_used_stack(Worker& w, F f) {
    for (const Fiber& fiber : w.fibers) {
        if (fiber.stack < 0 || fiber.state == DONE) continue;
        char* lo = stack_lo(w, fiber.stack);
        char* top = stack_top(w, fiber.stack);
        char* sp = static_cast<char*>(context_sp(&fiber.ctx));
        if (!sp || sp < lo || sp > top) sp = lo;
        f(sp, (size_t)(top - sp));
    }
}

/* The used part of the running block's stacks, copied aside. False, and nothing copied,
   where the copy and those of the blocks parked already would take the pool thread past
   its share of PARKED_STACKS. */
static bool keep_stacks(Worker& w) {
    size_t bytes = 0;
    for (const Resident& r : w.parked) bytes += r.stacks_kept.bytes.size();
    each_used_stack(w, [&](char*, size_t len) { bytes += len; });
    if (bytes > PARKED_STACKS / (size_t)pool_size()) return false;
    w.stacks_kept.clear();
    each_used_stack(w, [&](char* lo, size_t len) { w.stacks_kept.keep(lo, len); });
    return true;
}

/* The running block waits while another can run: its shared memory and the used part of
   its stacks are copied aside, and the stacks are the next block's. What it stored so far
   is its own (writers_after_block), and a profile makes requests of its accesses so far,
   as at a barrier. Where the pool thread's share of memory for stacks is spent (a kernel
   whose waiting threads hold large local arrays, on many pool threads), the run ends, and
   the backend runs the launch again on one pool thread, whose share always holds a
   window of parked blocks (PARKED_STACKS). */
static void park(Worker& w, Launch& L) {
    w.busy = 0;
    if (!keep_stacks(w)) fail("parking", "no memory for a parked block's stacks", EXIT_FAULT);
    w.shared_kept.clear();
    each_shared(w, [&](char* lo, size_t bytes) { w.shared_kept.keep(lo, bytes); });
    if (g_profiling) profile_swap_loads(w.profile_loads);
    if (L.serial) writers_after_block(w.block);
    w.parked.push_back(std::move(static_cast<Resident&>(w)));
    static_cast<Resident&>(w) = Resident();
}

/* Runs the running block until it ends or parks. */
static void settle(Worker& w, Launch& L) {
    if (w.fiber_mode && !schedule(w)) {
        park(w, L);
    } else {
        end_block(w, L);
    }
}

static void run_block(Worker& w, long b) {
    Launch& L = *g_launch;
    w.block = b;
    w.owner = stores_owner(b);
    w.atomic_target = nullptr;
    ++w.epoch;
    for (long& count : w.met_count) count = 0;
    blockIdx.x = (unsigned)(b % L.grid.x);
    blockIdx.y = (unsigned)((b / L.grid.x) % L.grid.y);
    blockIdx.z = (unsigned)(b / ((long)L.grid.x * L.grid.y));
    w.index = blockIdx;
    w.spin_addr = 0;
    w.waited_by = -1; /* a wait of the block before, on this pool thread, is not one of its */
    each_shared(w, [](char* lo, size_t bytes) { fill_words(lo, bytes, SHARED_FILL); });
    grader_rt_loop_stop = 0;
    w.fiber_mode = L.needs_fibers.load(std::memory_order_relaxed);
    w.busy = 1;
    if (!w.fiber_mode) {
        /* The fibers' bookkeeping is set up only if a barrier asks for it (to_fibers):
           a block that runs as a loop costs two switches and nothing per thread. */
        w.loop_done = false;
        w.loop_stack = 0;
        context_init(&w.loop_ctx, stack_lo(w, 0), stack_size(0), loop_entry, &w);
        w.pos = 0;
        context_switch(&w.sched, &w.loop_ctx);
    } else {
        reset_fibers(w, -1);
    }
    settle(w, L);
}

/* Parked block i runs again where it stopped. */
static void resume(Worker& w, Launch& L, size_t i) {
    static_cast<Resident&>(w) = std::move(w.parked[i]);
    w.parked.erase(w.parked.begin() + (long)i);
    blockIdx = w.index;
    grader_rt_loop_stop = 1; /* a block parks as fibers: a thread in its loop stops there */
    w.stacks_kept.put_back();
    /* an array another block placed meanwhile is one this block never wrote */
    each_shared(w, [](char* lo, size_t bytes) { fill_words(lo, bytes, SHARED_FILL); });
    w.shared_kept.put_back();
    if (g_profiling) profile_swap_loads(w.profile_loads);
    ++w.epoch;
    w.busy = 1;
    settle(w, L);
}

/* Whether a block may start: the running block's place is free (it ended), or fewer than
   park_limit blocks are parked (a parked block took the place's fibers). */
static bool room(Worker& w, Launch& L) {
    if (!w.fibers.empty()) return true;
    if (w.parked.size() >= w.park_limit) return false;
    resident_prepare(w, L);
    return true;
}

/* The i-th block a pass starts. The reversed pass runs each block before the lower ones
   of its window of blocks_parked blocks, so that neighbours store and read in the other
   order than in the forward pass, and the windows in grid order, as a GPU starts a
   grid's blocks: a block that waits for a lower one (a chained scan by blockIdx) then
   waits for its window's alone, which its pool thread can park. The windows end at the
   last block, so the partial tile's block and its neighbour swap. */
static long block_of(const Launch& L, long i) {
    if (!L.reverse) return i;
    long g = blocks_parked(L.nthreads), r = L.nblocks % g;
    if (i < r) return r - 1 - i;
    long j = i - r;
    return r + j / g * g + (g - 1 - j % g);
}

static bool take_block(Worker& w, Launch& L, long* b) {
    if (w.next >= w.last) {
        long first = L.next_block.fetch_add(L.chunk);
        if (first >= L.nblocks) return false;
        w.next = first;
        w.last = std::min(first + L.chunk, L.nblocks);
    }
    *b = block_of(L, w.next++);
    return true;
}

/* Runs blocks: a parked one whose word changed first, then one not started yet while
   there is room, then the oldest parked one. */
void run_blocks(Worker& w, Launch& L) {
    long b;
    for (;;) {
        auto ready = std::find_if(w.parked.begin(), w.parked.end(),
                                  [&](const Resident& r) { return woken(w, r); });
        if (ready != w.parked.end()) {
            resume(w, L, (size_t)(ready - w.parked.begin()));
        } else if (room(w, L) && take_block(w, L, &b)) {
            run_block(w, b);
        } else if (!w.parked.empty()) {
            resume(w, L, 0);
        } else {
            return;
        }
    }
}

bool current_snapshot(Snapshot* s) {
    Worker* w = tw;
    if (!w || !w->busy) return false;
    s->in_kernel = true;
    int cur = grader_rt_cur;
    if (cur >= 0 && cur < w->n) {
        const Fiber& f = w->fibers[(size_t)cur];
        s->thread = f.tid;
        s->wait_pc = f.waits ? f.wait_pc : 0;
    } else {
        s->thread = threadIdx;
    }
    s->block = blockIdx;
    return true;
}

}  // namespace rt

/* -- entry points called by the student's module ------------------------------------------ */
using namespace rt;

extern "C" __attribute__((visibility("default"))) int grader_rt_barrier(int kind, int pred,
                                                                        int line) {
    Worker* w = tw;
    if (!w || !w->busy) return 0; /* outside a kernel, e.g. in a global constructor */
    if (!w->fiber_mode) to_fibers(*w);
    Fiber& f = w->fibers[(size_t)grader_rt_cur];
    f.state = AT_BARRIER;
    f.bar_kind = kind;
    f.bar_line = line;
    for (int k = 0; k < 4; ++k) {
        if (w->met_count[k] && w->met_line[k] != line) continue;
        w->met_line[k] = line;
        ++w->met_count[k];
        break;
    }
    --w->n_runnable;
    w->bar_count += pred ? 1 : 0;
    yield(*w, f);
    return f.bar_result;
}

extern "C" __attribute__((visibility("default"))) unsigned long long grader_rt_warp(
    int op, unsigned int mask, unsigned long long value, int arg, int width, int line) {
    Worker* w = tw;
    if (!w || !w->busy) return value;
    if (!w->fiber_mode) to_fibers(*w);
    int cur = grader_rt_cur;
    Fiber& f = w->fibers[(size_t)cur];
    f.state = AT_WARP;
    --w->n_runnable;
    ++w->n_warp;
    f.w_op = op;
    f.w_mask = mask;
    f.w_value = value;
    f.w_arg = arg;
    f.w_width = width;
    f.w_line = line;
    w->warp_waiting[(size_t)(cur / 32)] |= 1u << (cur % 32);
    w->warp_needed[(size_t)(cur / 32)] |= mask;
    if (!warp_try(*w, cur / 32, false) || f.state != RUNNABLE) yield(*w, f);
    hazards_warp_passed();
    return f.w_result;
}

extern "C" __attribute__((visibility("default"))) unsigned int grader_rt_active_mask(void) {
    Worker* w = tw;
    if (!w || !w->busy) return 1;
    int warp = running_linear() / 32;
    unsigned present = lanes_present(*w, warp);
    if (!w->fiber_mode) return present;
    unsigned m = 0;
    for (int l = 0; l < 32; ++l) {
        if (((present >> l) & 1u) && w->fibers[(size_t)(warp * 32 + l)].state != DONE) m |= 1u << l;
    }
    return m;
}

extern "C" __attribute__((visibility("default"))) void grader_rt_loop_exit(void) {
    Worker& w = *tw;
    if (!w.fiber_mode) __builtin_trap(); /* loop_stop set by no barrier: the module's own */
    Fiber& f = w.fibers[(size_t)grader_rt_cur];
    finish(w, f);
    yield(w, f);
    abort();
}

extern "C" __attribute__((visibility("default"))) void* grader_rt_dynamic_shared(void) {
    Worker* w = tw;
    return w ? w->dyn_base : nullptr;
}

/* The slot of a static __shared__ declaration, placed for this pass (see StaticSlots). */
extern "C" __attribute__((visibility("default"))) void* grader_rt_static_shared(
    const SharedDecl* d) {
    Worker* w = tw;
    if (!w || d->magic != grader::SHARED_MAGIC || d->slot < 0 || d->slot >= w->statics.count) {
        /* outside a kernel (a global constructor): no block owns this memory */
        alignas(64) static char outside[STATIC_SLOT_BYTES];
        if ((size_t)d->bytes > sizeof(outside)) statics_failed(d->name);
        return outside;
    }
    StaticSlots& s = w->statics;
    StaticSlot& slot = s.slots[(size_t)d->slot];
    if (slot.decl == d) return slot.data;
    size_t bytes = (size_t)d->bytes;
    if (bytes > slot_span()) statics_failed(d->name);
    char* lo = slot_lo(s, d->slot);
    slot.decl = d;
    slot.data = s.end_aligned ? lo + slot_span() - bytes : lo;
    if (bytes > slot.used) slot.used = bytes;
    return slot.data;
}
