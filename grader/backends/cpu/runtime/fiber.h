/* Fibers: one per CUDA thread, switched by hand.

   x86-64 and aarch64 use a context switch written in assembly (fiber_x86_64.S,
   fiber_aarch64.S) that saves only the callee-saved registers and the stack pointer.
   Other machines, or a build with -DGRADER_FIBER_UCONTEXT, use ucontext(3), which is
   portable but makes a system call on every switch. */
#ifndef GRADER_FIBER_H
#define GRADER_FIBER_H

#include <stddef.h>

#if defined(GRADER_FIBER_UCONTEXT) || !(defined(__x86_64__) || defined(__aarch64__))
#define GRADER_USE_UCONTEXT 1
#include <ucontext.h>
#else
#define GRADER_USE_UCONTEXT 0
#endif

namespace rt {

struct Context {
    void* sp; /* where a switched-out context resumes; under ucontext, a bound below it */
#if GRADER_USE_UCONTEXT
    ucontext_t uc;
    void (*fn)(void*);
    void* arg;
#endif
};

/* Prepares `c` so that switching to it calls fn(arg) on the stack [lo, lo + size).
   fn must never return: a finished fiber switches away for good. */
void context_init(Context* c, void* lo, size_t size, void (*fn)(void*), void* arg);

/* Saves the running context in `from` and resumes `to`. */
void context_switch(Context* from, Context* to);

/* The stack pointer a switched-out `c` resumes at: what lies below it on its stack is
   not in use. Under ucontext, which keeps it where no portable call reads it, a bound
   below it (SWITCH_SLACK under the switching frame). */
void* context_sp(const Context* c);

/* "x86-64 assembly", "aarch64 assembly" or "ucontext". */
const char* context_kind();

}  // namespace rt

#endif
