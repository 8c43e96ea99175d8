/* The student's module: loading it, finding its code and thread_local block, mapping a
   program counter back into it, and putting its writable data back as it was after
   loading, so that the second pass starts from the same __device__ and __constant__
   values as the first. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "rt.h"

namespace rt {

Module module;

struct Span {
    uintptr_t lo, hi;
};
static std::vector<Span> g_writable;
static Kept g_loaded; /* the writable data as loading left it */

static int find_phdrs(struct dl_phdr_info* info, size_t, void* data) {
    uintptr_t want = *static_cast<uintptr_t*>(data);
    if ((uintptr_t)info->dlpi_addr != want) return 0;
    uintptr_t relro_lo = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& p = info->dlpi_phdr[i];
        if (p.p_type == PT_GNU_RELRO) {
            relro_lo = info->dlpi_addr + p.p_vaddr;
            relro_hi = relro_lo + p.p_memsz;
        }
    }
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& p = info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p.p_vaddr, hi = lo + p.p_memsz;
        if (p.p_type == PT_TLS) module.tls_size = p.p_memsz;
        if (p.p_type != PT_LOAD) continue;
        if (p.p_flags & PF_X) {
            if (!module.text_lo || lo < module.text_lo) module.text_lo = lo;
            if (hi > module.text_hi) module.text_hi = hi;
        }
        if (p.p_flags & PF_W) {
            /* RELRO pages become read-only after relocation; the rest stays writable. */
            if (relro_hi > lo && relro_lo < hi) {
                uintptr_t page = 4096;
                uintptr_t after = (relro_hi + page - 1) & ~(page - 1);
                if (after > lo) lo = after;
            }
            if (hi > lo) g_writable.push_back(Span{lo, hi});
        }
    }
    return 1;
}

static char g_path[4096];

/* The libraries the module needs (the parent resolved them as the dynamic loader would),
   loaded while the sandbox still lets the runner read them: once it closes, loading the
   module finds each one already loaded by its name. */
bool module_preload(const std::vector<std::string>& paths, std::string* error) {
    for (const std::string& path : paths) {
        if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            const char* e = dlerror();
            *error = e ? e : path + ": dlopen failed";
            return false;
        }
    }
    return true;
}

bool module_load(const char* path, std::string* error) {
    strncpy(g_path, path, sizeof(g_path) - 1);
    module.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module.handle) {
        const char* e = dlerror();
        *error = e ? e : "dlopen failed";
        return false;
    }
    struct link_map* map = nullptr;
    if (dlinfo(module.handle, RTLD_DI_LINKMAP, &map) == 0 && map) module.base = map->l_addr;
    uintptr_t want = module.base;
    dl_iterate_phdr(find_phdrs, &want);
    return true;
}

void module_snapshot() {
    g_loaded.clear();
    for (const Span& s : g_writable) g_loaded.keep(reinterpret_cast<char*>(s.lo), s.hi - s.lo);
}

void module_restore() { g_loaded.put_back(); }

/* While dlopen runs the module's global constructors, module_load has not found its code
   yet, but the dynamic linker's list of loaded objects already holds the module, and its
   first segment maps its ELF header at its base: its program headers give the code's
   bounds (a signal handler may not call dl_iterate_phdr, which takes the loader's lock). */
static bool loading_text(uintptr_t* lo, uintptr_t* hi, uintptr_t* base) {
    for (const struct link_map* m = _r_debug.r_map; m; m = m->l_next) {
        if (!m->l_name || strcmp(m->l_name, g_path) != 0) continue;
        const auto* e = reinterpret_cast<const ElfW(Ehdr)*>(m->l_addr);
        if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0) return false;
        const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(m->l_addr + e->e_phoff);
        for (int i = 0; i < e->e_phnum; ++i) {
            if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X)) continue;
            uintptr_t a = m->l_addr + ph[i].p_vaddr, b = a + ph[i].p_memsz;
            if (!*lo || a < *lo) *lo = a;
            if (b > *hi) *hi = b;
        }
        *base = m->l_addr;
        return *lo != 0;
    }
    return false;
}

uintptr_t module_pc(uintptr_t pc, uintptr_t sp, uintptr_t stack_hi) {
    uintptr_t lo = module.text_lo, hi = module.text_hi, base = module.base;
    if (!lo && !(g_path[0] && loading_text(&lo, &hi, &base))) return 0;
    if (pc >= lo && pc < hi) return pc - base;
    /* The fault is in a library function the kernel called (memcpy, printf), or the
       probe found a hook the kernel called (a loop that loads a flag): the nearest
       return address into the module on the stack names the kernel's line. */
    if (!sp) return 0;
    uintptr_t end = sp + 64 * 1024;
    if (stack_hi && stack_hi < end) end = stack_hi;
    uintptr_t p = (sp + 7) & ~(uintptr_t)7;
    /* A prologue that overflowed a fiber's stack (a profiled run's load hook) leaves sp
       in the guard page, which no read may touch: the walk starts above it. */
    while (p + 8 <= end && stack_guard_hit(p)) p += 8;
    for (; p + 8 <= end; p += 8) {
        uintptr_t v = *reinterpret_cast<uintptr_t*>(p);
        if (v >= lo && v < hi) return v - 1 - base;
    }
    return 0;
}

}  // namespace rt
