// The generator's words for the host (grader.backends.generator): a whole buffer in
// one call, which numpy takes some twenty passes and as many holds of the interpreter's
// lock to make.
#define __host__
#define __device__
#include "generator.h"

// Each machine's widest vector unit, chosen when the library loads: the build cache may be
// shared by machines of different CPUs.
extern "C" __attribute__((target_clones("avx512f", "avx2", "default"))) void drawn_words(
    unsigned* out, unsigned long long count, unsigned k0, unsigned k1) {
    for (unsigned long long i = 0; i < count; ++i) out[i] = drawn_word((unsigned)i, k0, k1);
}
