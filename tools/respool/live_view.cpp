#include "live_view.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace respool_cli {

namespace {

// n in at most `width` characters: as is below 10000, else scaled by thousands with a suffix, one
// decimal when it fits.
std::string scaled(double n, std::size_t width) {
    if (!std::isfinite(n)) return "?";
    const char* sign = n < 0 ? "-" : "";
    n = std::fabs(n);
    char buf[64];
    if (n < 9999.5) {
        std::snprintf(buf, sizeof buf, "%s%.0f", sign, n);
        return buf;
    }
    static constexpr char suffixes[] = "kMGTPEZY";
    for (const char* s = suffixes; *s; ++s) {
        n /= 1000;
        if (n < 999.95) {
            std::snprintf(buf, sizeof buf, "%s%.1f%c", sign, n, *s);
            if (std::strlen(buf) > width) std::snprintf(buf, sizeof buf, "%s%.0f%c", sign, n, *s);
            return buf;
        }
    }
    return std::string(sign) + "huge";
}

}  // namespace

std::string short_count(double n) {
    return scaled(n, 6);
}

std::string short_ms(double ms) {
    if (!std::isfinite(ms) || ms < 0) return "?";
    char buf[32];
    if (ms < 0.9995)
        std::snprintf(buf, sizeof buf, "%.0fus", ms * 1000);
    else if (ms < 99.95)
        std::snprintf(buf, sizeof buf, "%.1fms", ms);
    else if (ms < 9999.5)
        std::snprintf(buf, sizeof buf, "%.0fms", ms);
    else if (ms < 99950)
        std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000);
    else if (ms < 999500)
        std::snprintf(buf, sizeof buf, "%.0fs", ms / 1000);
    else
        return scaled(ms / 1000, 5) + "s";
    return buf;
}

namespace {

std::string fit(std::string line, std::size_t width) {
    if (line.size() <= width) return line;
    line.resize(width >= 2 ? width - 2 : 0);  // cut: the marker says something is missing
    return line + std::string(width >= 2 ? 2 : width, '.');
}

std::string pools_text(const health_reading& p) {
    if (!p.up) return "database DOWN";
    std::string out;
    for (const auto& [name, c] : p.pools)
        out += (name == "postgresql" ? std::string("pg") : name) + " " +
               short_count(static_cast<double>(c[1])) + "/" + short_count(static_cast<double>(c[0])) + "/" +
               short_count(static_cast<double>(c[2])) + " ";
    return out + (p.circuit == "open" ? std::string("OPEN") : p.circuit);
}

}  // namespace

std::string live_header(std::size_t width) {
    return fit("  time  req/s    p50    p99    5xx  pools active/idle/waiting, circuit", width);
}

std::string live_line(const live_figures& f, std::size_t width) {
    std::string elapsed = short_count(f.elapsed_s) + "s";
    if (f.elapsed_s >= 0 && f.elapsed_s < 999.95) {
        char t[16];
        std::snprintf(t, sizeof t, "%.1fs", f.elapsed_s);
        elapsed = t;
    }
    const std::string rps = f.sampled ? short_count(f.requests_per_s) : "-";
    const std::string p50 = f.sampled ? short_ms(f.p50_ms) : "-";
    const std::string p99 = f.sampled ? short_ms(f.p99_ms) : "-";
    char buf[128];
    std::snprintf(buf, sizeof buf, "%6s %6s %6s %6s %6s  ", elapsed.c_str(), rps.c_str(), p50.c_str(),
                  p99.c_str(), short_count(static_cast<double>(f.errors_5xx)).c_str());
    return fit(buf + pools_text(f.pool), width);
}

}  // namespace respool_cli
