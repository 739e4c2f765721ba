// The per-connection cache of prepared statements: least recently used first out, keyed by the SQL
// text and the parameter types (a statement prepared for an int4 $1 cannot take an int8). Private to
// the PostgreSQL layer; the connection decides when to prepare and deallocate.
#pragma once

#include "control_statements.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace respool::pg::detail {

// A statement the server has prepared for this connection.
struct prepared {
    std::string name;
    bool session_effects = false;  // its text calls functions that change the session (see track_sent)
};

class statement_cache {
public:
    explicit statement_cache(std::size_t capacity = 512) : capacity_(capacity) {}

    // The statement for `key`, made the most recent; nullptr when not cached.
    const prepared* find(const std::string& key) {
        const auto it = index_.find(std::string_view(key));
        if (it == index_.end()) return nullptr;
        lru_.splice(lru_.begin(), lru_, it->second);
        return &it->second->second;
    }
    // Makes room for one more: the least recently used entry leaves and its name is returned (to be
    // deallocated on the server), or an empty string when there was room.
    std::string make_room() {
        if (capacity_ == 0 || lru_.size() < capacity_) return {};
        return evict_oldest();
    }
    // The least recently used entry leaves; its name is returned. The cache must not be empty.
    std::string evict_oldest() {
        std::string name = std::move(lru_.back().second.name);
        index_.erase(std::string_view(lru_.back().first));
        lru_.pop_back();
        return name;
    }
    // Records a statement the server has prepared (after make_room).
    void insert(std::string key, prepared p) {
        lru_.emplace_front(std::move(key), std::move(p));
        index_.emplace(std::string_view(lru_.front().first), lru_.begin());
    }
    // Forgets one statement (it failed in a way that means the server's copy is stale or gone); returns
    // its name, empty when it was not cached.
    std::string erase(const std::string& key) {
        const auto it = index_.find(std::string_view(key));
        if (it == index_.end()) return {};
        std::string name = std::move(it->second->second.name);
        lru_.erase(it->second);
        index_.erase(it);
        return name;
    }
    // Forgets everything (the session's statements are gone: DISCARD ALL, DEALLOCATE ALL).
    void clear() noexcept {
        index_.clear();
        lru_.clear();
        forget_controls();
    }

    // The name control_texts[i] is prepared under on the server; empty: not prepared (yet).
    [[nodiscard]] const std::string& control_name(int i) const noexcept { return control_[std::size_t(i)]; }
    // control_texts[i] is prepared (false for -1: not a control statement).
    [[nodiscard]] bool control_ready(int i) const noexcept { return i >= 0 && !control_name(i).empty(); }
    // control_texts[i] is prepared under `name` (a next_name(): never one in use, so a statement that
    // was forgotten but is still on the server cannot make the next Parse fail with 42P05).
    void control_prepared(int i, std::string name) { control_[std::size_t(i)] = std::move(name); }
    // Forgets control_texts[i] (the server said 26000: it is gone).
    void forget_control(int i) noexcept { control_[std::size_t(i)].clear(); }
    // A DEALLOCATE by hand may have dropped any of them: each is prepared again under a new name when
    // next used. The old names are not deallocated (one may be gone, and a failed DEALLOCATE would abort
    // an open transaction): the reset on return drops them with DEALLOCATE ALL.
    void forget_controls() noexcept {
        for (std::string& n : control_) n.clear();
    }
    // A name no other statement of this connection has.
    std::string next_name() { return "respool_" + std::to_string(++named_); }

    [[nodiscard]] std::size_t size() const noexcept { return lru_.size(); }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
    void set_capacity(std::size_t c) noexcept { capacity_ = c; }

private:
    using entry = std::pair<std::string, prepared>;  // key, statement
    std::list<entry> lru_;                           // most recent first; nodes never move in memory
    std::unordered_map<std::string_view, std::list<entry>::iterator> index_;  // views into lru_'s keys
    std::size_t capacity_;
    std::uint64_t named_ = 0;
    std::array<std::string, control_texts.size()> control_;  // names ("respool_N") fit inline
};

}  // namespace respool::pg::detail
