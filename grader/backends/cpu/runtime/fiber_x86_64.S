/* void grader_fiber_switch(void **save_sp, void *load_sp)
   Pushes the System V callee-saved registers, stores the stack pointer in *save_sp,
   loads load_sp and pops the registers the other fiber pushed. The floating-point control
   words are not switched: kernels do not change rounding modes. */
#ifdef __APPLE__
#define SYM(x) _##x
#else
#define SYM(x) x
#endif
    .text
    .globl SYM(grader_fiber_switch)
    .globl SYM(grader_fiber_entry)
#ifndef __APPLE__
    .type grader_fiber_switch, @function
    .type grader_fiber_entry, @function
#endif
    .p2align 4
SYM(grader_fiber_switch):
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret

/* First code a new fiber runs: fn (in r13) is called with arg (in r12). fn never
   returns. */
    .p2align 4
SYM(grader_fiber_entry):
    movq %r12, %rdi
    callq *%r13
    ud2
#ifndef __APPLE__
    .section .note.GNU-stack,"",@progbits
#endif
