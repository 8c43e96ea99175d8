/* The pool of OS threads that run blocks. Each thread pulls block indices from one
   atomic counter (scheduler.cpp's run_blocks), so blocks spread over all cores; a block
   never leaves the thread that started it, parked or not, which is what lets static
   __shared__ be thread_local. The threads exist before the sandbox is applied, since the
   seccomp filter forbids creating new ones. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "scheduler.h"

namespace rt {

static std::vector<Worker*> g_workers;
static std::mutex g_lock;
static std::condition_variable g_start, g_done;
static long g_generation = 0;
static int g_remaining = 0;
static int g_answered = 0; /* threads of pool_start that know whether they are ready */

static Launch* g_shape = nullptr; /* what pool_start prepares each thread for */

static void* worker_main(void* arg) {
    Worker* w = static_cast<Worker*>(arg);
    tw = w;
    signals_thread_init();
    /* Dynamic shared memory, registered so that a fault in it is reported as an access
       past the end of the extern __shared__ array. */
    w->ready = area_create(&w->dyn, DYN_SHARED_CAPACITY, true, 16, 0);
    if (w->ready) {
        Region r{w->dyn.map, w->dyn.map + w->dyn.map_len, w->dyn.lo, w->dyn.lo_len,
                 REGION_SHARED, w->id};
        regions_add(r);
        /* Its fiber stacks, and a first allocation, so that this thread's malloc arena
           is made now: both count before the memory limit is set, not against the
           kernel. A thread without them leaves the pool. */
        w->ready = worker_prepare(*w, *g_shape);
    }
    {
        std::lock_guard<std::mutex> hold(g_lock);
        ++g_answered;
        g_done.notify_all();
    }
    if (!w->ready) return nullptr;
    long seen = 0;
    for (;;) {
        Launch* L;
        {
            std::unique_lock<std::mutex> hold(g_lock);
            g_start.wait(hold, [&] { return g_generation != seen; });
            seen = g_generation;
            L = g_launch;
        }
        /* a thread of the pool that cannot get its fiber stacks: the runner's failure */
        if (!worker_prepare(*w, *L)) fail("stacks", "no memory for fiber stacks", EXIT_FAULT);
        run_blocks(*w, *L);
        L->running.fetch_sub(1);
        std::lock_guard<std::mutex> hold(g_lock);
        if (--g_remaining == 0) g_done.notify_all();
    }
    return nullptr;
}

int pool_start(int jobs, Launch& shape) {
    g_shape = &shape;
    std::vector<Worker*> started;
    for (int i = 0; i < jobs; ++i) {
        Worker* w = new Worker();
        w->id = i;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1u << 20);
        if (pthread_create(&w->thread, &attr, worker_main, w) == 0) started.push_back(w);
        pthread_attr_destroy(&attr);
    }
    /* Wait until every thread has its shared memory area and stacks, or gave up. */
    std::unique_lock<std::mutex> hold(g_lock);
    g_done.wait(hold, [&] { return g_answered == (int)started.size(); });
    for (Worker* w : started) {
        if (w->ready) g_workers.push_back(w);
    }
    for (size_t i = 0; i < g_workers.size(); ++i) g_workers[i]->id = (int)i;
    return (int)g_workers.size();
}

int pool_size() { return (int)g_workers.size(); }

pthread_t pool_thread(int i) { return g_workers[(size_t)i]->thread; }

Worker* pool_worker(int i) { return g_workers[(size_t)i]; }

void pool_run(Launch* launch) {
    /* Chunks small enough that every thread gets several, so uneven blocks even out. */
    long per_thread = launch->nblocks / (8 * (long)(g_workers.size() ? g_workers.size() : 1));
    launch->chunk = per_thread < 1 ? 1 : (per_thread > 64 ? 64 : per_thread);
    if (launch->serial) launch->chunk = launch->nblocks; /* one thread takes every block */
    std::unique_lock<std::mutex> hold(g_lock);
    g_launch = launch;
    g_remaining = (int)g_workers.size();
    launch->running.store(g_remaining);
    launch->stalled.store(0);
    ++g_generation;
    g_start.notify_all();
    g_done.wait(hold, [] { return g_remaining == 0; });
}

}  // namespace rt
