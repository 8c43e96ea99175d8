/* The atomic operations of a census module built by g++ (shim.py). Its instrumentation
   (-fsanitize=thread's, without libtsan: these are its runtime) turns each atomic builtin
   into a call of __tsan_atomicN_OP, which does the operation here, atomically and in
   sequential consistency whatever order it names, after the hook that the module built
   with -fsanitize=kernel-address calls before it: an atomic load is a load (counts.cpp),
   and a store or read-modify-write a store (stores.cpp). The shim's atomic functions name
   their target first (__grader_rt_atomic), so that a profile counts them as atomics and
   their own store as none (profile.cpp), as in every other build; a read-modify-write
   that none named (a GNU builtin the kernel calls itself, where no nvcc judges the file)
   is named here, so that its read of the target is an atomic's, not hidden in a store.
   gcc names no 128-bit operation but through libatomic, which no module links. */
#include "rt.h"

#define GRADER_HOOK extern "C" __attribute__((visibility("default")))
#define GRADER_RETURN (uintptr_t) __builtin_return_address(0)

/* A read-modify-write of `a`: an atomic, named here where no atomic function of the
   shim named it, and its own store. */
static inline void updated(const volatile void* a, size_t bytes, uintptr_t ret) {
    if (!rt::announced((const void*)a)) rt::on_atomic((const void*)a, ret);
    rt::on_store((uintptr_t)a, bytes, ret);
}
#define GRADER_UPDATED(a) updated(a, sizeof(*(a)), GRADER_RETURN)

#define GRADER_FETCH(bits, T, op)                                               \
    GRADER_HOOK T __tsan_atomic##bits##_##op(volatile T* a, T v, int) {         \
        GRADER_UPDATED(a);                                                      \
        return __atomic_##op(a, v, __ATOMIC_SEQ_CST);                           \
    }
#define GRADER_ATOMICS(bits, T)                                                              \
    GRADER_HOOK T __tsan_atomic##bits##_load(const volatile T* a, int) {                     \
        rt::on_load((uintptr_t)a, sizeof(T), GRADER_RETURN);                                 \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                         \
    }                                                                                        \
    GRADER_HOOK void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                  \
        rt::on_store((uintptr_t)a, sizeof(T), GRADER_RETURN);                                \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                        \
    GRADER_HOOK T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                  \
        GRADER_UPDATED(a);                                                                   \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                  \
    }                                                                                        \
    GRADER_FETCH(bits, T, fetch_add)                                                         \
    GRADER_FETCH(bits, T, fetch_sub)                                                         \
    GRADER_FETCH(bits, T, fetch_and)                                                         \
    GRADER_FETCH(bits, T, fetch_or)                                                          \
    GRADER_FETCH(bits, T, fetch_xor)                                                         \
    GRADER_FETCH(bits, T, fetch_nand)                                                        \
    GRADER_HOOK int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, \
                                                                  T desired, int, int) {     \
        GRADER_UPDATED(a);                                                                   \
        return __atomic_compare_exchange_n(a, expected, desired, false, __ATOMIC_SEQ_CST,    \
                                           __ATOMIC_SEQ_CST);                                \
    }                                                                                        \
    GRADER_HOOK int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected,   \
                                                                T desired, int, int) {       \
        GRADER_UPDATED(a);                                                                   \
        return __atomic_compare_exchange_n(a, expected, desired, true, __ATOMIC_SEQ_CST,     \
                                           __ATOMIC_SEQ_CST);                                \
    }

GRADER_ATOMICS(8, uint8_t)
GRADER_ATOMICS(16, uint16_t)
GRADER_ATOMICS(32, uint32_t)
GRADER_ATOMICS(64, uint64_t)

GRADER_HOOK void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
GRADER_HOOK void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
