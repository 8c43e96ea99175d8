"""<cmath>'s mathematical special functions (C++17's std::beta, std::cyl_bessel_i and the
rest, in libstdc++'s bits/specfun.h). None is a device function, yet every compile that
declares them pays for them: nvcc's front end parses them (a fifth of an nvcc -ptx), and
g++ instantiates their templates at the end of every file. So both compilers of a module
go without them, unless its text names one."""

from __future__ import annotations

import re

from grader.model import lexer

# Each function's name and libstdc++'s extensions', their header and macros; a file that
# pastes tokens (##) may build any of those names.
_SPECIAL = re.compile(
    r"\b(?:(?:assoc_laguerre|assoc_legendre|beta|comp_ellint_[123]|cyl_bessel_[ijk]"
    r"|cyl_neumann|ellint_[123]|expint|hermite|laguerre|legendre|riemann_zeta|sph_bessel"
    r"|sph_legendre|sph_neumann|airy_ai|airy_bi|conf_hyperg|hyperg)[fl]?|specfun"
    r"|_GLIBCXX_USE_STD_SPEC_FUNCS|__STDCPP_MATH_SPEC_FUNCS__"
    r"|__cpp_lib_math_special_functions)\b|##"
)


def named(text: str) -> bool:
    """Whether a module's `text` may use a special function, so that it is compiled with
    them: where it names one (a variable called beta too), in its code or its directives,
    outside comments and strings."""
    return _SPECIAL.search(lexer.unquoted(text)) is not None
