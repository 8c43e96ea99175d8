/* Memory with guard pages. Every buffer sits in its own reservation: 16 MiB of
   inaccessible pages on each side and the buffer in between, placed either so that its
   last byte touches the trailing guard (reads and writes past the end fault at once) or
   so that its first byte follows the leading guard (accesses before the start fault).
   The fault handler maps a faulting address back to the buffer through `regions`, and
   to a static __shared__ array through the faulting thread's own slots. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

#include "scheduler.h"

namespace rt {

static size_t page_size() {
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

void fill_words(void* p, size_t bytes, uint32_t word) {
    uint32_t* w = static_cast<uint32_t*>(p);
    size_t n = bytes / 4;
    for (size_t i = 0; i < n; ++i) w[i] = word;
    memcpy(w + n, &word, bytes % 4);
}

bool area_create(Area* a, size_t bytes, bool end_aligned, size_t align, uint32_t fill) {
    size_t page = page_size();
    size_t span = (bytes + align - 1) / align * align;
    size_t pages = (span + page - 1) / page * page;
    a->map_len = 2 * GUARD_BYTES + pages;
    void* m = mmap(nullptr, a->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        a->map = nullptr;
        return false;
    }
    a->map = static_cast<char*>(m);
    a->lo = a->map + GUARD_BYTES;
    a->lo_len = pages;
    if (pages && mprotect(a->lo, pages, PROT_READ | PROT_WRITE) != 0) {
        munmap(a->map, a->map_len);
        a->map = nullptr;
        return false;
    }
    a->bytes = bytes;
    /* An end-aligned area keeps `align` for its start, so up to align-1 bytes of slack
       may follow the data; they hold the fill pattern and are checked afterwards. */
    a->data = end_aligned ? a->lo + pages - span : a->lo;
    if (pages) fill_words(a->lo, pages, fill);
    return true;
}

void area_destroy(Area* a) {
    if (a->map) munmap(a->map, a->map_len);
    a->map = nullptr;
}

/* The table is read by the fault handler. Pool threads add their dynamic shared memory
   once (`regions_add`, kept first); the main thread replaces the buffers before each pass
   while no kernel runs (`regions_set`). */
static Region g_regions[4096];
static std::atomic<int> g_nregions{0};
static int g_nfixed = 0;
static std::mutex g_regions_lock;

void regions_set(const std::vector<Region>& r) {
    std::lock_guard<std::mutex> hold(g_regions_lock);
    int n = g_nfixed;
    for (const Region& x : r) {
        if (n < 4096) g_regions[n++] = x;
    }
    g_nregions.store(n);
}

void regions_add(const Region& r) {
    std::lock_guard<std::mutex> hold(g_regions_lock);
    if (g_nfixed < 4096) {
        g_regions[g_nfixed++] = r;
        g_nregions.store(g_nfixed);
    }
}

void regions_clear() {
    std::lock_guard<std::mutex> hold(g_regions_lock);
    g_nregions.store(g_nfixed);
}

const Region* region_find(uintptr_t addr) {
    int n = g_nregions.load();
    for (int i = 0; i < n; ++i) {
        const Region& r = g_regions[i];
        if (addr >= (uintptr_t)r.lo && addr < (uintptr_t)r.hi) return &r;
    }
    return static_shared_region(addr);
}

void region_describe(const Region& r, uintptr_t addr, Line& l) {
    static const char* const kinds[] = {"", "buffer", "shared", "stack", "static_shared"};
    l.kv("kind", kinds[r.kind >= 0 && r.kind <= REGION_STATIC ? r.kind : 0]);
    l.kv("index", r.index);
    l.kv("offset", (long long)((intptr_t)addr - (intptr_t)r.data));
    size_t bytes = r.kind == REGION_SHARED ? (g_launch ? g_launch->shared_bytes : 0) : r.bytes;
    l.kv("bytes", (long long)bytes);
    if (r.kind != REGION_STATIC || !r.decl) return;
    const SharedDecl& d = *r.decl;
    l.kvbytes("name", d.name ? d.name : "");
    l.kv("element", d.element).kv("decl_line", d.line).str(" dims=");
    for (int i = 0; i < d.rank && i < 4; ++i) l.str(i ? "," : "").num(d.extent[i]);
    if (d.rank <= 0) l.str("-");
}

/* -- which block wrote each output element ----------------------------------------------- */
struct Watched {
    const unsigned char* data;
    size_t width;                      /* bytes per element */
    std::vector<unsigned char> before; /* the output as it was before the current block */
    std::vector<long> owner;           /* the last block that changed each element, or -1 */
    std::vector<uint8_t> shared;       /* changed by more than one block */
    int index;
};
static std::vector<Watched> g_watched;
static GUint3 g_grid{1, 1, 1};
static long long g_overlaps = 0;
static Line g_first; /* the first element a second block changed, as a record */

void writers_begin(const std::vector<Tracked>& outputs, GUint3 grid) {
    g_watched.clear();
    g_grid = grid;
    g_overlaps = 0;
    g_first = Line();
    for (const Tracked& t : outputs) {
        Watched w;
        w.data = reinterpret_cast<const unsigned char*>(t.data);
        w.width = t.width;
        w.before.assign(w.data, w.data + t.bytes);
        w.owner.assign(t.bytes / t.width, -1);
        w.shared.assign(t.bytes / t.width, 0);
        w.index = t.index;
        g_watched.push_back(std::move(w));
    }
}

static void block_xyz(Line& l, const char* key, long b) {
    l.kv3(key, (unsigned)(b % g_grid.x), (unsigned)((b / g_grid.x) % g_grid.y),
          (unsigned)(b / ((long)g_grid.x * g_grid.y)));
}

/* An element's bytes as a number (its bits, little endian). */
static unsigned long long element_bits(const unsigned char* p, size_t width) {
    unsigned long long bits = 0;
    memcpy(&bits, p, width);
    return bits;
}

void writers_after_block(long block) {
    const size_t chunk = 64; /* bytes */
    for (Watched& w : g_watched) {
        size_t n = w.before.size(), width = w.width;
        for (size_t lo = 0; lo < n; lo += chunk) {
            size_t len = n - lo < chunk ? n - lo : chunk;
            if (memcmp(w.data + lo, w.before.data() + lo, len) == 0) continue;
            for (size_t at = lo; at < lo + len; at += width) {
                if (memcmp(w.data + at, w.before.data() + at, width) == 0) continue;
                size_t e = at / width;
                long prev = w.owner[e];
                if (prev >= 0 && prev != block && !w.shared[e]) {
                    w.shared[e] = 1;
                    twice_note(Twice::BLOCKS, w.index, e, w.before.data() + at, width);
                    if (g_overlaps++ == 0) {
                        g_first.str("overlap").kv("index", w.index).kv("element", (long long)e);
                        block_xyz(g_first, "first", prev);
                        block_xyz(g_first, "second", block);
                        g_first.kvhex("before", element_bits(w.before.data() + at, width));
                        g_first.kvhex("after", element_bits(w.data + at, width));
                        g_first.kvhex("pc", stores_pc(w.index, e));
                    }
                }
                if (w.shared[e]) twice_note(Twice::BLOCKS, w.index, e, w.data + at, width);
                w.owner[e] = block;
                memcpy(w.before.data() + at, w.data + at, width);
            }
        }
    }
}

void writers_end() {
    if (g_overlaps) {
        g_first.kv("count", g_overlaps);
        write_narrowing(g_first);
    }
    g_watched.clear();
}

}  // namespace rt
