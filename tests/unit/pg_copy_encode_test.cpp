// COPY's data formats without a server: each C++ value in text format as PostgreSQL's text input reads
// it (escaped: backslash, tab, newline, carriage return; NULL as \N), binary COPY's header, rows and
// trailer byte for byte, the fields of tuples, described structs and plain aggregates in order, and the
// COPY statements built from a table or a query.
#include "copy_encode.hpp"

#include <respool/pg/copy.hpp>

#include <boost/describe/class.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace pg = respool::pg;
using namespace std::chrono_literals;

namespace copy_encode_test {
struct person {
    std::int32_t id;
    std::string name;
    std::optional<std::int64_t> score;
};
BOOST_DESCRIBE_STRUCT(person, (), (id, name, score))
struct plain {
    std::int16_t a;
    double b;
};
}  // namespace copy_encode_test

namespace {

using copy_encode_test::person;
using copy_encode_test::plain;

template <class Row>
std::string text_row(const Row& r) {
    pg::params p;
    pg::detail::add_copy_fields(p, r);
    std::string out;
    pg::detail::encode_copy_row(p, pg::copy_format::text, out);
    return out;
}

std::string text_of(const pg::params& p) {
    std::string out;
    pg::detail::encode_copy_row(p, pg::copy_format::text, out);
    return out;
}

TEST(pg_copy_encode, text_escapes_what_copy_reads_as_syntax_and_writes_null_as_backslash_n) {
    pg::params p;
    p.add("a\tb")
        .add("line1\nline2\r")
        .add("back\\slash")
        .add(std::nullopt)
        .add("caf\xc3\xa9 \xe2\x82\xac")
        .add("");
    EXPECT_EQ(text_of(p), "a\\tb\tline1\\nline2\\r\tback\\\\slash\t\\N\tcaf\xc3\xa9 \xe2\x82\xac\t\n");
}

TEST(pg_copy_encode, numbers_and_bool_are_written_as_their_text) {
    pg::params p;
    p.add(true)
        .add(false)
        .add(std::int16_t{-32768})
        .add(std::int32_t{2147483647})
        .add(std::numeric_limits<std::int64_t>::min())
        .add(0.1)
        .add(1.5f)
        .add(std::numeric_limits<double>::quiet_NaN())
        .add(-std::numeric_limits<double>::infinity());
    EXPECT_EQ(text_of(p), "t\tf\t-32768\t2147483647\t-9223372036854775808\t0.1\t1.5\tNaN\t-Infinity\n");
}

TEST(pg_copy_encode, bytea_time_interval_and_arrays_are_written_as_postgresql_reads_them) {
    const std::vector<std::byte> bytes{std::byte{0x00}, std::byte{0xff}, std::byte{0x10}};
    const std::chrono::sys_time<std::chrono::microseconds> t =
        std::chrono::sys_days(std::chrono::year(2024) / 2 / 29) + 13h + 5min + 7s + 42us;
    const std::vector<std::int32_t> ints{1, -2, 3};
    const std::vector<std::string> texts{"a\"b", "c\\d", "tab\there"};
    pg::params p;
    p.add(bytes).add(t).add(90s).add(ints).add(texts).add(std::vector<std::int64_t>{});
    // bytea's \x doubled by COPY's escaping; an array's quotes and backslashes escaped for the array,
    // then its backslashes and tab again for COPY.
    EXPECT_EQ(text_of(p),
              "\\\\x00ff10\t2024-02-29 13:05:07.000042+00\t90000000 microseconds\t{1,-2,3}\t"
              "{\"a\\\\\"b\",\"c\\\\\\\\d\",\"tab\\there\"}\t{}\n");
}

TEST(pg_copy_encode, binary_has_the_pgcopy_header_length_prefixed_fields_and_the_trailer) {
    std::string out;
    pg::detail::copy_header(pg::copy_format::binary, out);
    EXPECT_EQ(out, std::string("PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19));
    out.clear();
    pg::params p;
    p.add(std::int32_t{7}).add(std::nullopt).add("hi");
    pg::detail::encode_copy_row(p, pg::copy_format::binary, out);
    EXPECT_EQ(out, std::string("\0\3"
                               "\0\0\0\4\0\0\0\7"
                               "\xff\xff\xff\xff"
                               "\0\0\0\2hi",
                               20));
    out.clear();
    pg::detail::copy_trailer(pg::copy_format::binary, out);
    EXPECT_EQ(out, std::string("\xff\xff", 2));
    out.clear();
    pg::detail::copy_header(pg::copy_format::text, out);
    pg::detail::copy_trailer(pg::copy_format::text, out);
    EXPECT_EQ(out, "");
}

TEST(pg_copy_encode, tuples_described_structs_and_aggregates_give_their_fields_in_order) {
    EXPECT_EQ(text_row(std::tuple<int, std::string, std::optional<double>>{1, "x", std::nullopt}),
              "1\tx\t\\N\n");
    EXPECT_EQ(text_row(person{2, "ada", 70}), "2\tada\t70\n");
    EXPECT_EQ(text_row(plain{3, 0.5}), "3\t0.5\n");
    EXPECT_EQ(pg::detail::copy_columns<person>(), " (id, name, score)");
    EXPECT_EQ(pg::detail::copy_columns<plain>(), "");
}

TEST(pg_copy_encode, statements_name_the_table_or_wrap_the_query) {
    using pg::detail::copy_in_statement;
    using pg::detail::copy_out_statement;
    EXPECT_EQ(copy_in_statement("people", " (id, name)", pg::copy_format::text),
              "COPY people (id, name) FROM STDIN");
    EXPECT_EQ(copy_in_statement("people", "", pg::copy_format::binary),
              "COPY people FROM STDIN (FORMAT binary)");
    EXPECT_EQ(copy_out_statement("people", pg::copy_format::text), "COPY people TO STDOUT");
    EXPECT_EQ(copy_out_statement("  select id FROM people", pg::copy_format::binary),
              "COPY (  select id FROM people) TO STDOUT (FORMAT binary)");
    EXPECT_EQ(copy_out_statement("WITH x AS (SELECT 1) SELECT * FROM x", pg::copy_format::text),
              "COPY (WITH x AS (SELECT 1) SELECT * FROM x) TO STDOUT");
    EXPECT_EQ(copy_out_statement("(SELECT 1)", pg::copy_format::text),
              "COPY ((SELECT 1)) TO STDOUT");  // a query in parentheses is one
}

}  // namespace
