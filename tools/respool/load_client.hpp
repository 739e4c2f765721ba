// The load generator of `respool demo`: HTTP/1.1 clients as coroutines on one event loop, each with a
// keep-alive connection, mixing GET, PUT and POST .../incr on the service's keys; what they saw
// (latencies, status counts, acknowledged increments) for the progress line and the summary.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace respool_cli {

struct load_mix {
    unsigned get = 70, put = 20, incr = 10;  // weights
};
// "GET:PUT:INCR" weights, e.g. "70:20:10"; empty when valid, else why not.
std::string mix_error(const std::string& text);
load_mix parse_mix(const std::string& text);
std::string format_mix(const load_mix& m);  // "70:20:10"

struct load_settings {
    boost::asio::ip::tcp::endpoint service;
    load_mix mix;
    std::string prefix;  // keys are <prefix>k<n> (GET/PUT) and <prefix>c<n> (incr)
    unsigned keys = 1000;
    unsigned counters = 16;
    std::size_t value_size = 100;
};

// What the clients saw. One event loop runs every client: no locking.
struct load_tally {
    std::map<unsigned, long> statuses;  // whole run
    std::map<unsigned, long> window_statuses;
    long transport_errors = 0;       // connect, write or read failed
    std::vector<double> latencies;   // ms, whole run
    std::vector<double> answered;    // ms, whole run, of the requests the service served (below 500)
    std::vector<double> window;      // ms, since the last progress line
    std::vector<long> acknowledged;  // 200s of incr, per counter
    long uncertain_increments = 0;   // incr answered 500 or not at all: applied or not, nobody knows
    bool stopping = false;
    int running = 0;  // clients not yet finished
};

// One client: requests until tally.stopping.
boost::asio::awaitable<void> load_client(const load_settings& s, load_tally& tally, unsigned seed);

// A single request on a fresh connection (the reporter's /health, the final check): {status, body};
// status 0 when the service did not answer.
boost::asio::awaitable<std::pair<unsigned, std::string>> http_request(boost::asio::ip::tcp::endpoint service,
                                                                      std::string method, std::string target);

}  // namespace respool_cli
