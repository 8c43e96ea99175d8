/* The shared-memory access a missing __syncthreads() exposes: a thread reading a word
   that another thread of its block wrote since the last barrier, or writing one another
   read since then. When the two checked passes of a case differ because the threads of a
   block ran in another order (a race among them), the parent runs the case once more on
   one pool thread, in the module built with load hooks (census), with `hazards 1` in the
   job (backend.py); this watches the first pass's loads and stores of shared memory and
   writes the first hazard as a "hazard" record: the array and element (as a fault names
   them), both threads and both program counters.

   Each shared word keeps who last wrote it and who last read it, and in which epoch: the
   block's count of released barriers, so that a word written before the last barrier is
   no hazard. Every word of the running block's shared memory is watched: its static
   slots, its dynamic area and the module's thread_local block. */
#include "scheduler.h"

namespace rt {

bool g_hazards = false;

struct Word {
    uint32_t writer = 0, written = 0, write_pc = 0; /* thread + 1, epoch, module offset */
    uint32_t reader = 0, read = 0, read_pc = 0;
};
struct Shadow {
    uintptr_t lo = 0;
    size_t len = 0;
    std::vector<Word> words;
};
static Shadow g_shadows[3];
static bool g_found = false;
static Line g_hazard;

/* The shadow word of `a` in one of the running block's shared areas, or null. */
static Word* word_of(const Worker& w, uintptr_t a) {
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
        return &s.words[(a - lows[i]) / 4];
    }
    return nullptr;
}

static uint32_t thread_id(const Worker& w) {
    int cur = grader_rt_cur;
    GUint3 t = cur >= 0 && cur < w.n ? w.fibers[(size_t)cur].tid : threadIdx;
    return 1 + t.x + blockDim.x * (t.y + blockDim.y * t.z);
}

static void thread_xyz(Line& l, const char* key, uint32_t id) {
    uint32_t t = id - 1;
    l.kv3(key, t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y));
}

static void found(const char* what, uintptr_t a, uint32_t me, uint32_t pc, uint32_t other,
                  uint32_t other_pc) {
    g_found = true;
    g_hazard.str("hazard").kv("what", what);
    thread_xyz(g_hazard, "thread", me);
    thread_xyz(g_hazard, "other", other);
    g_hazard.kv3("block", blockIdx.x, blockIdx.y, blockIdx.z);
    g_hazard.kvhex("pc", pc).kvhex("other_pc", other_pc);
    const Region* r = region_find(a);
    if (r) region_describe(*r, a, g_hazard);
}

void hazard_access(uintptr_t a, bool write, uintptr_t ret) {
    Worker* w = tw;
    if (!g_hazards || g_found || current_pass != 0 || !w || !w->busy) return;
    Word* d = word_of(*w, a);
    if (!d) return;
    uint32_t me = thread_id(*w), epoch = w->epoch;
    uint32_t pc = caller_pc(ret);
    if (write) {
        if (d->read == epoch && d->reader && d->reader != me) found("war", a, me, pc, d->reader, d->read_pc);
        *d = Word{me, epoch, pc, d->reader, d->read, d->read_pc};
    } else {
        if (d->written == epoch && d->writer && d->writer != me) {
            found("raw", a, me, pc, d->writer, d->write_pc);
        }
        d->reader = me;
        d->read = epoch;
        d->read_pc = pc;
    }
}

void hazards_report() {
    if (g_found) g_hazard.write();
}

}  // namespace rt
