#include "session_rules.hpp"

namespace respool::pg::detail {

namespace {

// The tag is `word`, or starts with `word` and a space ("CREATE TABLE", "SET" but not "SETOF").
bool tag_is(std::string_view tag, std::string_view word) noexcept {
    return tag.substr(0, word.size()) == word && (tag.size() == word.size() || tag[word.size()] == ' ');
}

// The reset of a dirty session, in one round trip: everything DISCARD ALL does except dropping the
// prepared statements (which would empty the statement cache; hand-made ones go with DEALLOCATE ALL
// when a PREPARE was seen). DISCARD ALL itself cannot run in the implicit transaction of a script.
constexpr const char* session_reset =
    "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *; "
    "SELECT pg_advisory_unlock_all(); DISCARD TEMP; DISCARD SEQUENCES";

}  // namespace

tag_effect classify_command_tag(std::string_view tag) noexcept {
    if (tag.empty()) return tag_effect::none;
    if (tag_is(tag, "SELECT") || tag_is(tag, "INSERT") || tag_is(tag, "UPDATE") || tag_is(tag, "DELETE"))
        return tag_effect::none;  // the common case first
    if (tag_is(tag, "DISCARD ALL") || tag_is(tag, "DEALLOCATE ALL")) return tag_effect::statements_dropped;
    if (tag_is(tag, "DEALLOCATE")) return tag_effect::statement_dropped;
    if (tag_is(tag, "PREPARE")) return tag_effect::user_prepared;
    if (tag_is(tag, "SET") || tag_is(tag, "RESET") || tag_is(tag, "LISTEN") || tag_is(tag, "UNLISTEN") ||
        tag_is(tag, "DECLARE CURSOR") || tag_is(tag, "CREATE") || tag_is(tag, "LOAD") ||
        tag_is(tag, "DISCARD"))
        return tag_effect::dirty;  // CREATE: a temporary object, maybe (a harmless over-approximation)
    return tag_effect::none;
}

bool failover_signal(std::string_view sqlstate, bool default_transaction_read_only,
                     bool in_hot_standby) noexcept {
    return sqlstate == "25006" && (default_transaction_read_only || in_hot_standby);
}

bool full_reset(reset_policy policy, bool session_changed) noexcept {
    return policy == reset_policy::always || (policy == reset_policy::tracked && session_changed);
}

std::optional<std::string> reset_script(transaction_phase phase, bool full, bool user_prepared) {
    std::string script;
    switch (phase) {
    case transaction_phase::idle: break;
    case transaction_phase::open: script = "ROLLBACK"; break;
    case transaction_phase::unusable: return std::nullopt;
    }
    if (full) {
        if (!script.empty()) script += "; ";
        script += session_reset;
        if (user_prepared) script += "; DEALLOCATE ALL";
    }
    return script;
}

}  // namespace respool::pg::detail
