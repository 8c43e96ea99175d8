#include "fiber.h"

#include <stdint.h>

namespace rt {

#if GRADER_USE_UCONTEXT

/* makecontext passes int arguments only, so the Context pointer travels in two halves. */
static void trampoline(unsigned int lo, unsigned int hi) {
    uintptr_t bits = ((uintptr_t)hi << 16 << 16) | (uintptr_t)lo;
    Context* c = reinterpret_cast<Context*>(bits);
    c->fn(c->arg);
}

/* Bytes below a local of context_switch that swapcontext's own frame may use: it saves
   the registers in the ucontext, not on the stack, so a return address and a frame of a
   few words. A bound below the stack's low end is read as the whole stack
   (each_used_stack). */
constexpr uintptr_t SWITCH_SLACK = 1024;

static void* below(const void* at) {
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(at) - SWITCH_SLACK);
}

void context_init(Context* c, void* lo, size_t size, void (*fn)(void*), void* arg) {
    getcontext(&c->uc);
    c->sp = below(static_cast<char*>(lo) + size); /* makecontext's frame is at the top */
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    c->fn = fn;
    c->arg = arg;
    uintptr_t bits = reinterpret_cast<uintptr_t>(c);
    makecontext(&c->uc, reinterpret_cast<void (*)()>(trampoline), 2,
                (unsigned int)(bits & 0xffffffffu), (unsigned int)(bits >> 16 >> 16));
}

void context_switch(Context* from, Context* to) {
    char here;
    from->sp = below(&here);
    swapcontext(&from->uc, &to->uc);
}

const char* context_kind() { return "ucontext"; }

#else

extern "C" void grader_fiber_switch(void** save_sp, void* load_sp);
extern "C" void grader_fiber_entry();

#if defined(__x86_64__)
/* The new stack holds what grader_fiber_switch pops: r15 r14 r13 r12 rbx rbp, then the
   return address. r13 carries fn and r12 arg into grader_fiber_entry. */
void context_init(Context* c, void* lo, size_t size, void (*fn)(void*), void* arg) {
    uintptr_t top = ((uintptr_t)lo + size - 64) & ~(uintptr_t)15;
    void** sp = reinterpret_cast<void**>(top - 7 * sizeof(void*));
    sp[0] = nullptr;                                          /* r15 */
    sp[1] = nullptr;                                          /* r14 */
    sp[2] = reinterpret_cast<void*>(fn);                      /* r13 */
    sp[3] = arg;                                              /* r12 */
    sp[4] = nullptr;                                          /* rbx */
    sp[5] = nullptr;                                          /* rbp */
    sp[6] = reinterpret_cast<void*>(&grader_fiber_entry);     /* return address */
    c->sp = sp;
}
const char* context_kind() { return "x86-64 assembly"; }
#else
/* The new stack holds the 176-byte frame grader_fiber_switch restores: x19..x30, then
   d8..d15. x19 carries arg, x20 fn, and x30 (the link register) grader_fiber_entry. */
void context_init(Context* c, void* lo, size_t size, void (*fn)(void*), void* arg) {
    uintptr_t top = ((uintptr_t)lo + size - 64) & ~(uintptr_t)15;
    void** sp = reinterpret_cast<void**>(top - 176);
    for (int i = 0; i < 22; ++i) sp[i] = nullptr;
    sp[0] = arg;                                              /* x19 */
    sp[1] = reinterpret_cast<void*>(fn);                      /* x20 */
    sp[11] = reinterpret_cast<void*>(&grader_fiber_entry);    /* x30 */
    c->sp = sp;
}
const char* context_kind() { return "aarch64 assembly"; }
#endif

void context_switch(Context* from, Context* to) { grader_fiber_switch(&from->sp, to->sp); }

#endif

void* context_sp(const Context* c) { return c->sp; }

}  // namespace rt
