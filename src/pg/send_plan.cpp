#include "send_plan.hpp"

namespace respool::pg::detail {

send_plan plan_send(const send_inputs& in) {
    send_plan plan;
    // The text is read once per statement the cache does not hold: a COPY that needs the COPY
    // sub-protocol is refused before anything is sent, and effects on the session are noted.
    if (in.bound && in.through_cache && in.cached) {
        plan.session_dirty = in.cached->session_effects;
    } else {
        plan.facts = scan_statement(in.sql);
        if (plan.facts.copy_stream) {
            plan.refuse = true;
            return plan;
        }
        plan.session_dirty = plan.facts.session_effects;
    }
    if (!in.bound && in.named && in.control >= 0 && !in.begin_pending) {  // BEGIN, COMMIT, ROLLBACK by name
        plan.path = send_path::control;
        plan.control = in.control;
        if (!in.control_prepared) {  // Parse, Bind/Execute, Sync: the name is known once its Parse succeeded
            plan.pipeline = true;
            plan.prepare_control = in.control;
            plan.parts.push_back(reply_part::prepare_control);
        }
        plan.parts.push_back(reply_part::rows);
        if (plan.pipeline) plan.parts.push_back(reply_part::sync);
        return plan;
    }
    if (!in.bound) {  // one script: a deferred BEGIN is its first statement, its last result the caller's
        plan.path = send_path::simple;
        plan.parts.push_back(reply_part::rows);
        return plan;
    }
    if (!in.through_cache) {  // BEGIN, then the statement, in one pipeline (a failed BEGIN skips it)
        plan.path = send_path::unnamed;
        plan.pipeline = in.begin_pending;
        if (plan.pipeline) plan.parts.push_back(reply_part::begin);
        plan.parts.push_back(reply_part::rows);
        if (plan.pipeline) plan.parts.push_back(reply_part::sync);
        return plan;
    }
    if (in.cached && in.deallocations_pending == 0 && !in.begin_pending) {  // the common case
        plan.path = send_path::cached;
        plan.parts.push_back(reply_part::rows);
        return plan;
    }
    plan.path = send_path::pipeline;
    plan.pipeline = true;
    if (in.begin_pending) {
        if (in.named && in.begin_control >= 0) {  // the BEGIN by name (prepared first, once)
            plan.begin_control = in.begin_control;
            if (!in.begin_control_prepared) {
                plan.prepare_control = in.begin_control;
                plan.parts.push_back(reply_part::prepare_control);
            }
        }
        plan.parts.push_back(reply_part::begin);
    }
    if (!in.cached) {
        plan.prepare = true;
        plan.evicts = in.cache_full;
        plan.parts.push_back(reply_part::prepare);
    }
    plan.parts.push_back(reply_part::rows);
    plan.parts.push_back(reply_part::sync);
    // After a second Sync, so that a failure of the caller's statement cannot abort them and theirs
    // cannot touch the caller's result.
    plan.deallocations = in.deallocations_pending + (plan.evicts ? 1 : 0);
    if (plan.deallocations != 0) {
        plan.parts.insert(plan.parts.end(), plan.deallocations, reply_part::deallocate);
        plan.parts.push_back(reply_part::sync);
    }
    return plan;
}

std::string reserve_statement(statement_cache& cache, std::vector<std::string>& to_deallocate) {
    if (std::string evicted = cache.make_room(); !evicted.empty())
        to_deallocate.push_back(std::move(evicted));
    return cache.next_name();
}

bool deallocate_again(bool aborted, std::string_view sqlstate) noexcept {
    return aborted || sqlstate != "26000";
}

stale_decision on_stale_statement(const stale_inputs& in) noexcept {
    stale_decision d;
    if (!in.cache_mode || in.cancelled || !(in.plan_changed || in.statement_missing)) return d;
    // Stale: the server's copy is dropped as well; gone: there is nothing left to drop. Prepared again
    // once when no transaction was open (in one, the error has aborted it: the caller decides).
    d.forget = true;
    d.deallocate_old = in.plan_changed;
    d.retry = in.idle_before && !in.retried;
    return d;
}

}  // namespace respool::pg::detail
