// A connection's prepared statements, least recently used first out, keyed by the SQL text. Prepared
// with SQLITE_PREPARE_PERSISTENT (they are meant to live long). No invalidation: SQLite re-prepares a
// statement by itself when the schema changed (sqlite3_prepare_v3 statements do). Used only by the
// thread that owns the connection's handle at the time.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace respool::sqlite {

class statement_cache {
public:
    statement_cache() = default;
    statement_cache(const statement_cache&) = delete;
    statement_cache& operator=(const statement_cache&) = delete;
    ~statement_cache() { clear(); }

    void set_capacity(std::size_t n) noexcept { capacity_ = n; }
    [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }

    // A statement and what running it changes in the connection's session (session_effect bits, found
    // by the authorizer when it was prepared: SQLite does not authorize a statement again when it runs).
    struct cached {
        ::sqlite3_stmt* stmt = nullptr;
        unsigned effects = 0;
    };

    // The cached statement for `sql`, now the most recently used; nullptr when there is none.
    const cached* find(const std::string& sql) noexcept {
        auto it = map_.find(sql);
        if (it == map_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second);
        return &it->second->second;
    }

    // Keeps `stmt` for `sql` (not yet cached). Returns false when the cache keeps nothing (capacity 0):
    // the caller finalizes it after use. Evicts (finalizes) the least recently used beyond capacity.
    bool put(const std::string& sql, ::sqlite3_stmt* stmt, unsigned effects) {
        if (capacity_ == 0) return false;
        order_.emplace_front(sql, cached{stmt, effects});
        map_.emplace(order_.front().first, order_.begin());
        while (map_.size() > capacity_) {
            auto& [key, victim] = order_.back();
            ::sqlite3_finalize(victim.stmt);
            map_.erase(key);
            order_.pop_back();
        }
        return true;
    }

    // Finalizes every cached statement (before the handle closes).
    void clear() noexcept {
        for (auto& [key, c] : order_) ::sqlite3_finalize(c.stmt);
        map_.clear();
        order_.clear();
    }

private:
    using entry = std::pair<std::string, cached>;
    std::list<entry> order_;  // most recently used first
    // Keyed by views of the texts in order_ (list nodes do not move).
    std::unordered_map<std::string_view, std::list<entry>::iterator> map_;
    std::size_t capacity_ = 128;
};

}  // namespace respool::sqlite
