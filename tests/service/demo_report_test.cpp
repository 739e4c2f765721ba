// `respool demo --report FILE.html` end to end (label integration): a 3-second run on SQLite writes a
// self-contained page (three SVG plots with their titles, nothing fetched from the network), which
// headless Chromium (Debian's `chromium`, installed by scripts/bootstrap) renders: the screenshot is a
// 1200x1600 PNG with something drawn on it, and the rendered DOM holds the plots. A --report path
// that cannot be written is refused before the run.
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace serve_test;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// Every <svg ...> of `html` has a matching </svg> after it, none nested.
bool svgs_balanced(const std::string& html) {
    std::size_t at = 0;
    while ((at = html.find("<svg", at)) != std::string::npos) {
        const auto close = html.find("</svg>", at);
        const auto next = html.find("<svg", at + 4);
        if (close == std::string::npos || (next != std::string::npos && next < close)) return false;
        at = close;
    }
    return true;
}

std::uint32_t big_endian(const std::string& s, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
    return v;
}

// Chromium as the build found it, or why the test cannot render.
std::string chromium_or_reason() {
    const std::string chromium = RESPOOL_CHROMIUM;
    if (!chromium.empty() && access(chromium.c_str(), X_OK) == 0) return chromium;
    return {};
}

bool chromium_installable() {
    return std::system("apt-cache show chromium >/dev/null 2>&1") == 0;
}

// Runs `command` through the shell, bounded by coreutils' timeout; its exit status.
int run_bounded(const std::string& command, int seconds) {
    const int status = std::system(("timeout " + std::to_string(seconds) + " " + command).c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(demo_report, a_three_second_run_renders_in_headless_chromium) {
    const std::string chromium = chromium_or_reason();
    if (chromium.empty()) {
        if (chromium_installable())
            FAIL() << "chromium is not installed but is installable: run scripts/bootstrap (it installs "
                      "chromium)";
        GTEST_SKIP() << "chromium is not installed and this machine's apt sources do not offer it";
    }
    temp_dir dir;
    const std::string report = dir.path + "/run.html";
    const auto t0 = std::chrono::steady_clock::now();
    const auto [status, output] =
        run_to_exit({"demo", "--duration", "3s", "--clients", "8", "--quiet", "--report", report});
    ASSERT_EQ(status, 0) << output;
    EXPECT_NE(output.find("increment check                  OK"), std::string::npos) << output;
    for (const char* row : {"pool: acquire wait p50", "pool: acquire wait p99", "pool: borrow timeouts",
                            "pool: connections created"})
        EXPECT_NE(output.find(row), std::string::npos) << row << "\n" << output;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25));

    // The file: one page, three plots with their titles, no resource from the network, no script.
    const std::string html = read_file(report);
    ASSERT_FALSE(html.empty());
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(count_of(html, "<html"), 1u);
    EXPECT_NE(html.find("</html>"), std::string::npos);
    EXPECT_EQ(count_of(html, "<svg "), 3u);
    EXPECT_TRUE(svgs_balanced(html));
    for (const char* id : {"id=\"plot-throughput\"", "id=\"plot-latency\"", "id=\"plot-occupancy\""})
        EXPECT_EQ(count_of(html, id), 1u) << id;
    for (const char* title : {"<title>Requests per second</title>", "<title>Latency p50 and p99</title>",
                              "<title>Pool occupancy</title>"})
        EXPECT_EQ(count_of(html, title), 1u) << title;
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_GE(count_of(html, "<polyline "), 6u);
    EXPECT_NE(html.find("increment check"), std::string::npos);

    // The screenshot: a 1200x1600 PNG (its IHDR) with a page drawn on it (a blank one compresses to a
    // few KB; this page with its three plots is far larger).
    const std::string shot = dir.path + "/shot.png";
    const std::string profile = dir.path + "/chromium-profile";  // a profile of its own: runs in parallel
    const std::string flags = " --headless --no-sandbox --disable-gpu --user-data-dir=" + profile + " ";
    ASSERT_EQ(run_bounded(chromium + flags + "--screenshot=" + shot + " --window-size=1200,1600 file://" +
                              report + " >/dev/null 2>" + dir.path + "/chromium.err",
                          90),
              0)
        << read_file(dir.path + "/chromium.err");
    const std::string png = read_file(shot);
    ASSERT_GE(png.size(), 33u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    EXPECT_EQ(big_endian(png, 16), 1200u);
    EXPECT_EQ(big_endian(png, 20), 1600u);
    EXPECT_GT(png.size(), 30u * 1024) << "the screenshot looks blank";

    // The rendered DOM: Chromium parsed the three plots, each with its lines.
    const std::string dom_file = dir.path + "/dom.html";
    ASSERT_EQ(
        run_bounded(chromium + flags + "--dump-dom file://" + report + " >" + dom_file + " 2>/dev/null", 90),
        0);
    const std::string dom = read_file(dom_file);
    EXPECT_EQ(count_of(dom, "<svg "), 3u);
    EXPECT_EQ(count_of(dom, "<polyline "), count_of(html, "<polyline "));
    EXPECT_NE(dom.find("Pool occupancy"), std::string::npos);
}

// The figure on the summary's row `name`, or -1.
double summary_figure(const std::string& output, const std::string& name) {
    const auto at = output.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(output.c_str() + output.find_first_not_of(' ', at + 1 + name.size()), nullptr);
}

// The throughput is the requests answered over the time the clients ran, not over the run with the
// increment check after it (which sends two requests per counter: thousands here).
TEST(demo_report, the_throughput_counts_the_time_the_clients_ran_only) {
    const auto [status, output] =
        run_to_exit({"demo", "--duration", "2s", "--clients", "8", "--counters", "2000", "--quiet"});
    ASSERT_EQ(status, 0) << output;
    const double requests = summary_figure(output, "requests answered");
    const double throughput = summary_figure(output, "throughput");
    ASSERT_GT(requests, 0) << output;
    // The clients ran 2 s and stopped within a request's time (allow a busy machine a second more).
    EXPECT_GE(throughput, requests / 3.0) << output;
    EXPECT_LE(throughput, requests / 2.0 + 1) << output;
}

TEST(demo_report, a_report_path_that_cannot_be_written_is_refused_before_the_run) {
    temp_dir dir;
    const struct {
        std::string path, says;
    } cases[] = {
        {dir.path + "/no-such-folder/run.html", "in a folder that does not exist"},
        {dir.path, "is a directory"},
        {"/proc/self/run.html", "cannot be written"},  // the folder exists; the file cannot be created
    };
    for (const auto& c : cases) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto [status, output] =
            run_to_exit({"demo", "--duration", "30s", "--quiet", "--report", c.path});
        EXPECT_EQ(status, 2) << output;
        EXPECT_NE(output.find("--report"), std::string::npos) << output;
        EXPECT_NE(output.find(c.says), std::string::npos) << output;
        EXPECT_EQ(output.find("increment check"), std::string::npos) << "the run went ahead:\n" << output;
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10))
            << "not refused at the start";
    }
}
