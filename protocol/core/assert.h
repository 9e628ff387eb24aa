// Invariant checks. SLUICE_CHECK is always on (prints and aborts); SLUICE_ASSERT only in
// builds without NDEBUG. Both are for bugs, never for bad input (see STYLE.md section 4).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace sluice::detail {

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
    std::fprintf(stderr, "sluice: invariant violated: %s at %s:%d\n", expr, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace sluice::detail

#define SLUICE_CHECK(expr)                                               \
    do {                                                                 \
        if (!(expr)) [[unlikely]] {                                      \
            ::sluice::detail::check_failed(#expr, __FILE__, __LINE__);   \
        }                                                                \
    } while (false)

#ifdef NDEBUG
#define SLUICE_ASSERT(expr) \
    do {                    \
    } while (false)
#else
#define SLUICE_ASSERT(expr) SLUICE_CHECK(expr)
#endif
