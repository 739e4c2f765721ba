// Several pool statements in flight on one connection at once (pool_config::pipeline_depth): libpq's
// pipeline mode, each statement followed by its own Sync, so each is its own implicit transaction and
// one's failure ends at its Sync without touching the others. Replies arrive in order and each
// completes its caller as it arrives. Private to the PostgreSQL layer (docs/06-postgresql.md,
// "Pipelined pool statements").
#pragma once

#include "cancel_request.hpp"
#include "connection_impl.hpp"

#include <boost/container/small_vector.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace respool::pg::detail {

// Whether a pool statement may share a connection with other callers' statements: bound parameters
// (the extended protocol runs exactly one statement), a statement that reads or writes rows (SELECT,
// INSERT, UPDATE, DELETE, WITH, VALUES, TABLE) and no call that changes the session (advisory locks,
// set_config). Anything else borrows a connection of its own.
bool pipelinable(std::string_view sql) noexcept;

class pipeline : public std::enable_shared_from_this<pipeline> {
public:
    // Takes the connection (busy until the pipeline is idle again). `statement_timeout`: each
    // statement's deadline from its submission (0: none).
    pipeline(std::shared_ptr<connection::impl> c, std::chrono::steady_clock::duration statement_timeout);
    ~pipeline();
    pipeline(const pipeline&) = delete;
    pipeline& operator=(const pipeline&) = delete;

    // Sends the statement behind those in flight. `h` completes when its reply has been read, on
    // the connection's executor (or the handler's own), never inside this call. Cancellation (or the
    // deadline, which counts from the moment the statements before it have been answered) completes
    // it at once with operation_aborted (statement_timeout); its reply is read and dropped, and when
    // the server runs it at that moment a cancel request stops it there. A server error fills `diag`
    // (when given) with the statement's own words before `h` runs. `how`: through the connection's
    // statement cache (unless it is off), or unnamed, parsed for this run only (for a statement that
    // should not take a place in the cache, such as a transaction's BEGIN). `handler_ex`: the handler's
    // executor read before it was erased, or empty (complete_here, connection_impl.hpp).
    enum class preparation : std::uint8_t { through_cache, unnamed };
    void submit(std::string sql, params p, query_handler h, respool::diagnostics* diag = nullptr,
                preparation how = preparation::through_cache, boost::asio::any_io_executor handler_ex = {});

    // Callers' statements sent and not yet answered (those completed early included: they still
    // occupy the connection).
    [[nodiscard]] std::size_t in_flight() const noexcept { return callers_; }
    [[nodiscard]] bool broken() const noexcept { return broken_; }
    // Left pipeline mode with nothing in flight (on_idle is posted or ran, no submit since).
    [[nodiscard]] bool idle() const noexcept { return statements_.empty() && idle_posted_; }
    // Runs (posted) once nothing is in flight any more and every cancel request has returned, the
    // connection left pipeline mode and idle; or once the connection broke (argument true: every
    // statement failed with connection_broken).
    std::function<void(bool broken)> on_idle;

private:
    enum class part : std::uint8_t { rows, prepare, deallocate, sync };
    struct prepare_outcome {  // a Parse in flight, which later statements with that name rely on
        error_code ec;
        std::string message;
    };
    struct statement {
        statement() = default;
        // (The handler is moved in here: Boost 1.81's any_completion_handler move-assignment recurses.)
        statement(std::string s, params q, query_handler h)
            : sql(std::move(s)), p(std::move(q)), handler(std::move(h)) {}
        std::string sql;  // kept for the one retry after a cancel meant for another statement
        params p;
        query_handler handler;  // empty once completed (early: cancelled, past its deadline)
        boost::asio::any_io_executor handler_ex;  // the handler's, read before it was erased (or empty)
        boost::container::small_vector<part, 4> parts;
        std::size_t at = 0;
        result out;
        error_code first_error;
        diagnostics words;                        // first_error's, as the server said it
        respool::diagnostics* diag = nullptr;     // the caller's: filled on failure before its handler runs
        std::string key;                          // the statement cache's key
        std::string preparing;                    // the name this statement's Parse prepares
        std::shared_ptr<prepare_outcome> relies;  // the Parse (its own or an earlier one) it needs
        std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
        std::vector<std::string> deallocating;  // internal: DEALLOCATE of evicted statements
        error_code early;                       // why it completed early
        preparation how = preparation::through_cache;
        bool cancel_sent = false;
        bool retried = false;
        std::chrono::steady_clock::time_point started{};  // with a tracer: when it was submitted
        [[nodiscard]] bool internal() const noexcept { return !deallocating.empty(); }
    };
    using statement_ptr = std::shared_ptr<statement>;

    bool send(statement& s);
    bool send_deallocate(std::vector<std::string> names);
    void flush();
    void wait(boost::asio::socket_base::wait_type w, bool& out);
    void read();
    void read_replies();
    void take(statement& s, part now, PGresult* r);
    void complete_front();
    void abandon(const statement_ptr& s, error_code why);
    void watch_head();
    void arm_deadline();
    void on_deadline();
    void maybe_idle();
    void broke(const char* why);

    std::shared_ptr<connection::impl> c_;
    std::chrono::steady_clock::duration statement_timeout_;
    std::deque<statement_ptr> statements_;  // sent, in the order the replies come
    std::unordered_map<std::string, std::shared_ptr<prepare_outcome>> parsing_;  // by statement name
    std::shared_ptr<cancel_mailbox> box_ = std::make_shared<cancel_mailbox>();
    boost::asio::steady_timer deadline_timer_;
    std::size_t callers_ = 0;
    int nulls_at_sync_ = 0;
    bool reading_ = false;   // a read wait is out
    bool in_read_ = false;   // read() is on the stack
    bool flushing_ = false;  // a write wait is out
    bool broken_ = false;
    bool idle_posted_ = false;
};

}  // namespace respool::pg::detail
