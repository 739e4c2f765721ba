// respool::pg::batch: several statements sent together on one connection, in one round trip (libpq's
// pipeline mode), each with its own outcome. Each statement is its own implicit transaction (one's
// failure leaves the others as they are), unless the batch opens one itself with BEGIN.
//
//   pg::batch b;
//   b.add("INSERT INTO audit (who) VALUES ($1)", pg::params("ada"))
//    .add("UPDATE accounts SET n = n + 1 WHERE id = $1", pg::params(7))
//    .add("SELECT n FROM accounts WHERE id = $1", pg::params(7));
//   auto [ec, outcomes] = co_await pool.async_execute(std::move(b), asio::as_tuple(asio::use_awaitable));
//   // outcomes[2].rows.get<std::int64_t>(0, 0); ec: the first statement that failed, if any
//
// docs/06-postgresql.md, "Batches".
#pragma once

#include <respool/error.hpp>
#include <respool/pg/values.hpp>

#include <string>
#include <utility>
#include <vector>

namespace respool::pg {

class batch {
public:
    struct statement {
        std::string sql;  // one statement (bound parameters: the extended protocol runs exactly one)
        params p;
    };
    batch& add(std::string sql, params p = {}) {
        statements_.push_back({std::move(sql), std::move(p)});
        return *this;
    }
    [[nodiscard]] std::size_t size() const noexcept { return statements_.size(); }
    [[nodiscard]] bool empty() const noexcept { return statements_.empty(); }
    [[nodiscard]] const std::vector<statement>& statements() const noexcept { return statements_; }
    std::vector<statement> take() noexcept { return std::move(statements_); }

private:
    std::vector<statement> statements_;
};

// One statement's outcome, in the batch's order.
struct batch_outcome {
    error_code error{};     // empty on success
    result rows{};          // its result (empty on failure)
    std::string message{};  // the failure in words, masked (the server's message for a server error)
};

}  // namespace respool::pg
