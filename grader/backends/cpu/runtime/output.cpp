/* Device printf, assert and __trap, and the seal on the records that narrow a race, with
   the elements their kinds saw stored twice.

   printf output goes into one buffer capped at the job's output limit (the rest is only
   counted), so a kernel that prints from every thread cannot fill the disk or the
   parent's memory. Only the first pass prints; the second pass repeats the same launch.
   assert() in the student's module calls __assert_fail, which this executable exports:
   the dynamic linker binds the module to it before the C library's, so the failure is
   reported with the thread, the block and the assert's own line. */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>

#include "rt.h"

namespace rt {

static char* g_buf = nullptr;
static size_t g_cap = 0;
static std::atomic<size_t> g_used{0};
static std::atomic<size_t> g_total{0};
static std::atomic<bool> g_on{true};
/* static: the module cannot reach them by name (rt.h's seal) */
static std::string g_seal_token;
static long long g_narrowing = 0; /* records that narrow a race, written by the runtime */
/* What an element stored twice held between its stores, as bits, sorted. An element
   every thread of a block stores holds as many values as the block has threads; past
   SEEN_TOTAL values in all, or wider than 8 bytes, an element is left unexplained. */
constexpr size_t SEEN_TOTAL = (size_t)1 << 22;
static size_t g_seen_total = 0;
struct Seen {
    std::vector<uint64_t> values;
    bool threads = false; /* a waw of pass 0, whose last store is pass 0's own value */
    bool updates = false; /* a lost update: the sum depends on the order, not one store */
    bool overflow = false;
};
static std::vector<std::unordered_map<size_t, Seen>> g_twice; /* per buffer ordinal */

void output_init(size_t limit) {
    g_cap = limit;
    g_buf = static_cast<char*>(malloc(limit ? limit : 1));
}

void output_enable(bool on) { g_on.store(on); }

size_t output_total() { return g_total.load(); }

void seal_prepare(const std::string& token) { g_seal_token = token; }

void write_narrowing(Line& l) {
    ++g_narrowing;
    l.write();
}

static uint64_t bits_of(const void* value, size_t width) {
    uint64_t bits = 0;
    memcpy(&bits, value, width);
    return bits;
}

static bool holds(const Seen& s, uint64_t bits) {
    return std::binary_search(s.values.begin(), s.values.end(), bits);
}

void twice_note(Twice kind, int index, size_t element, const void* value, size_t width) {
    if (index < 0) return;
    if ((size_t)index >= g_twice.size()) g_twice.resize((size_t)index + 1);
    Seen& s = g_twice[(size_t)index][element];
    s.threads |= kind == Twice::THREADS;
    s.updates |= kind == Twice::UPDATES;
    if (kind == Twice::UPDATES || s.overflow) return;
    if (width > sizeof(uint64_t) || g_seen_total == SEEN_TOTAL) {
        s.overflow = true;
        return;
    }
    uint64_t bits = bits_of(value, width);
    auto at = std::lower_bound(s.values.begin(), s.values.end(), bits);
    if (at != s.values.end() && *at == bits) return;
    s.values.insert(at, bits);
    ++g_seen_total;
}

bool twice_explains(int index, size_t element, const void* first, const void* second,
                    size_t width) {
    if ((size_t)index >= g_twice.size()) return false;
    const std::unordered_map<size_t, Seen>& seen = g_twice[(size_t)index];
    auto found = seen.find(element);
    if (found == seen.end()) return false;
    const Seen& s = found->second;
    if (s.updates) return true;
    if (s.overflow || width > sizeof(uint64_t)) return false;
    return (s.threads || holds(s, bits_of(first, width))) && holds(s, bits_of(second, width));
}

bool twice_any() { return !g_twice.empty(); }

void seal_write() {
    Line().str("seal").kv("token", g_seal_token.c_str()).kv("count", g_narrowing).write();
}

static size_t kept() {
    size_t used = g_used.load();
    return used < g_cap ? used : g_cap;
}

void output_flush_fd(int fd) {
    size_t n = kept(), off = 0;
    while (off < n) {
        ssize_t w = ::write(fd, g_buf + off, n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
}

void output_flush(const char* path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    output_flush_fd(fd);
    close(fd);
    Line().str("printf").kv("total", (long long)g_total.load()).kv("kept", (long long)kept()).write();
}

static void append(const char* text, size_t n) {
    g_total.fetch_add(n);
    size_t at = g_used.fetch_add(n);
    if (at >= g_cap) return;
    size_t take = n < g_cap - at ? n : g_cap - at;
    memcpy(g_buf + at, text, take);
}

/* A record for a failure that stops the kernel, then the end of the process. */
[[noreturn]] static void stop(const char* kind, int line, const char* text) {
    Line l;
    l.str("fault").kv("kind", kind).kv("pass", current_pass).kv("line", line);
    Snapshot s{};
    if (current_snapshot(&s)) {
        l.kv3("thread", s.thread.x, s.thread.y, s.thread.z);
        l.kv3("block", s.block.x, s.block.y, s.block.z);
    } else {
        l.kv("where", "init");
    }
    l.kvbytes("text", text ? text : "");
    l.write();
    int fd = open(FILE_PRINTF, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        output_flush_fd(fd);
        close(fd);
    }
    Line().str("printf").kv("total", (long long)g_total.load()).kv("kept", (long long)kept()).write();
    _exit(EXIT_FAULT);
}

}  // namespace rt

using namespace rt;

extern "C" __attribute__((visibility("default"))) int grader_device_printf(const char* format,
                                                                           ...) {
    char local[512];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(local, sizeof(local), format, ap);
    va_end(ap);
    if (n < 0 || !g_on.load(std::memory_order_relaxed)) return n;
    if ((size_t)n < sizeof(local)) {
        append(local, (size_t)n);
        return n;
    }
    char* big = static_cast<char*>(malloc((size_t)n + 1));
    if (!big) {
        append(local, sizeof(local) - 1);
        return n;
    }
    va_start(ap, format);
    vsnprintf(big, (size_t)n + 1, format, ap);
    va_end(ap);
    append(big, (size_t)n);
    free(big);
    return n;
}

extern "C" __attribute__((visibility("default"))) void __assert_fail(
    const char* expr, const char* file, unsigned int line, const char* func) noexcept {
    (void)file;
    (void)func;
    stop("assert", (int)line, expr);
}

extern "C" __attribute__((visibility("default"))) void grader_rt_trap(int line) {
    stop("trap", line, "");
}

extern "C" __attribute__((visibility("default"))) unsigned long long grader_rt_clock64(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
