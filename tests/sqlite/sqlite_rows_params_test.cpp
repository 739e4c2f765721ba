// sqlite::params and sqlite::result through a real database, the API pg shares: every integer type and
// durations bound, columns by name, rows to iterate, one/scalar (and how many rows they found instead),
// structs filled by name (Boost.Describe) and by position (Boost.PFR), and each error by its message.
#include "sqlite_test_support.hpp"

#include <boost/describe/class.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace sqlite_test;
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

struct item {
    std::int64_t id = 0;
    std::string name;
    std::optional<double> price;
};
BOOST_DESCRIBE_STRUCT(item, (), (id, name, price))

struct pair_row {  // no description: filled by position
    std::string key;
    unsigned count = 0;
};

class sqlite_rows : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;
    sqlite::pool db{io.get_executor(), config(dir.file("rows.db"))};

    sqlite::result query(std::string sql, sqlite::params p = sqlite::params()) {
        return run(io, [&]() -> asio::awaitable<sqlite::result> {
            co_return co_await db.async_query(std::move(sql), std::move(p), asio::use_awaitable);
        }());
    }
    void SetUp() override {
        query("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL)");
        query("INSERT INTO items VALUES (1, 'pen', 1.5), (2, 'ink', NULL), (3, 'pad', 4)");
    }
};

}  // namespace

TEST_F(sqlite_rows, every_integer_type_and_string_view_bind) {
    const std::string_view word = "pad";
    auto r = query("SELECT ?, ?, ?, ?, ?, ?, ?",
                   sqlite::params(1LL, 2u, std::size_t{3}, std::uint64_t{9223372036854775807u},
                                  std::uint8_t{255}, -4L, word));
    EXPECT_EQ(r.get<long long>(0, 0), 1);
    EXPECT_EQ(r.get<unsigned>(0, 1), 2u);
    EXPECT_EQ(r.get<std::size_t>(0, 2), 3u);
    EXPECT_EQ(r.get<std::uint64_t>(0, 3), 9223372036854775807u);
    EXPECT_EQ(r.get<std::uint8_t>(0, 4), 255);
    EXPECT_EQ(r.get<long>(0, 5), -4);
    EXPECT_EQ(r.get<std::string>(0, 6), "pad");
    const std::string m = message_of<std::out_of_range>([&] { (void)r.get<std::uint32_t>(0, 5); });
    EXPECT_EQ(
        m, "respool::sqlite::result: column \"?\" holds -4, which does not fit an unsigned 32-bit integer");
    sqlite::params p;
    const std::string big =
        message_of<std::out_of_range>([&] { p.add(std::uint64_t{9223372036854775808u}); });
    EXPECT_TRUE(contains(big, "parameter 1 (9223372036854775808) does not fit")) << big;
}

TEST_F(sqlite_rows, durations_bind_as_integer_microseconds) {
    auto r =
        query("SELECT ?, ?, ?, typeof(?)", sqlite::params(1500ms, -2s, std::chrono::nanoseconds(3000), 1min));
    EXPECT_EQ(r.get<std::int64_t>(0, 0), 1500000);
    EXPECT_EQ(r.get<std::int64_t>(0, 1), -2000000);
    EXPECT_EQ(r.get<std::int64_t>(0, 2), 3);
    EXPECT_EQ(r.get<std::string>(0, 3), "integer");
    EXPECT_EQ(r.get<std::chrono::milliseconds>(0, 0), 1500ms) << "a duration reads back as itself";
    EXPECT_EQ(r.get<std::chrono::microseconds>(0, 2), 3us);
    EXPECT_EQ(
        message_of<std::out_of_range>([&] { (void)r.get<std::chrono::seconds>(0, 0); }),
        "respool::sqlite::result: column \"?\" holds 1500000 microseconds, which a duration of 1/1 s ticks "
        "cannot hold exactly; read a finer one (std::chrono::microseconds)");
    EXPECT_EQ(
        message_of<std::invalid_argument>([&] { (void)r.get<std::chrono::seconds>(0, 3); }),
        "respool::sqlite::result: column \"typeof(?)\" value \"integer\" (TEXT) is not an INTEGER count of "
        "microseconds (std::chrono::microseconds)");
    sqlite::params p(1);
    const std::string f = message_of<std::invalid_argument>([&] { p.add(std::chrono::nanoseconds(1)); });
    EXPECT_TRUE(
        contains(f, "parameter 2 is a duration of 1 x 1/1000000000 s with a fraction of a microsecond"))
        << f;
    const std::string o = message_of<std::out_of_range>(
        [&] { p.add(std::chrono::hours(std::numeric_limits<std::int64_t>::max() / 1000)); });
    EXPECT_TRUE(contains(o, "beyond 64 bits of microseconds")) << o;
    EXPECT_EQ(p.size(), 1u);
}

TEST_F(sqlite_rows, columns_by_name_and_rows_to_iterate) {
    auto r = query("SELECT id, name FROM items ORDER BY id");
    EXPECT_EQ(r.column("name"), 1u);
    EXPECT_EQ(r.get<std::string>(2, "name"), "pad");
    std::string names;
    for (sqlite::row row : r)
        names += std::to_string(row.get<int>("id")) + row.get<std::string>("name") + ";";
    EXPECT_EQ(names, "1pen;2ink;3pad;");
    EXPECT_EQ(message_of<std::out_of_range>([&] { (void)r.row(0).get<int>("ID "); }),
              "respool::sqlite::result: no column \"ID \" (the columns are: \"id\", \"name\")");
}

TEST_F(sqlite_rows, one_and_scalar_say_how_many_rows_there_were) {
    EXPECT_EQ(query("SELECT count(*) FROM items").scalar<std::size_t>(), 3u);
    const auto ink = query("SELECT name FROM items WHERE id = ?", sqlite::params(2));
    EXPECT_EQ(ink.one().get<std::string>("name"), "ink");  // one() is a view: not offered on a temporary
    const auto none = query("SELECT name FROM items WHERE id = 99");
    const auto all = query("SELECT name FROM items");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)none.one(); }),
              "respool::sqlite::result: expected exactly one row, the statement returned no rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)all.one(); }),
              "respool::sqlite::result: expected exactly one row, the statement returned 3 rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)none.scalar<int>(); }),
              "respool::sqlite::result: expected one row of one column, the statement returned no rows");
    EXPECT_EQ(message_of<std::logic_error>([&] { (void)query("SELECT 1, 2").scalar<int>(); }),
              "respool::sqlite::result: expected one row of one column, the statement returned 2 columns");
}

TEST_F(sqlite_rows, structs_by_name_and_by_position) {
    const std::vector<item> items = query("SELECT price, name, id FROM items ORDER BY id").all<item>();
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(items[0].name, "pen");
    EXPECT_EQ(items[0].price, 1.5);
    EXPECT_EQ(items[1].price, std::nullopt);
    EXPECT_EQ(items[2].id, 3);
    const pair_row p = query("SELECT 'pens', 12").one<pair_row>();
    EXPECT_EQ(p.key, "pens");
    EXPECT_EQ(p.count, 12u);
}

TEST_F(sqlite_rows, struct_errors_name_the_column_the_struct_and_the_types) {
    const std::string missing =
        message_of<std::out_of_range>([&] { (void)query("SELECT id, name FROM items").all<item>(); });
    EXPECT_TRUE(contains(missing, "no column \"price\" for the member of struct ")) << missing;
    EXPECT_TRUE(contains(missing, "item (the columns are: \"id\", \"name\")")) << missing;

    EXPECT_EQ(message_of<std::logic_error>(
                  [&] { (void)query("SELECT 1 AS id, NULL AS name, 2.0 AS price").one<item>(); }),
              "respool::sqlite::result: column \"name\" is NULL (read it as std::optional)");
    EXPECT_EQ(message_of<std::invalid_argument>(
                  [&] { (void)query("SELECT 'one' AS id, 'x' AS name, 1 AS price").one<item>(); }),
              "respool::sqlite::result: column \"id\" value \"one\" (TEXT) is not an integer (std::int64_t)");
    const std::string count =
        message_of<std::logic_error>([&] { (void)query("SELECT 'a'").one<pair_row>(); });
    EXPECT_TRUE(contains(count, "pair_row has 2 fields and the result 1 columns")) << count;
    const std::string negative =
        message_of<std::out_of_range>([&] { (void)query("SELECT 'a', -1 AS n").one<pair_row>(); });
    EXPECT_TRUE(contains(negative, "column \"n\" holds -1, which does not fit an unsigned 32-bit integer"))
        << negative;
}
