/* What a kernel executed, counted for the lab rules that ask whether it did a thing at all
   ("reads shared memory", "uses atomics"): its loads from the running block's shared
   memory, and its atomic operations. Without nvcc the grader has no instructions to read,
   and text proves nothing, so the CPU backend counts what really ran.

   Loads: a module built for counting (shim.py) calls a hook before every load it makes:
   __tsan_readN(address) where g++ built it (-fsanitize=thread's instrumentation, whose
   runtime is these hooks: no libtsan), __asan_loadN_noabort(address) where clang++ did; a
   load counts when the address lies in the shared memory of the block the calling pool
   thread runs (its static slots, its dynamic area, or the module's thread_local block).
   Stores are not counted here (stores.cpp watches them). Atomics: every atomic function
   of the shim calls __grader_rt_atomic (stores.cpp) before its operation. A profiled pass
   (profile.cpp) also sees every load here.

   The counts reach the parent in the "pass" record, written after the submission's code
   ran, and a kernel can call these hooks itself or write such a record: believing them
   is acceptable because the rules ask for one executed load or atomic, which costs a
   kernel no more than forging one. The counters themselves are no symbol the module may
   name (build.RUNTIME_SYMBOLS). */
#include "scheduler.h"

namespace rt {

static inline void load(uintptr_t a, size_t bytes, uintptr_t ret) {
    Worker* w = tw;
    bool busy = w && w->busy;
    bool shared = busy && in_shared(*w, a);
    if (shared) ++w->shared_loads;
    /* a load of neither shared memory nor an output (an input, __constant__) races with
       nothing: most of a census run's loads, which need no call */
    bool output = !shared && in_outputs(a);
    if (g_hazards && (shared || output)) hazard_access(a, bytes, false, ret);
    if (busy && output) stores_read(a, bytes, w->owner);
    if (g_profiling) profile_access(a, bytes, ret, false);
    if (busy) spin_note(*w, a); /* last: it may switch to another thread */
}

void on_load(uintptr_t a, size_t bytes, uintptr_t ret) { load(a, bytes, ret); }

void counts_take(Counts* c) {
    c->shared_loads = c->atomics = 0;
    for (int i = 0; i < pool_size(); ++i) {
        Worker* w = pool_worker(i);
        c->shared_loads += w->shared_loads;
        c->atomics += w->atomics;
        w->shared_loads = w->atomics = 0;
    }
}

}  // namespace rt

using rt::load;

#define GRADER_HOOK extern "C" __attribute__((visibility("default")))
#define GRADER_RETURN (uintptr_t) __builtin_return_address(0)
#define GRADER_LOAD(name, size) \
    GRADER_HOOK void name(uintptr_t a) { load(a, size, GRADER_RETURN); }
GRADER_LOAD(__asan_load1_noabort, 1)
GRADER_LOAD(__asan_load2_noabort, 2)
GRADER_LOAD(__asan_load4_noabort, 4)
GRADER_LOAD(__asan_load8_noabort, 8)
GRADER_LOAD(__asan_load16_noabort, 16)
GRADER_HOOK void __asan_loadN_noabort(uintptr_t a, size_t n) { load(a, n, GRADER_RETURN); }
GRADER_HOOK void __asan_handle_no_return(void) {}
/* around a global constructor of the module */
GRADER_HOOK void __asan_before_dynamic_init(const char*) {}
GRADER_HOOK void __asan_after_dynamic_init(void) {}
GRADER_LOAD(__tsan_read1, 1)
GRADER_LOAD(__tsan_read2, 2)
GRADER_LOAD(__tsan_read4, 4)
GRADER_LOAD(__tsan_read8, 8)
GRADER_LOAD(__tsan_read16, 16)
/* an access of another size, or aligned below it (a packed struct's member) */
GRADER_HOOK void __tsan_read_range(uintptr_t a, size_t n) { load(a, n, GRADER_RETURN); }
/* the module's constructor calls it */
GRADER_HOOK void __tsan_init(void) {}
