/* void grader_fiber_switch(void **save_sp, void *load_sp)
   Saves the AAPCS64 callee-saved registers (x19-x30, d8-d15) in a 176-byte frame on the
   current stack, stores the stack pointer in *save_sp, then restores the frame found at
   load_sp and returns through its x30. */
#ifdef __APPLE__
#define SYM(x) _##x
#else
#define SYM(x) x
#endif
    .text
    .globl SYM(grader_fiber_switch)
    .globl SYM(grader_fiber_entry)
    .p2align 4
SYM(grader_fiber_switch):
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    add sp, sp, #176
    ret

/* First code a new fiber runs: fn (in x20) is called with arg (in x19). */
    .p2align 4
SYM(grader_fiber_entry):
    mov x0, x19
    blr x20
    brk #0
#ifndef __APPLE__
    .section .note.GNU-stack,"",@progbits
#endif
