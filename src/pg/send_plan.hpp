// How a statement goes to the server, decided without touching libpq: which of the four ways it is
// sent (a simple-protocol script, libpq's unnamed statement, a cached statement alone, or a pipeline
// that may open a transaction, prepare a new statement and deallocate old ones), what the server's
// reply will be made of, and what the statement cache does before and after. query.cpp runs the plan
// with libpq; these functions hold every decision, so they are tested without a server.
#pragma once

#include "statement_cache.hpp"
#include "statement_text.hpp"

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace respool::pg::detail {

// One piece of the round trip, in the order it is sent and answered: the runner sends one message
// group per part and reads the server's results against the same list.
enum class reply_part : std::uint8_t {
    begin,            // a transaction's deferred BEGIN
    rows,             // the caller's statement: its result is the caller's
    prepare,          // Parse of a statement the cache does not hold yet
    prepare_control,  // Parse of a transaction-control statement (control_statements.hpp), once
    deallocate,       // DEALLOCATE of a statement evicted or found stale earlier
    sync,             // a pipeline Sync (one PIPELINE_SYNC result)
};

// How the caller's statement itself goes out.
enum class send_path : std::uint8_t {
    simple,    // no parameters: the simple protocol, a deferred BEGIN prepended to the script
    unnamed,   // bound parameters through libpq's unnamed statement (the cache is off)
    cached,    // a statement the cache holds, with nothing else to send: Bind/Execute/Sync
    pipeline,  // pipeline mode: [BEGIN] [Parse] Bind/Execute Sync [DEALLOCATE... Sync]
    control,   // BEGIN, COMMIT or ROLLBACK by name: Bind/Execute/Sync ([Parse] before, once, in a pipeline)
};

struct send_inputs {
    std::string_view sql;
    bool bound = false;          // the statement has parameters (even none: the extended protocol)
    bool through_cache = false;  // statement_mode::cache with a capacity above zero
    // The cache's statement for this text and these parameter types; null when not cached.
    const prepared* cached = nullptr;
    bool cache_full = false;                // a new statement would evict the least recently used one
    bool begin_pending = false;             // a transaction's BEGIN goes first, in this round trip
    std::size_t deallocations_pending = 0;  // names evicted or found stale, not deallocated yet
    // Statements may be prepared by name (statement_mode::cache with a capacity above zero).
    bool named = false;
    // A statement without parameters that is control_texts[control] (else -1), and whether the
    // connection has it prepared; the same for the pending BEGIN.
    int control = -1;
    bool control_prepared = false;
    int begin_control = -1;
    bool begin_control_prepared = false;
};

struct send_plan {
    send_path path = send_path::simple;
    // COPY ... FROM STDIN / TO STDOUT: refused, nothing is sent and the session is untouched.
    bool refuse = false;
    bool session_dirty = false;     // the statement may change the session (its text, or its cached entry)
    statement_facts facts;          // the text's facts: scanned unless the statement was cached
    bool pipeline = false;          // sent in libpq's pipeline mode
    bool prepare = false;           // a new named statement: reserve_statement, then Parse
    bool evicts = false;            // preparing it evicts the least recently used statement
    std::size_t deallocations = 0;  // DEALLOCATE statements sent after the second Sync
    int control = -1;               // send_path::control: the statement is control_texts[control]
    int begin_control = -1;         // the BEGIN goes by name as control_texts[begin_control]
    int prepare_control = -1;       // this round trip prepares control_texts[prepare_control]
    boost::container::small_vector<reply_part, 6> parts;  // inline: no allocation per statement
};

// The plan for one statement (a retry plans again: the cache has learnt since).
send_plan plan_send(const send_inputs& in);

// The cache's side of a plan that prepares: room is made (an evicted name joins `to_deallocate`, to go
// in the same round trip) and the new statement's name is returned.
std::string reserve_statement(statement_cache& cache, std::vector<std::string>& to_deallocate);

// A DEALLOCATE that did not succeed is sent again with the next statement, unless the server said
// the statement does not exist (26000). An aborted pipeline (`aborted`) skipped it: again.
bool deallocate_again(bool aborted, std::string_view sqlstate) noexcept;

// After a statement sent through the cache failed because the server's prepared copy is stale
// (0A000: a table's columns changed under it) or gone (26000: DEALLOCATE by hand).
struct stale_inputs {
    bool cache_mode = false;         // bound parameters under statement_mode::cache
    bool cancelled = false;          // a cancel was requested: the caller gets the cancellation, no retry
    bool plan_changed = false;       // the statement failed with 0A000
    bool statement_missing = false;  // the statement failed with 26000
    bool idle_before = false;        // no transaction was open when it was sent (a retry is safe)
    bool retried = false;            // this is the retry already
};
struct stale_decision {
    bool forget = false;          // erase the statement from the cache
    bool deallocate_old = false;  // the erased name (if any) is deallocated with the next statement
    bool retry = false;           // prepare and run it again, once
};
stale_decision on_stale_statement(const stale_inputs& in) noexcept;

}  // namespace respool::pg::detail
