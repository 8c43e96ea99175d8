/* Faults and the watchdog.

   A fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT) in a kernel is turned into
   one "fault" record: what was touched (a buffer's guard, the dynamic shared memory's
   guard, a fiber's stack guard, or some other address), read or write, the CUDA thread
   and block that were running, and the program counter inside the student's module for
   addr2line. Then the process ends. Handlers run on an alternate stack, since a fiber
   whose stack overflowed has none left.

   The watchdog is a thread that looks at the current phase every POLL_MS. A phase's
   budget is the work it did, in CPU time, not the time the machine gave it, so that a
   kernel gets the same verdict on a machine busy with other work: the phase has hung
   once the CPU time of the whole process, shared over the cores the phase has (the
   pool's threads; one where a single thread works), or that of the one block a pool
   thread has run longest, reaches its seconds. On an idle machine each is at most the
   wall time the phase took, so a kernel that hangs there is stopped when it was before.
   A phase that waits without working (a sleep, a call that blocks) uses no CPU time: the
   wall clock stops it at WALL_FACTOR times its seconds. Then the watchdog interrupts
   every pool thread (SIGUSR2) to learn which CUDA thread each was running and where,
   writes a "timeout" record and ends the process. The parent also kills the worker
   later, in case even this does not work. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "scheduler.h"

namespace rt {

int current_pass = 0;

static thread_local uintptr_t t_stack_lo = 0, t_stack_hi = 0;

static uintptr_t stack_top_for(uintptr_t sp) {
    Worker* w = tw;
    if (w && w->stacks && sp >= (uintptr_t)w->stacks && sp < (uintptr_t)w->stacks + w->stacks_len) {
        size_t stride = w->stacks_len / (size_t)w->stack_count;
        uintptr_t base = (uintptr_t)w->stacks;
        return base + (sp - base) / stride * stride + stride;
    }
    if (sp >= t_stack_lo && sp < t_stack_hi) return t_stack_hi;
    return 0;
}

void signals_thread_init() {
    size_t size = 64 * 1024;
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        stack_t ss;
        ss.ss_sp = m;
        ss.ss_size = size;
        ss.ss_flags = 0;
        sigaltstack(&ss, nullptr);
    }
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* lo = nullptr;
        size_t len = 0;
        if (pthread_attr_getstack(&attr, &lo, &len) == 0) {
            t_stack_lo = (uintptr_t)lo;
            t_stack_hi = (uintptr_t)lo + len;
        }
        pthread_attr_destroy(&attr);
    }
}

struct Machine {
    uintptr_t pc = 0, sp = 0;
    int access = 0; /* 0 unknown, 1 read, 2 write */
};

static Machine machine_of(void* ucv, int sig) {
    Machine m;
    ucontext_t* uc = static_cast<ucontext_t*>(ucv);
#if defined(__x86_64__)
    m.pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    m.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    if (sig == SIGSEGV) m.access = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 2 : 1;
#elif defined(__aarch64__)
    m.pc = (uintptr_t)uc->uc_mcontext.pc;
    m.sp = (uintptr_t)uc->uc_mcontext.sp;
    if (sig == SIGSEGV) {
        /* The exception syndrome register's WnR bit says write or read. */
        const unsigned char* p = uc->uc_mcontext.__reserved;
        const unsigned char* end = p + sizeof(uc->uc_mcontext.__reserved);
        while (p + 8 <= end) {
            unsigned int magic, size;
            memcpy(&magic, p, 4);
            memcpy(&size, p + 4, 4);
            if (!magic || size < 8) break;
            if (magic == 0x45535201u && p + 16 <= end) {
                unsigned long long esr;
                memcpy(&esr, p + 8, 8);
                unsigned ec = (unsigned)(esr >> 26) & 0x3fu;
                if (ec == 0x24 || ec == 0x25) m.access = (esr >> 6) & 1 ? 2 : 1;
                break;
            }
            p += size;
        }
    }
#else
    (void)uc;
    (void)sig;
#endif
    return m;
}

static void add_where(Line& l, const Machine& m) {
    Snapshot s{};
    if (current_snapshot(&s)) {
        l.kv3("thread", s.thread.x, s.thread.y, s.thread.z);
        l.kv3("block", s.block.x, s.block.y, s.block.z);
    } else {
        l.kv("where", "init");
    }
    l.kvhex("pc", module_pc(m.pc, m.sp, stack_top_for(m.sp)));
}

static std::atomic<int> g_stopping{0};

static void on_fault(int sig, siginfo_t* si, void* ucv) {
    if (g_stopping.exchange(1)) {
        /* Another thread is already reporting; let it finish. */
        for (;;) pause();
    }
    Machine m = machine_of(ucv, sig);
    uintptr_t addr = (uintptr_t)si->si_addr;
    Line l;
    l.str("fault").kv("signal", sig).kv("code", si->si_code).kv("pass", current_pass);
    if (sig == SIGSEGV || sig == SIGBUS) {
        const Region* r = region_find(addr);
        if (stack_guard_hit(addr)) {
            l.kv("kind", "stack_overflow").kv("stack", (long long)fiber_stack_bytes());
        } else if (r) {
            region_describe(*r, addr, l);
        } else {
            l.kv("kind", "address").kvhex("addr", addr);
        }
        l.kv("access", m.access == 2 ? "write" : (m.access == 1 ? "read" : "unknown"));
    } else if (sig == SIGFPE) {
        bool integer = si->si_code == FPE_INTDIV || si->si_code == FPE_INTOVF;
        l.kv("kind", integer ? "divide" : "float");
    } else if (sig == SIGABRT) {
        l.kv("kind", "abort");
#if defined(__aarch64__)
    } else if ((sig == SIGTRAP || sig == SIGILL) && m.pc >= module.text_lo && m.pc < module.text_hi) {
        /* the trap the compiler puts before an integer division (grader/backends/cpu/shim.py) */
        l.kv("kind", "divide");
#endif
    } else {
        l.kv("kind", "instruction");
    }
    add_where(l, m);
    l.write();
    output_flush(FILE_PRINTF);
    _exit(EXIT_FAULT);
}

/* -- watchdog ------------------------------------------------------------------------ */
struct Probe {
    volatile int ready;
    int in_kernel;
    GUint3 thread, block;
    uintptr_t pc;
};
static Probe g_probes[1024];
static std::mutex g_wd_lock;
static std::condition_variable g_wd_cv;
static bool g_wd_armed = false;
static std::chrono::steady_clock::time_point g_wd_start;
static const char* g_wd_phase = "";
static double g_wd_seconds = 0;
static double g_wd_cpu = 0; /* the process's CPU time when the phase began */
static int g_wd_cores = 1;
static pthread_t g_main;
static const int POLL_MS = 20;

/* What the watchdog last saw a pool thread run: the block, and the thread's CPU time
   when it first saw it there. */
struct Watch {
    clockid_t clock{};
    bool clocked = false;
    long block = -1;
    double since = 0;
};
static Watch g_watch[1024];

static void on_probe(int, siginfo_t*, void* ucv) {
    Machine m = machine_of(ucv, 0);
    Worker* w = tw;
    int slot = w ? w->id + 1 : 0;
    if (slot >= 1024) return;
    Probe& p = g_probes[slot];
    Snapshot s{};
    p.in_kernel = current_snapshot(&s) ? 1 : 0;
    p.thread = s.thread;
    p.block = s.block;
    p.pc = module_pc(m.pc, m.sp, stack_top_for(m.sp));
    if (!p.pc) p.pc = s.wait_pc; /* the scheduler runs between the thread's turns */
    p.ready = 1;
}

static const int ROUNDS = 16; /* probes of each thread, 10 ms apart */

/* The barriers the block's threads met at more than once each, and met again while the
   probes ran (`before`: their counts as probing began), at most four: threads that keep
   meeting there are in a loop around them, whichever of them runs now. A barrier only
   met before (a loop that ended, then a thread that spins) names no loop. */
static void barrier_lines(Line& l, const Worker* w, const long* before) {
    int found = 0;
    for (int k = 0; k < 4; ++k) {
        if (w->met_count[k] <= (long)w->n || w->met_count[k] <= before[k]) continue;
        l.str(found++ ? "," : " barriers=").num(w->met_line[k]);
    }
}

static unsigned long long linear_block(const GUint3& b) {
    return b.x + (unsigned long long)gridDim.x * (b.y + (unsigned long long)gridDim.y * b.z);
}

/* The kernel is stopped where it was: the first block in grid order that was still
   running (the same whatever pool thread ran it), its thread where every probe found the
   same one (a block of fibers takes turns), and every place the probes found it at, so
   that the parent names the loop by its first line and not by one moment in it. */
static void fire() {
    if (g_stopping.exchange(1)) return;
    int n = pool_size();
    Probe seen[ROUNDS][64];
    int threads = n + 1 < 64 ? n + 1 : 64;
    long met[64][4] = {};
    for (int i = 0; i + 1 < threads; ++i) {
        for (int k = 0; k < 4; ++k) met[i][k] = pool_worker(i)->met_count[k];
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 0; i < threads; ++i) g_probes[i].ready = 0;
        pthread_kill(g_main, SIGUSR2);
        for (int i = 0; i < n && i + 1 < threads; ++i) pthread_kill(pool_thread(i), SIGUSR2);
        struct timespec pause_ts = {0, 10 * 1000 * 1000};
        nanosleep(&pause_ts, nullptr);
        for (int i = 0; i < threads; ++i) seen[round][i] = g_probes[i];
    }
    Line l;
    l.str("timeout").kv("phase", g_wd_phase).kv("pass", current_pass);
    l.kv("ms", (long long)(g_wd_seconds * 1000));
    unsigned long long first = ~0ull;
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 1; i < threads; ++i) {
            const Probe& p = seen[round][i];
            if (p.ready && p.in_kernel && linear_block(p.block) < first) first = linear_block(p.block);
        }
    }
    const Probe* one = nullptr;
    int slot = 0;
    bool same_thread = true;
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 1; i < threads; ++i) {
            const Probe& p = seen[round][i];
            if (!p.ready || !p.in_kernel || linear_block(p.block) != first) continue;
            slot = i;
            if (one && (p.thread.x != one->thread.x || p.thread.y != one->thread.y ||
                        p.thread.z != one->thread.z)) {
                same_thread = false;
            }
            l.str(one ? "," : " pcs=").hex(p.pc);
            if (!one) one = &p;
        }
    }
    if (one) {
        barrier_lines(l, pool_worker(slot - 1), met[slot - 1]);
        l.kvhex("pc", one->pc);
        if (same_thread) l.kv3("thread", one->thread.x, one->thread.y, one->thread.z);
        l.kv3("block", one->block.x, one->block.y, one->block.z);
    } else {
        /* the main thread, loading: the first probe that found it in the module's code, not
           in a hook it calls (a module with load hooks spends much of a loop there) */
        for (int round = 0; round < ROUNDS; ++round) {
            if (!seen[round][0].ready || !seen[round][0].pc) continue;
            l.kvhex("pc", seen[round][0].pc);
            break;
        }
    }
    l.write();
    output_flush(FILE_PRINTF);
    _exit(EXIT_TIMEOUT);
}

static double cpu_seconds(clockid_t clock) {
    struct timespec ts = {0, 0};
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU time of the block pool thread `i` runs, since the watchdog first saw it
   there; 0 for a thread between blocks. */
static double block_seconds(int i) {
    Watch& seen = g_watch[i];
    const Worker* w = pool_worker(i);
    long block = __atomic_load_n(&w->block, __ATOMIC_RELAXED);
    if (!seen.clocked || !w->busy) {
        seen.block = -1;
        return 0;
    }
    double now = cpu_seconds(seen.clock);
    if (block != seen.block) {
        seen.block = block;
        seen.since = now;
    }
    return now - seen.since;
}

/* Whether the armed phase has used its budget (with g_wd_lock held). */
static bool spent() {
    std::chrono::duration<double> wall = std::chrono::steady_clock::now() - g_wd_start;
    if (wall.count() >= g_wd_seconds * WALL_FACTOR) return true;
    if ((cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - g_wd_cpu) / g_wd_cores >= g_wd_seconds) {
        return true;
    }
    bool over = false; /* every thread's block looked at, so each is seen from its start */
    for (int i = 0; i < pool_size() && i < 1024; ++i) over |= block_seconds(i) >= g_wd_seconds;
    return over;
}

static void* watchdog_main(void*) {
    std::unique_lock<std::mutex> hold(g_wd_lock);
    for (;;) {
        if (!g_wd_armed) {
            g_wd_cv.wait(hold);
            continue;
        }
        g_wd_cv.wait_for(hold, std::chrono::milliseconds(POLL_MS));
        if (g_wd_armed && spent()) fire();
    }
    return nullptr;
}

void watchdog_start() {
    g_main = pthread_self();
    pthread_t t;
    pthread_create(&t, nullptr, watchdog_main, nullptr);
}

void watchdog_arm(double seconds, const char* phase, int cores) {
    std::lock_guard<std::mutex> hold(g_wd_lock);
    g_wd_armed = true;
    g_wd_phase = phase;
    g_wd_seconds = seconds;
    g_wd_cores = cores < 1 ? 1 : cores;
    g_wd_start = std::chrono::steady_clock::now();
    g_wd_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < pool_size() && i < 1024; ++i) {
        g_watch[i].block = -1;
        g_watch[i].clocked = pthread_getcpuclockid(pool_thread(i), &g_watch[i].clock) == 0;
    }
    g_wd_cv.notify_all();
}

void watchdog_disarm() {
    std::lock_guard<std::mutex> hold(g_wd_lock);
    g_wd_armed = false;
    g_wd_cv.notify_all();
}

void signals_install() {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigaction(sig, &sa, nullptr);
    sa.sa_sigaction = on_probe;
    sigaction(SIGUSR2, &sa, nullptr);
    signal(SIGXFSZ, SIG_IGN); /* past the file size limit, writes fail instead */
    signal(SIGPIPE, SIG_IGN);
}

}  // namespace rt
