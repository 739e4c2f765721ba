// The call-site type of respool's API (leak reports name the acquirer): std::source_location where the
// standard library provides it, else a stand-in with the same interface (clang 14 with libstdc++ 12,
// which the fuzzers are built with, has no std::source_location).
#pragma once

#if __has_include(<source_location>)
#include <source_location>
#endif

namespace respool {

#if defined(__cpp_lib_source_location)
using source_location = std::source_location;
#else
class source_location {
public:
    static constexpr source_location current(const char* file = __builtin_FILE(),
                                             const char* function = __builtin_FUNCTION(),
                                             unsigned line = __builtin_LINE()) noexcept {
        source_location l;
        l.file_ = file;
        l.function_ = function;
        l.line_ = line;
        return l;
    }
    constexpr source_location() noexcept = default;
    [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
    [[nodiscard]] constexpr const char* function_name() const noexcept { return function_; }
    [[nodiscard]] constexpr unsigned line() const noexcept { return line_; }
    [[nodiscard]] constexpr unsigned column() const noexcept { return 0; }

private:
    const char* file_ = "";
    const char* function_ = "";
    unsigned line_ = 0;
};
#endif

}  // namespace respool
