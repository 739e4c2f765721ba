// The send plan of respool::pg's queries (src/pg/send_plan.hpp), without a server: which way a
// statement is sent, what the reply is made of, what the statement cache does before and after.
#include "control_statements.hpp"
#include "send_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace respool::pg::detail;
using part = reply_part;
using parts = std::vector<reply_part>;

namespace {

parts parts_of(const send_plan& p) {
    return {p.parts.begin(), p.parts.end()};
}

send_inputs bound(std::string_view sql, const prepared* cached = nullptr) {
    send_inputs in;
    in.sql = sql;
    in.bound = true;
    in.through_cache = true;
    in.cached = cached;
    return in;
}

}  // namespace

TEST(pg_send_plan, a_script_without_parameters_goes_by_the_simple_protocol_with_its_begin_prepended) {
    send_inputs in;
    in.sql = "SELECT 1; SELECT 2";
    in.through_cache = false;
    const send_plan plain = plan_send(in);
    EXPECT_EQ(plain.path, send_path::simple);
    EXPECT_FALSE(plain.pipeline);
    EXPECT_EQ(parts_of(plain), (parts{part::rows}));
    in.begin_pending = true;       // the BEGIN is the script's first statement: still one result to keep
    in.deallocations_pending = 2;  // deallocations wait for a statement through the cache
    const send_plan with_begin = plan_send(in);
    EXPECT_EQ(with_begin.path, send_path::simple);
    EXPECT_EQ(parts_of(with_begin), (parts{part::rows}));
    EXPECT_EQ(with_begin.deallocations, 0u);
}

TEST(pg_send_plan, without_the_cache_a_bound_statement_uses_the_unnamed_statement) {
    send_inputs in = bound("SELECT $1");
    in.through_cache = false;
    in.deallocations_pending = 1;  // left for a statement through the cache
    const send_plan p = plan_send(in);
    EXPECT_EQ(p.path, send_path::unnamed);
    EXPECT_FALSE(p.pipeline);
    EXPECT_FALSE(p.prepare);
    EXPECT_EQ(parts_of(p), (parts{part::rows}));
    EXPECT_EQ(p.deallocations, 0u);
    in.begin_pending = true;  // BEGIN and the statement under one Sync: a failed BEGIN skips it
    const send_plan b = plan_send(in);
    EXPECT_EQ(b.path, send_path::unnamed);
    EXPECT_TRUE(b.pipeline);
    EXPECT_EQ(parts_of(b), (parts{part::begin, part::rows, part::sync}));
}

TEST(pg_send_plan, a_cached_statement_with_nothing_else_to_send_is_bind_execute_sync_alone) {
    const prepared cached{"respool_7", false};
    const send_plan p = plan_send(bound("SELECT $1", &cached));
    EXPECT_EQ(p.path, send_path::cached);
    EXPECT_FALSE(p.pipeline);
    EXPECT_FALSE(p.prepare);
    EXPECT_EQ(parts_of(p), (parts{part::rows}));
}

TEST(pg_send_plan, a_new_statement_is_prepared_in_the_round_trip_that_runs_it) {
    const send_plan p = plan_send(bound("SELECT $1"));
    EXPECT_EQ(p.path, send_path::pipeline);
    EXPECT_TRUE(p.pipeline);
    EXPECT_TRUE(p.prepare);
    EXPECT_FALSE(p.evicts);
    EXPECT_EQ(parts_of(p), (parts{part::prepare, part::rows, part::sync}));
}

TEST(pg_send_plan, deallocations_follow_a_second_sync_so_the_callers_result_is_untouched) {
    const prepared cached{"respool_1", false};
    send_inputs in = bound("SELECT $1", &cached);
    in.deallocations_pending = 2;
    in.begin_pending = true;
    const send_plan p = plan_send(in);
    EXPECT_EQ(p.path, send_path::pipeline);
    EXPECT_FALSE(p.prepare);
    EXPECT_EQ(p.deallocations, 2u);
    EXPECT_EQ(parts_of(p),
              (parts{part::begin, part::rows, part::sync, part::deallocate, part::deallocate, part::sync}));
}

TEST(pg_send_plan, a_full_cache_evicts_one_and_deallocates_it_in_the_same_round_trip) {
    send_inputs in = bound("SELECT $1");
    in.cache_full = true;
    in.deallocations_pending = 1;
    const send_plan p = plan_send(in);
    EXPECT_TRUE(p.prepare);
    EXPECT_TRUE(p.evicts);
    EXPECT_EQ(p.deallocations, 2u);
    EXPECT_EQ(parts_of(p),
              (parts{part::prepare, part::rows, part::sync, part::deallocate, part::deallocate, part::sync}));
    // The cache's side agrees: the oldest statement leaves, its name joins those to deallocate.
    statement_cache cache(2);
    cache.insert("a", {cache.next_name(), false});
    cache.insert("b", {cache.next_name(), false});
    ASSERT_EQ(cache.size(), cache.capacity());  // what cache_full says
    std::vector<std::string> to_deallocate{"respool_0"};
    const std::string name = reserve_statement(cache, to_deallocate);
    EXPECT_EQ(name, "respool_3");
    EXPECT_EQ(to_deallocate, (std::vector<std::string>{"respool_0", "respool_1"}));
    EXPECT_EQ(to_deallocate.size(), p.deallocations);
    EXPECT_EQ(cache.find("a"), nullptr);
    EXPECT_NE(cache.find("b"), nullptr);
}

TEST(pg_send_plan, reserving_with_room_evicts_nothing) {
    statement_cache cache(4);
    cache.insert("a", {cache.next_name(), false});
    std::vector<std::string> to_deallocate;
    EXPECT_EQ(reserve_statement(cache, to_deallocate), "respool_2");
    EXPECT_TRUE(to_deallocate.empty());
    EXPECT_EQ(cache.size(), 1u);  // inserted only once the server has prepared it
}

TEST(pg_send_plan, copy_streams_are_refused_before_anything_is_planned) {
    for (const char* sql : {"COPY t FROM STDIN", "copy t to stdout", "/* x */ COPY (SELECT 1) TO STDOUT"}) {
        for (const bool has_params : {false, true}) {
            send_inputs in = bound(sql);
            in.bound = has_params;
            in.begin_pending = true;
            const send_plan p = plan_send(in);
            EXPECT_TRUE(p.refuse) << sql;
            EXPECT_TRUE(p.parts.empty()) << sql;
            EXPECT_FALSE(p.prepare) << sql;
        }
    }
    EXPECT_FALSE(plan_send(bound("COPY t FROM '/tmp/x'")).refuse);  // the server reads the file itself
}

TEST(pg_send_plan, the_text_is_scanned_for_session_effects_unless_the_cache_knows_them) {
    const send_plan fresh = plan_send(bound("SELECT set_config('x.y', $1, false)"));
    EXPECT_TRUE(fresh.session_dirty);
    EXPECT_TRUE(fresh.facts.session_effects);  // remembered with the statement once prepared
    EXPECT_FALSE(plan_send(bound("SELECT $1")).session_dirty);
    // A cached statement is not read again: its entry says what its text said.
    const prepared with_effects{"respool_1", true};
    EXPECT_TRUE(plan_send(bound("SELECT $1", &with_effects)).session_dirty);
    const prepared without{"respool_2", false};
    const send_plan cached = plan_send(bound("SELECT pg_advisory_lock($1)", &without));
    EXPECT_FALSE(cached.session_dirty);
    EXPECT_FALSE(cached.facts.session_effects);
}

TEST(pg_send_plan, a_failed_deallocate_is_sent_again_unless_the_statement_is_gone) {
    EXPECT_TRUE(deallocate_again(true, ""));        // skipped by an aborted pipeline
    EXPECT_TRUE(deallocate_again(false, "25P02"));  // in a failed transaction
    EXPECT_TRUE(deallocate_again(false, ""));       // no SQLSTATE: try again
    EXPECT_FALSE(deallocate_again(false, "26000"));
}

TEST(pg_send_plan, a_stale_cached_statement_is_forgotten_and_run_again_once_outside_a_transaction) {
    stale_inputs in{.cache_mode = true, .plan_changed = true, .idle_before = true};
    stale_decision d = on_stale_statement(in);
    EXPECT_TRUE(d.forget);
    EXPECT_TRUE(d.deallocate_old);  // the server still holds the stale copy
    EXPECT_TRUE(d.retry);
    in.retried = true;  // once only
    d = on_stale_statement(in);
    EXPECT_TRUE(d.forget);
    EXPECT_FALSE(d.retry);
    in = {.cache_mode = true, .statement_missing = true, .idle_before = true};
    d = on_stale_statement(in);
    EXPECT_TRUE(d.forget);
    EXPECT_FALSE(d.deallocate_old);  // gone from the server already
    EXPECT_TRUE(d.retry);
    in.idle_before = false;  // in a transaction the error aborted it: the caller decides
    d = on_stale_statement(in);
    EXPECT_TRUE(d.forget);
    EXPECT_FALSE(d.retry);
}

TEST(pg_send_plan, other_failures_cancellations_and_the_unnamed_mode_leave_the_cache_alone) {
    const stale_decision none{};
    auto same = [&](const stale_decision& d) {
        return d.forget == none.forget && d.deallocate_old == none.deallocate_old && d.retry == none.retry;
    };
    EXPECT_TRUE(same(on_stale_statement({.cache_mode = true, .idle_before = true})));  // another error
    EXPECT_TRUE(same(on_stale_statement(
        {.cache_mode = true, .cancelled = true, .plan_changed = true, .idle_before = true})));
    EXPECT_TRUE(same(on_stale_statement({.cache_mode = false, .plan_changed = true, .idle_before = true})));
}

TEST(pg_send_plan, transaction_control_texts_are_known_exactly) {
    EXPECT_EQ(control_index("BEGIN"), 0);
    EXPECT_EQ(control_texts[std::size_t(control_index("COMMIT"))], "COMMIT");
    EXPECT_EQ(control_texts[std::size_t(control_index("ROLLBACK"))], "ROLLBACK");
    EXPECT_GE(control_index("BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"), 0);
    for (const char* other : {"", "begin", "COMMIT;", " COMMIT", "COMMIT AND CHAIN", "ROLLBACK TO s",
                              "SELECT 1", "BEGIN; SELECT 1", "END"})
        EXPECT_EQ(control_index(other), -1) << other;
}

TEST(pg_send_plan, a_transaction_control_statement_is_prepared_once_then_runs_by_name) {
    send_inputs in;
    in.sql = "COMMIT";
    in.named = true;
    in.control = control_index("COMMIT");
    const send_plan first = plan_send(in);  // Parse, Bind/Execute, Sync
    EXPECT_EQ(first.path, send_path::control);
    EXPECT_TRUE(first.pipeline);
    EXPECT_EQ(first.control, in.control);
    EXPECT_EQ(first.prepare_control, in.control);
    EXPECT_EQ(parts_of(first), (parts{part::prepare_control, part::rows, part::sync}));
    in.control_prepared = true;  // Bind/Execute/Sync alone
    const send_plan then = plan_send(in);
    EXPECT_EQ(then.path, send_path::control);
    EXPECT_FALSE(then.pipeline);
    EXPECT_EQ(then.prepare_control, -1);
    EXPECT_EQ(parts_of(then), (parts{part::rows}));
    in.named = false;  // statement_mode::unnamed (a transaction pooler): the text, as before
    EXPECT_EQ(plan_send(in).path, send_path::simple);
    in.named = true;
    in.begin_pending = true;  // one script with the BEGIN in front
    EXPECT_EQ(plan_send(in).path, send_path::simple);
}

TEST(pg_send_plan, a_deferred_begin_goes_by_name_prepared_in_the_first_transactions_round_trip) {
    const prepared cached{"respool_1", false};
    send_inputs in = bound("UPDATE t SET n = n + 1 WHERE id = $1", &cached);
    in.named = true;
    in.begin_pending = true;
    in.begin_control = control_index("BEGIN");
    const send_plan first = plan_send(in);
    EXPECT_EQ(first.path, send_path::pipeline);
    EXPECT_EQ(first.begin_control, in.begin_control);
    EXPECT_EQ(first.prepare_control, in.begin_control);
    EXPECT_EQ(parts_of(first), (parts{part::prepare_control, part::begin, part::rows, part::sync}));
    in.begin_control_prepared = true;
    const send_plan then = plan_send(in);
    EXPECT_EQ(then.begin_control, in.begin_control);
    EXPECT_EQ(then.prepare_control, -1);
    EXPECT_EQ(parts_of(then), (parts{part::begin, part::rows, part::sync}));
    in.begin_control = -1;  // a BEGIN of other words: as text
    EXPECT_EQ(plan_send(in).begin_control, -1);
}

TEST(pg_send_plan, the_control_statements_names_are_new_each_time_and_forgotten_with_the_cache) {
    statement_cache cache(4);
    const int commit = control_index("COMMIT");
    EXPECT_TRUE(cache.control_name(commit).empty());
    cache.control_prepared(commit, cache.next_name());
    EXPECT_EQ(cache.control_name(commit), "respool_1");
    EXPECT_EQ(cache.size(), 0u) << "outside the cache's capacity";
    // A DEALLOCATE by hand: prepared again under a new name (the reset on return drops the old one).
    cache.forget_controls();
    EXPECT_TRUE(cache.control_name(commit).empty());
    cache.control_prepared(commit, cache.next_name());
    EXPECT_EQ(cache.control_name(commit), "respool_2");
    cache.clear();  // DEALLOCATE ALL, DISCARD ALL, a new session: gone on the server too
    EXPECT_TRUE(cache.control_name(commit).empty());
    cache.control_prepared(commit, cache.next_name());
    cache.forget_control(commit);  // the server said 26000
    EXPECT_TRUE(cache.control_name(commit).empty());
}
