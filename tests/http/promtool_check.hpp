// `promtool check metrics` on a text, for the tests of the Prometheus writers and the collector.
// RESPOOL_PROMTOOL (the path of promtool) comes from tests/CMakeLists.txt.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#ifndef RESPOOL_PROMTOOL
#error "RESPOOL_PROMTOOL (the path of promtool) comes from tests/CMakeLists.txt"
#endif

namespace {

struct check_result {
    int exit_code;
    std::string output;
};

// Runs `promtool check metrics` with `text` on its standard input.
inline check_result promtool_check(const std::string& text) {
    const auto file =
        std::filesystem::temp_directory_path() / ("respool-promtool-" + std::to_string(::getpid()) + ".prom");
    std::ofstream(file, std::ios::binary) << text;
    const std::string cmd = std::string(RESPOOL_PROMTOOL) + " check metrics < '" + file.string() + "' 2>&1";
    check_result r{-1, {}};
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::filesystem::remove(file);
    return r;
}

}  // namespace
