// respool::pg's values without a server: the bytes and types pg::params sends for every integer type,
// durations and arrays (and what it refuses), and the reading side of pg::result (by name, row views,
// one/scalar, structs by name and by position) over results made in memory with libpq's own
// PQmakeEmptyPGresult, so each error message is checked exactly where it is built.
#include "wire_access.hpp"

#include <boost/describe/class.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pg = respool::pg;
using namespace std::chrono_literals;

namespace {

template <class E, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw another type: " << e.what();
        return {};
    }
    ADD_FAILURE() << "did not throw";
    return {};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The type and bytes of parameter `i`.
struct sent {
    Oid type;
    std::string bytes;
};
sent param(const pg::params& p, std::size_t i) {
    pg::params_access a(p);
    return {a.types()[i], std::string(a.values[i], static_cast<std::size_t>(a.lengths()[i]))};
}

std::string be(std::uint64_t v, int bytes) {
    std::string s;
    for (int i = bytes - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return s;
}

// A result made in memory: columns (name, type OID) and rows of text fields (nullopt = NULL).
pg::result make(const std::vector<std::pair<std::string, Oid>>& columns,
                const std::vector<std::vector<std::optional<std::string>>>& rows) {
    PGresult* r = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
    std::vector<PGresAttDesc> desc(columns.size());
    for (std::size_t c = 0; c < columns.size(); ++c) {
        desc[c] = PGresAttDesc{};
        desc[c].name = const_cast<char*>(columns[c].first.c_str());
        desc[c].typid = columns[c].second;
        desc[c].typlen = -1;
        desc[c].atttypmod = -1;
    }
    EXPECT_EQ(PQsetResultAttrs(r, static_cast<int>(desc.size()), desc.data()), 1);
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t c = 0; c < rows[i].size(); ++c) {
            const auto& v = rows[i][c];
            EXPECT_EQ(
                PQsetvalue(r, static_cast<int>(i), static_cast<int>(c),
                           v ? const_cast<char*>(v->c_str()) : nullptr, v ? static_cast<int>(v->size()) : -1),
                1);
        }
    return pg::result_access::adopt(r);
}

constexpr Oid int4 = 23, int8 = 20, text = 25, float8 = 701;

struct user {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::string> note;
};
BOOST_DESCRIBE_STRUCT(user, (), (id, name, note))

struct point {  // no description: filled by position
    int x = 0;
    double y = 0;
};

}  // namespace

TEST(pg_params, every_integer_type_binds_as_the_smallest_server_integer_that_holds_it) {
    pg::params p(1LL, 2u, std::size_t{3}, std::uint64_t{4}, std::uint16_t{5}, std::uint8_t{6},
                 std::int8_t{-7}, -8L, short{9});
    EXPECT_EQ(param(p, 0).type, 20u);  // long long: int8
    EXPECT_EQ(param(p, 0).bytes, be(1, 8));
    EXPECT_EQ(param(p, 1).type, 20u);  // unsigned: int8 holds all of it, int4 does not
    EXPECT_EQ(param(p, 1).bytes, be(2, 8));
    EXPECT_EQ(param(p, 2).type, 20u);
    EXPECT_EQ(param(p, 3).type, 20u);
    EXPECT_EQ(param(p, 4).type, 23u);  // uint16: int4
    EXPECT_EQ(param(p, 4).bytes, be(5, 4));
    EXPECT_EQ(param(p, 5).type, 21u);  // uint8: int2
    EXPECT_EQ(param(p, 6).type, 21u);
    EXPECT_EQ(param(p, 6).bytes, be(static_cast<std::uint16_t>(-7), 2));
    EXPECT_EQ(param(p, 7).type, 20u);
    EXPECT_EQ(param(p, 8).type, 21u);
    EXPECT_EQ(param(pg::params(std::uint64_t{9223372036854775807u}), 0).bytes, be(9223372036854775807u, 8));
}

TEST(pg_params, a_move_takes_the_values_a_copy_duplicates_them_and_clear_empties_them) {
    pg::params p(std::int32_t{7}, std::string_view("seven"));
    const pg::params copy = p;
    pg::params moved = std::move(p);
    EXPECT_EQ(p.size(), 0u) << "moved from: empty";  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(pg::params_access(p).types(), nullptr);
    ASSERT_EQ(moved.size(), 2u);
    EXPECT_EQ(param(moved, 0).bytes, be(7, 4));
    EXPECT_EQ(std::string(pg::params_access(moved).values[1]), "seven");
    ASSERT_EQ(copy.size(), 2u);
    EXPECT_NE(pg::params_access(copy).types(), pg::params_access(moved).types()) << "values of its own";
    EXPECT_EQ(std::string(pg::params_access(copy).values[1]), "seven");

    const Oid* block = pg::params_access(moved).types();
    moved.clear();
    EXPECT_EQ(moved.size(), 0u);
    moved.add(std::int64_t{8});
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(param(moved, 0).type, 20u);
    EXPECT_EQ(param(moved, 0).bytes, be(8, 8));
    EXPECT_EQ(pg::params_access(moved).types(), block) << "clear keeps the memory for the next values";
    EXPECT_EQ(pg::params().size(), 0u);
    EXPECT_EQ(pg::params_access(pg::params()).types(), nullptr) << "no parameters, no allocation";
}

TEST(pg_params, an_unsigned_value_above_int8_is_refused_naming_it) {
    pg::params p(1);
    const std::string m = message_of<std::out_of_range>([&] { p.add(std::uint64_t{18446744073709551615u}); });
    EXPECT_TRUE(contains(m, "parameter $2")) << m;
    EXPECT_TRUE(contains(m, "18446744073709551615")) << m;
    EXPECT_EQ(p.size(), 1u) << "nothing half-added";
    const std::vector<std::uint64_t> many{1, 9223372036854775808u};
    const std::string a = message_of<std::out_of_range>([&] { p.add(many); });
    EXPECT_TRUE(contains(a, "9223372036854775808")) << a;
    EXPECT_EQ(p.size(), 1u);
}

TEST(pg_params, durations_bind_as_an_interval_of_microseconds) {
    pg::params p(1500ms, -2h, std::chrono::nanoseconds(3000), std::chrono::microseconds(7));
    EXPECT_EQ(param(p, 0).type, 1186u);
    EXPECT_EQ(param(p, 0).bytes, be(1500000, 8) + be(0, 4) + be(0, 4));  // microseconds, days, months
    EXPECT_EQ(param(p, 1).bytes, be(static_cast<std::uint64_t>(-7200000000LL), 8) + be(0, 8));
    EXPECT_EQ(param(p, 2).bytes, be(3, 8) + be(0, 8));
    EXPECT_EQ(param(p, 3).bytes, be(7, 8) + be(0, 8));
    const std::string f = message_of<std::invalid_argument>([&] { p.add(std::chrono::nanoseconds(1500)); });
    EXPECT_TRUE(contains(f, "parameter $5")) << f;
    EXPECT_TRUE(contains(f, "1500 x 1/1000000000 s")) << f;
    EXPECT_TRUE(contains(f, "fraction of a microsecond")) << f;
    const std::string o = message_of<std::out_of_range>(
        [&] { p.add(std::chrono::hours(std::numeric_limits<std::int64_t>::max() / 1000)); });
    EXPECT_TRUE(contains(o, "beyond what an interval holds")) << o;
    EXPECT_EQ(p.size(), 4u);
}

TEST(pg_params, vectors_and_spans_bind_as_one_dimensional_arrays) {
    const std::vector<int> ints{1, -2};
    const std::vector<std::string> words{"a", "bc"};
    const std::string_view views[] = {"x"};
    const std::vector<std::int64_t> none;
    pg::params p(ints, words, std::span<const std::string_view>(views), none, std::vector<unsigned>{7});
    EXPECT_EQ(param(p, 0).type, 1007u);  // int4[]
    EXPECT_EQ(param(p, 0).bytes, be(1, 4) + be(0, 4) + be(23, 4) + be(2, 4) + be(1, 4) + be(4, 4) + be(1, 4) +
                                     be(4, 4) + be(static_cast<std::uint32_t>(-2), 4));
    EXPECT_EQ(param(p, 1).type, 1009u);  // text[]
    EXPECT_EQ(param(p, 1).bytes,
              be(1, 4) + be(0, 4) + be(25, 4) + be(2, 4) + be(1, 4) + be(1, 4) + "a" + be(2, 4) + "bc");
    EXPECT_EQ(param(p, 2).type, 1009u);
    EXPECT_EQ(param(p, 3).type, 1016u);  // int8[], empty: no dimensions
    EXPECT_EQ(param(p, 3).bytes, be(0, 4) + be(0, 4) + be(20, 4));
    EXPECT_EQ(param(p, 4).type, 1016u);  // unsigned elements as int8, like an unsigned parameter
    const std::vector<std::string> nul{"ok", std::string("a\0b", 3)};
    const std::string m = message_of<std::invalid_argument>([&] { p.add(nul); });
    EXPECT_TRUE(contains(m, "array parameter $6 element 1 holds a NUL byte")) << m;
}

TEST(pg_result, columns_by_name_and_rows_to_iterate) {
    const pg::result r = make({{"id", int8}, {"name", text}}, {{"1", "ada"}, {"2", "grace"}});
    EXPECT_EQ(r.column("name"), 1u);
    EXPECT_EQ(r.get<std::string>(1, "name"), "grace");
    std::vector<std::string> seen;
    for (pg::row row : r)
        seen.push_back(std::to_string(row.get<std::int64_t>("id")) + row.get<std::string>(1));
    EXPECT_EQ(seen, (std::vector<std::string>{"1ada", "2grace"}));
    EXPECT_EQ(r.row(1).text("name"), "grace");
    const std::string m = message_of<std::out_of_range>([&] { (void)r.get<int>(0, "nmae"); });
    EXPECT_EQ(m, "respool::pg::result: no column \"nmae\" (the columns are: \"id\", \"name\")");
    const std::string n = message_of<std::out_of_range>([&] { (void)r.row(2); });
    EXPECT_EQ(n, "respool::pg::result: no row 2 (the result has 2)");
}

TEST(pg_result, other_integer_types_read_as_int8_and_must_fit) {
    const pg::result r = make({{"n", int8}, {"neg", int4}}, {{"4294967296", "-1"}});
    EXPECT_EQ(r.get<std::uint64_t>(0, 0), 4294967296u);
    EXPECT_EQ(r.get<long long>(0, 0), 4294967296LL);
    EXPECT_EQ(r.get<std::optional<unsigned long>>(0, 0), 4294967296u);
    const std::string m = message_of<std::out_of_range>([&] { (void)r.get<unsigned>(0, 0); });
    EXPECT_EQ(
        m,
        "respool::pg::result: column \"n\" holds 4294967296, which does not fit an unsigned 32-bit integer");
    const std::string neg = message_of<std::out_of_range>([&] { (void)r.get<std::size_t>(0, "neg"); });
    EXPECT_TRUE(contains(neg, "column \"neg\" holds -1, which does not fit an unsigned 64-bit integer"))
        << neg;
}

TEST(pg_result, one_and_scalar_say_how_many_rows_there_were) {
    const pg::result none = make({{"n", int4}}, {});
    const pg::result three = make({{"n", int4}}, {{"1"}, {"2"}, {"3"}});
    const pg::result wide = make({{"a", int4}, {"b", int4}}, {{"1", "2"}});
    const pg::result single = make({{"count", int8}}, {{"42"}});
    EXPECT_EQ(single.scalar<std::int64_t>(), 42);
    EXPECT_EQ(single.one().get<int>("count"), 42);
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)none.one(); }),
              "respool::pg::result: expected exactly one row, the statement returned no rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)three.one(); }),
              "respool::pg::result: expected exactly one row, the statement returned 3 rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)none.scalar<int>(); }),
              "respool::pg::result: expected one row of one column, the statement returned no rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)three.scalar<int>(); }),
              "respool::pg::result: expected one row of one column, the statement returned 3 rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)wide.scalar<int>(); }),
              "respool::pg::result: expected one row of one column, the statement returned 2 columns");
}

TEST(pg_result, described_structs_are_filled_by_name) {
    const pg::result r = make({{"extra", text}, {"name", text}, {"note", text}, {"id", int8}},
                              {{"x", "ada", std::nullopt, "1"}, {"y", "grace", "admiral", "2"}});
    const std::vector<user> users = r.all<user>();
    ASSERT_EQ(users.size(), 2u);
    EXPECT_EQ(users[0].id, 1);
    EXPECT_EQ(users[0].name, "ada");
    EXPECT_EQ(users[0].note, std::nullopt);
    EXPECT_EQ(users[1].note, "admiral");
    EXPECT_EQ(r.row(1).as<user>().name, "grace");
}

TEST(pg_result, struct_errors_name_the_column_the_struct_and_the_types) {
    const pg::result missing = make({{"id", int8}, {"nam", text}}, {{"1", "ada"}});
    const std::string m = message_of<std::out_of_range>([&] { (void)missing.one<user>(); });
    EXPECT_TRUE(contains(m, "no column \"name\" for the member of struct ")) << m;
    EXPECT_TRUE(contains(m, "user")) << m;
    EXPECT_TRUE(contains(m, "the columns are: \"id\", \"nam\"")) << m;

    const pg::result null_name =
        make({{"id", int8}, {"name", text}, {"note", text}}, {{"1", std::nullopt, "n"}});
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)null_name.one<user>(); }),
              "respool::pg::result: column \"name\" is NULL (read it as std::optional)");

    const pg::result wrong = make({{"id", text}, {"name", text}, {"note", text}}, {{"seven", "ada", "n"}});
    EXPECT_EQ(
        message_of<std::invalid_argument>([&] { (void)wrong.one<user>(); }),
        "respool::pg::result: column \"id\" (text) holds \"seven\", not a 64-bit integer (std::int64_t)");
}

TEST(pg_result, other_aggregates_are_filled_by_position) {
    const pg::result r = make({{"a", int4}, {"b", float8}}, {{"3", "0.5"}});
    const point p = r.one<point>();
    EXPECT_EQ(p.x, 3);
    EXPECT_EQ(p.y, 0.5);
    const pg::result three = make({{"a", int4}, {"b", float8}, {"c", int4}}, {{"3", "0.5", "1"}});
    const std::string m = message_of<std::logic_error>([&] { (void)three.one<point>(); });
    EXPECT_TRUE(contains(m, "point has 2 fields and the result 3 columns")) << m;
    EXPECT_TRUE(contains(m, "filled by position")) << m;
}

TEST(pg_result, intervals_read_as_durations_exactly) {
    constexpr Oid interval = 1186;
    const pg::result r =
        make({{"a", interval},
              {"b", interval},
              {"c", interval},
              {"d", interval},
              {"e", interval},
              {"f", interval}},
             {{"36:00:01.5", "-00:00:00.000001", "3 days", "-1 days +02:00:00", "1 mon", "P1D"}});
    EXPECT_EQ(r.get<std::chrono::microseconds>(0, "a"), 36h + 1500ms);
    EXPECT_EQ(r.get<std::chrono::milliseconds>(0, "a"), 36h + 1500ms);
    EXPECT_EQ(r.get<std::chrono::nanoseconds>(0, "b"), -1us);
    EXPECT_EQ(r.get<std::chrono::hours>(0, "c"), 72h) << "a day of an interval counts 24 hours";
    EXPECT_EQ(r.get<std::chrono::seconds>(0, "d"), -22h);
    EXPECT_EQ(
        message_of<std::out_of_range>([&] { (void)r.get<std::chrono::seconds>(0, "a"); }),
        "respool::pg::result: column \"a\" holds 129601500000 microseconds, which a duration of 1/1 s ticks "
        "cannot hold exactly; read a finer one (std::chrono::microseconds)");
    const std::string months =
        message_of<std::invalid_argument>([&] { (void)r.get<std::chrono::seconds>(0, "e"); });
    EXPECT_TRUE(contains(months, "column \"e\" (interval) holds \"1 mon\", not an interval of days and time"))
        << months;
    EXPECT_TRUE(
        contains(message_of<std::invalid_argument>([&] { (void)r.get<std::chrono::seconds>(0, "f"); }),
                 "holds \"P1D\""));
}
