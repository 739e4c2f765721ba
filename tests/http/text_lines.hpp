// Line checks on a Prometheus text exposition, for the tests of the writers and the collector.
#pragma once

#include <sstream>
#include <string>

namespace {

// Whether `text` has `line` as one of its lines, whole.
inline bool has_line(const std::string& text, const std::string& line) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l == line) return true;
    return false;
}

}  // namespace
