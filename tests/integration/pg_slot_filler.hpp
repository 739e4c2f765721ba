// test::slot_filler: connections of a test's own that take the server's slots (max_connections) until
// it refuses one with 53300 ("sorry, too many clients already"), so that a pool's growth meets the
// server's limit; closed by release() or the destructor. Used by the chaos tests of the pool and of
// `respool serve` (both against the pg_cluster_faults server).
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace test {

class slot_filler {
public:
    explicit slot_filler(const std::string& conninfo)
        : info_(conninfo + " application_name=chaos_filler connect_timeout=10") {}
    ~slot_filler() { release(held_.size()); }
    slot_filler(const slot_filler&) = delete;
    slot_filler& operator=(const slot_filler&) = delete;

    // Connects until the server refuses (at most `limit` connections); the refusal's message, empty
    // when every connect succeeded.
    std::string fill(int limit = 200) {
        for (int i = 0; i < limit; ++i) {
            PGconn* c = PQconnectdb(info_.c_str());
            if (c && PQstatus(c) == CONNECTION_OK) {
                held_.push_back(c);
                continue;
            }
            std::string why = c ? PQerrorMessage(c) : "out of memory";
            PQfinish(c);
            return why;
        }
        return {};
    }
    // Closes `n` of the held connections (their backends end, their slots free up).
    void release(std::size_t n) {
        for (; n > 0 && !held_.empty(); --n) {
            PQfinish(held_.back());
            held_.pop_back();
        }
    }
    std::size_t held() const { return held_.size(); }

private:
    std::string info_;
    std::vector<PGconn*> held_;
};

}  // namespace test
