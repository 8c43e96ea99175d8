/* The shim as a module is compiled against it, and precompiled: grader_cuda.h without
   <cmath>'s mathematical special functions (C++17's std::beta, std::cyl_bessel_i and the
   rest, in libstdc++'s bits/specfun.h). None is a device function, and g++ instantiates
   their templates at the end of every file that declares them, even from a precompiled
   header: 0.07 of a module's 0.3-0.6 CPU-s. A file that names one
   (grader/toolchain/special_functions.py) is compiled against grader_cuda.h itself. */
#pragma once
#include <cstddef> /* libstdc++'s configuration, which <cmath> reads */
#undef _GLIBCXX_USE_STD_SPEC_FUNCS
#include "grader_cuda.h"
