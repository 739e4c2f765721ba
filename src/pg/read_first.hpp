// Whether a statement reads its reply once before it waits for the socket. After sending, a statement
// can wait for the socket at once (a receive that finds nothing yet, then the event loop's readiness
// and a second receive once the reply is there, then libpq's own read), or first let the handlers
// already queued on its event loop run (the other connections' replies, their next statements) and
// then read once, the way pgbench goes round its connections: when the server has answered meanwhile,
// that read is the statement's only receive. When it finds nothing, the wait after it goes straight to
// the loop's readiness (an epoll_ctl, no receive tried at once), so a failed first read makes as many
// system calls as waiting at once, one of them an epoll_ctl instead of a receive. Even so each
// connection keeps a record of its last eight tries and reads first only while at least half of them
// found the reply (a loop with other work); otherwise (one client alone, a slow server) it waits at
// once and tries again once in eight statements, to notice that the odds changed.
#pragma once

#include <bit>
#include <cstdint>

namespace respool::pg::detail {

class read_first_record {
public:
    // Whether this statement reads before it waits.
    bool try_now() noexcept {
        if (std::popcount(found_) >= 4) return true;
        if (++skipped_ < 8) return false;
        skipped_ = 0;
        return true;
    }
    // What the read found: a complete result to take (true), or not yet (false).
    void tried(bool found_reply) noexcept {
        found_ = static_cast<std::uint8_t>((found_ << 1) | (found_reply ? 1U : 0U));
    }

private:
    std::uint8_t found_ = 0xff;  // the last eight tries, the newest in bit 0 (a new connection tries)
    std::uint8_t skipped_ = 0;   // statements that waited at once since the last try
};

}  // namespace respool::pg::detail
