/* The grader's registration footer, appended after the submission (grader/backends/cpu/
   scan.py), includes this first: its macros are defined only after the submission's last
   line, so the submission sees none of them. For each kernel K they define, with C
   linkage:
     grader_sig_K   constant data: parameter count and type codes, __launch_bounds__
     grader_loop_K  runs every thread of one block as a plain loop
     grader_call_K  runs one thread (inside a fiber)
   and for each __constant__ or __device__ variable V:
     grader_var_V   constant data: size and memory space
     grader_addr_V  returns its address
   The grader reads the constant data straight from the ELF file, so describing a module
   never runs student code. */
#pragma once

#define __GRADER_EXPORT extern "C" __attribute__((used, visibility("default")))
#define __GRADER_KERNEL(K, BOUNDS)                                                           \
    __GRADER_EXPORT const auto grader_sig_##K = ::grader::make_sig(&K, (int)(BOUNDS));       \
    __GRADER_EXPORT void grader_call_##K(void** a) { ::grader::kernel<decltype(&K), &K>::call(a); } \
    __GRADER_EXPORT void grader_loop_##K(void** a, const grader_loop_ctl* c) {               \
        ::grader::kernel<decltype(&K), &K>::loop(a, c);                                      \
    }
#define __GRADER_VARIABLE(NAME, QUALIFIED, SPACE)                                            \
    __GRADER_EXPORT const ::grader::var_info grader_var_##NAME =                             \
        ::grader::make_var<decltype(QUALIFIED)>(SPACE);                                      \
    __GRADER_EXPORT void* grader_addr_##NAME(void) {                                         \
        return const_cast<void*>(static_cast<const volatile void*>(&QUALIFIED));             \
    }
/* How many slots the rewritten __shared__ declarations use. */
#define __GRADER_SHARED_SLOTS(N) __GRADER_EXPORT const int grader_shared_slots = (N);
/* A thread_local the runner touches to find this module's block of static shared memory. */
#define __GRADER_TLS_ANCHOR                                                                  \
    __GRADER_EXPORT void* grader_tls_anchor(void) {                                          \
        static thread_local char anchor;                                                     \
        return &anchor;                                                                      \
    }
