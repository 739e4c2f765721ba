// The transaction-control statements respool sends on its own (a transaction's BEGIN with its
// options, COMMIT, ROLLBACK). As simple-protocol text the server parses each of them at every call;
// prepared once per connection and run by name, they cost it a Bind and an Execute. They live beside
// the statement cache, outside its capacity and its eviction. Private to the PostgreSQL layer.
#pragma once

#include <array>
#include <string_view>

namespace respool::pg::detail {

// Every text that goes by name when the connection may prepare statements (statement_mode::cache with a
// capacity above zero). The BEGINs are the ones transaction() makes from its options.
inline constexpr std::array<std::string_view, 10> control_texts = {
    "BEGIN",
    "BEGIN READ ONLY",
    "BEGIN ISOLATION LEVEL READ COMMITTED",
    "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY",
    "BEGIN ISOLATION LEVEL REPEATABLE READ",
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    "BEGIN ISOLATION LEVEL SERIALIZABLE",
    "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY",
    "COMMIT",
    "ROLLBACK",
};

// The position of `sql` in control_texts (the exact text), or -1: any other statement.
constexpr int control_index(std::string_view sql) noexcept {
    if (sql.empty() || (sql.front() != 'B' && sql.front() != 'C' && sql.front() != 'R')) return -1;
    for (std::size_t i = 0; i < control_texts.size(); ++i)
        if (control_texts[i] == sql) return static_cast<int>(i);
    return -1;
}

inline constexpr int rollback_index = control_index("ROLLBACK");

}  // namespace respool::pg::detail
