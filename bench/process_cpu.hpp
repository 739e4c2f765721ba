// This process's CPU, user and system apart (getrusage): the benchmarks that report CPU per statement
// read it at both ends of their timed window.
#pragma once

#include <sys/resource.h>
#include <cstdio>

namespace bench {

struct process_cpu {
    double user = 0;    // seconds
    double system = 0;  // seconds

    static process_cpu now() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return {static_cast<double>(u.ru_utime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec) / 1e6,
                static_cast<double>(u.ru_stime.tv_sec) + static_cast<double>(u.ru_stime.tv_usec) / 1e6};
    }
};

// " cpu_us_per_query=X user_us_per_query=Y sys_us_per_query=Z": the window's CPU per query, whole and split.
inline void print_cpu_per_query(const process_cpu& from, const process_cpu& to, unsigned long long queries) {
    const double n = queries ? static_cast<double>(queries) : 1.0;
    const double user = (to.user - from.user) * 1e6 / n, sys = (to.system - from.system) * 1e6 / n;
    std::printf(" cpu_us_per_query=%.2f user_us_per_query=%.2f sys_us_per_query=%.2f",
                queries ? user + sys : 0.0, queries ? user : 0.0, queries ? sys : 0.0);
}

}  // namespace bench
