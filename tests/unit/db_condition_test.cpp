// The database-neutral conditions (respool::db::condition): each code of respool, respool::pg and
// respool::sqlite matches exactly the conditions it means, and no other; the neutral conditions agree
// with pg::condition and sqlite::condition where both name the same meaning.
#include <respool/db_condition.hpp>
#include <respool/pg/errors.hpp>
#include <respool/sqlite/errors.hpp>

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>

#include <set>
#include <string>
#include <vector>

namespace {

namespace pg = respool::pg;
namespace sqlite = respool::sqlite;
using respool::errc;
using respool::error_code;
using respool::db::condition;
using c = condition;

constexpr condition all[] = {
    c::unavailable,
    c::connection_broken,
    c::busy,
    c::statement_timeout,
    c::serialization_failure,
    c::constraint_violation,
    c::unique_violation,
    c::foreign_key_violation,
    c::not_null_violation,
    c::check_violation,
    c::read_only,
    c::invalid_statement,
    c::operation_in_progress,
    c::exhausted,
    c::closed,
    c::cancelled,
    c::database_error,
};

std::set<condition> matched(const error_code& ec) {
    std::set<condition> out;
    for (const condition x : all)
        if (ec == x) out.insert(x);
    return out;
}

std::string names(const std::set<condition>& s) {
    std::string out;
    for (const condition x : s) out += respool::db::make_error_condition(x).message() + "; ";
    return out;
}

struct row {
    error_code ec;
    std::set<condition> means;
};

void expect_rows(const std::vector<row>& rows) {
    for (const auto& r : rows) {
        const auto got = matched(r.ec);
        EXPECT_EQ(got, r.means) << r.ec.category().name() << ':' << r.ec.value() << " (" << r.ec.message()
                                << ") matches [" << names(got) << "], expected [" << names(r.means) << ']';
    }
}

TEST(db_condition, every_pool_error_means_what_it_says) {
    expect_rows({
        {errc::closed, {c::closed}},
        {errc::timeout, {c::exhausted}},
        {errc::exhausted, {c::exhausted}},
        {errc::cancelled, {c::cancelled}},
        {errc::unavailable, {c::unavailable}},  // the circuit is open
        {errc::create_failed, {c::unavailable}},
        {errc::hook_timeout, {c::unavailable}},
        {errc::broken, {}},
        {errc::poisoned, {}},
        {errc::not_supported, {}},
    });
}

TEST(db_condition, every_pg_error_means_what_it_says) {
    expect_rows({
        {pg::error::bad_connection_string, {}},
        {pg::error::connect_failed, {c::unavailable, c::connection_broken}},
        {pg::error::authentication_failed, {c::unavailable}},
        {pg::error::connect_timeout, {c::unavailable, c::connection_broken}},
        {pg::error::connection_broken, {c::unavailable, c::connection_broken}},
        {pg::error::not_connected, {c::unavailable}},
        {pg::error::busy, {c::operation_in_progress}},  // never busy: that is a lock held elsewhere
        {pg::error::statement_timeout, {c::statement_timeout}},
        {pg::error::unsupported_statement, {c::invalid_statement}},
        {pg::error::copy_aborted, {}},  // the caller's own code threw: no condition of the pool's
    });
}

TEST(db_condition, sqlstates_mean_their_class) {
    const auto db = c::database_error;
    expect_rows({
        {pg::sqlstate_error("08006"), {db, c::unavailable, c::connection_broken}},  // connection_failure
        {pg::sqlstate_error("08001"), {db, c::unavailable, c::connection_broken}},
        {pg::sqlstate_error("08P01"), {db, c::unavailable, c::connection_broken}},  // protocol_violation
        {pg::sqlstate_error("57P01"), {db, c::unavailable, c::connection_broken}},  // admin_shutdown
        {pg::sqlstate_error("57P02"), {db, c::unavailable, c::connection_broken}},  // crash_shutdown
        {pg::sqlstate_error("57P03"), {db, c::unavailable, c::connection_broken}},  // cannot_connect_now
        {pg::sqlstate_error("28P01"), {db, c::unavailable}},                        // invalid_password
        {pg::sqlstate_error("28000"), {db, c::unavailable}},
        {pg::sqlstate_error("53300"), {db, c::unavailable}},                // too_many_connections
        {pg::sqlstate_error("25006"), {db, c::unavailable, c::read_only}},  // read-only: a failover
        {pg::sqlstate_error("57014"), {db, c::statement_timeout}},          // query_canceled
        {pg::sqlstate_error("40001"), {db, c::serialization_failure}},
        {pg::sqlstate_error("40P01"), {db, c::serialization_failure}},  // deadlock_detected
        {pg::sqlstate_error("23505"), {db, c::constraint_violation, c::unique_violation}},
        {pg::sqlstate_error("23503"), {db, c::constraint_violation, c::foreign_key_violation}},
        {pg::sqlstate_error("23502"), {db, c::constraint_violation, c::not_null_violation}},
        {pg::sqlstate_error("23514"), {db, c::constraint_violation, c::check_violation}},
        {pg::sqlstate_error("23P01"), {db, c::constraint_violation}},  // exclusion_violation
        {pg::sqlstate_error("42601"), {db, c::invalid_statement}},     // syntax_error
        {pg::sqlstate_error("42P01"), {db, c::invalid_statement}},     // undefined_table
        {pg::sqlstate_error("22P02"), {db, c::invalid_statement}},     // invalid_text_representation
        {pg::sqlstate_error("42501"), {db}},  // insufficient_privilege: the statement is fine
        {pg::sqlstate_error("55P03"), {db}},  // lock_not_available: not busy
        {pg::sqlstate_error("53100"), {db}},  // disk_full
        {pg::sqlstate_error("57000"), {db}},  // operator_intervention
        {pg::sqlstate_error("40002"), {db}},  // transaction_integrity_constraint_violation: no retry
        {pg::sqlstate_error("XX000"), {db}},  // internal_error
    });
}

TEST(db_condition, every_sqlite_error_means_what_it_says) {
    expect_rows({
        {sqlite::error::statement_timeout, {c::statement_timeout}},
        {sqlite::error::not_open, {c::unavailable, c::connection_broken}},
        {sqlite::error::operation_in_progress, {c::operation_in_progress}},
        {sqlite::error::writes_on_reader, {c::read_only}},
        {sqlite::error::multiple_statements, {c::invalid_statement}},
        {sqlite::error::parameter_count, {c::invalid_statement}},
        {sqlite::error::session_not_restorable, {}},
    });
}

TEST(db_condition, sqlite_result_codes_mean_their_primary_code) {
    const auto db = c::database_error;
    const auto r = sqlite::from_result_code;
    expect_rows({
        {r(5), {db, c::busy}},                                 // SQLITE_BUSY
        {r(517), {db, c::busy, c::serialization_failure}},     // SQLITE_BUSY_SNAPSHOT
        {r(6), {db, c::busy}},                                 // SQLITE_LOCKED
        {r(262), {db, c::busy}},                               // SQLITE_LOCKED_SHAREDCACHE
        {r(14), {db, c::unavailable, c::connection_broken}},   // SQLITE_CANTOPEN
        {r(526), {db, c::unavailable, c::connection_broken}},  // SQLITE_CANTOPEN_ISDIR
        {r(10), {db, c::unavailable, c::connection_broken}},   // SQLITE_IOERR
        {r(266), {db, c::unavailable, c::connection_broken}},  // SQLITE_IOERR_READ
        {r(11), {db, c::connection_broken}},  // SQLITE_CORRUPT: broken, but no retry mends it
        {r(26), {db, c::connection_broken}},  // SQLITE_NOTADB
        {r(9), {db, c::statement_timeout}},   // SQLITE_INTERRUPT
        {r(2067), {db, c::constraint_violation, c::unique_violation}},      // SQLITE_CONSTRAINT_UNIQUE
        {r(1555), {db, c::constraint_violation, c::unique_violation}},      // SQLITE_CONSTRAINT_PRIMARYKEY
        {r(787), {db, c::constraint_violation, c::foreign_key_violation}},  // SQLITE_CONSTRAINT_FOREIGNKEY
        {r(1299), {db, c::constraint_violation, c::not_null_violation}},    // SQLITE_CONSTRAINT_NOTNULL
        {r(275), {db, c::constraint_violation, c::check_violation}},        // SQLITE_CONSTRAINT_CHECK
        {r(19), {db, c::constraint_violation}},                             // SQLITE_CONSTRAINT
        {r(8), {db, c::read_only}},                                         // SQLITE_READONLY
        {r(1032), {db, c::read_only}},                                      // SQLITE_READONLY_DBMOVED
        {r(1), {db, c::invalid_statement}},                                 // SQLITE_ERROR
        {r(25), {db, c::invalid_statement}},                                // SQLITE_RANGE
        {r(20), {db, c::invalid_statement}},                                // SQLITE_MISMATCH
        {r(13), {db}},                                                      // SQLITE_FULL
    });
}

TEST(db_condition, a_cancelled_operation_is_cancelled_and_other_codes_mean_nothing) {
    expect_rows({
        {boost::asio::error::operation_aborted, {c::cancelled}},
        {boost::asio::error::connection_refused, {}},
        {boost::asio::error::timed_out, {}},
        {error_code{}, {}},
    });
}

// Where pg::condition or sqlite::condition has the same name as a neutral condition, the two match the
// same codes: a service may switch from one vocabulary to the other without a change of meaning.
TEST(db_condition, the_neutral_conditions_agree_with_the_database_s_own) {
    std::vector<error_code> pg_codes;
    for (int e = 1; e <= static_cast<int>(pg::error::copy_aborted); ++e)
        pg_codes.push_back(static_cast<pg::error>(e));
    for (const char* s : {"08006", "08P01", "57P01", "57P03", "28P01", "25006", "57014", "40001", "40P01",
                          "23505", "23503", "23502", "23514", "23P01", "42601", "42P01", "42501", "XX000"})
        pg_codes.push_back(pg::sqlstate_error(s));
    for (const error_code& ec : pg_codes) {
        SCOPED_TRACE(ec.message());
        EXPECT_EQ(ec == pg::condition::connection_broken, ec == c::connection_broken);
        EXPECT_EQ(ec == pg::condition::unique_violation, ec == c::unique_violation);
        EXPECT_EQ(ec == pg::condition::foreign_key_violation, ec == c::foreign_key_violation);
        EXPECT_EQ(ec == pg::condition::not_null_violation, ec == c::not_null_violation);
        EXPECT_EQ(ec == pg::condition::check_violation, ec == c::check_violation);
        EXPECT_EQ(ec == pg::condition::read_only, ec == c::read_only);
        EXPECT_EQ(ec == pg::condition::serialization_failure || ec == pg::condition::deadlock,
                  ec == c::serialization_failure);
    }

    std::vector<error_code> sqlite_codes;
    for (int e = static_cast<int>(sqlite::error::statement_timeout);
         e <= static_cast<int>(sqlite::error::session_not_restorable); ++e)
        sqlite_codes.push_back(static_cast<sqlite::error>(e));
    for (const int rc : {1,  5,   6,   8,   9,   10,  11,  13,   14,   19,   20,  25,
                         26, 262, 266, 275, 517, 526, 787, 1032, 1299, 1555, 2067})
        sqlite_codes.push_back(sqlite::from_result_code(rc));
    for (const error_code& ec : sqlite_codes) {
        SCOPED_TRACE(ec.message());
        EXPECT_EQ(ec == sqlite::condition::connection_broken, ec == c::connection_broken);
        EXPECT_EQ(ec == sqlite::condition::unique_violation, ec == c::unique_violation);
        EXPECT_EQ(ec == sqlite::condition::foreign_key_violation, ec == c::foreign_key_violation);
        EXPECT_EQ(ec == sqlite::condition::not_null_violation, ec == c::not_null_violation);
        EXPECT_EQ(ec == sqlite::condition::check_violation, ec == c::check_violation);
        EXPECT_EQ(ec == sqlite::condition::constraint_violation, ec == c::constraint_violation);
        EXPECT_EQ(ec == sqlite::condition::busy, ec == c::busy);
        EXPECT_EQ(ec == sqlite::condition::read_only, ec == c::read_only);
    }
}

TEST(db_condition, each_condition_has_a_name_and_words) {
    for (const condition x : all) {
        const auto cond = respool::db::make_error_condition(x);
        EXPECT_STREQ(cond.category().name(), "respool.db.condition");
        EXPECT_NE(cond.message().find_first_not_of(' '), std::string::npos);
        EXPECT_EQ(cond.message().find("unknown"), std::string::npos) << static_cast<int>(x);
    }
}

}  // namespace
