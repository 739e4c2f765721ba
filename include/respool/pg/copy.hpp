// respool::pg COPY: rows streamed into a table (COPY ... FROM STDIN) and out of a table or a query
// (COPY ... TO STDOUT), on a connection (connection::async_copy_in / async_copy_out) or on a
// connection borrowed from a pool for it (pool::async_copy_in / async_copy_out).
//
//   struct person { std::int32_t id; std::string name; std::optional<std::int64_t> score; };
//   BOOST_DESCRIBE_STRUCT(person, (), (id, name, score))
//   std::vector<person> people = ...;
//   std::uint64_t n = co_await db.async_copy_in("people", people, {}, asio::use_awaitable);
//   co_await db.async_copy_out("SELECT id, name FROM people", [&](std::string_view line) { out << line; },
//                              {}, asio::use_awaitable);
//
// docs/06-postgresql.md, "COPY".
#pragma once

#include <respool/error.hpp>
#include <respool/pg/values.hpp>

#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/pfr/core.hpp>

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <ranges>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace respool::pg {

// COPY's two formats. text (the server's default): one line per row, fields separated by tabs, NULL as
// \N, tab, newline, carriage return and backslash escaped. binary: PostgreSQL's binary COPY format,
// where each value must have its column's exact type (an int4 column takes std::int32_t, an int8
// column std::int64_t; strings go to text, varchar or char columns).
enum class copy_format { text, binary };

struct copy_options {
    copy_format format = copy_format::text;
    // The pool's calls: a failure fills it (kept alive by the caller until the handler runs) with the
    // failure in words (`invalid input syntax for type integer: "two" (SQLSTATE 22P02)`, the exception's
    // what() for copy_aborted, the borrow's error) and a pg::error_with_diagnostics to rethrow; cleared
    // when the operation starts. On a connection, last_error() has the same.
    respool::diagnostics* diag = nullptr;
};

namespace detail {

// The fields of one row, as bound parameters would be sent (pg::params encodes every C++ type once,
// in src/pg/values.cpp; the COPY encoders in src/pg/copy_encode.cpp turn that into COPY data).
template <class Row>
void add_copy_fields(params& p, const Row& row) {
    if constexpr (boost::describe::has_describe_members<Row>::value) {
        using members = boost::describe::describe_members<Row, boost::describe::mod_public |
                                                                   boost::describe::mod_inherited>;
        boost::mp11::mp_for_each<members>([&](auto d) { p.add(row.*d.pointer); });
    } else if constexpr (requires { std::tuple_size<Row>::value; }) {
        std::apply([&](const auto&... field) { (p.add(field), ...); }, row);
    } else if constexpr (std::is_aggregate_v<Row>) {
        boost::pfr::for_each_field(row, [&](const auto& field) { p.add(field); });
    } else {
        static_assert(std::is_aggregate_v<Row>,
                      "respool: COPY rows are tuples, structs described with BOOST_DESCRIBE_STRUCT, or "
                      "aggregates (fields by position)");
    }
}

// " (a, b, c)" for a described struct (its public members, in order): the columns its rows fill.
// Empty for tuples and plain aggregates (the table's columns in order, or the ones the caller names).
template <class Row>
std::string copy_columns() {
    std::string out;
    if constexpr (boost::describe::has_describe_members<Row>::value) {
        using members = boost::describe::describe_members<Row, boost::describe::mod_public |
                                                                   boost::describe::mod_inherited>;
        boost::mp11::mp_for_each<members>([&](auto d) {
            out += out.empty() ? " (" : ", ";
            out += d.name;
        });
        if (!out.empty()) out += ')';
    }
    return out;
}

// The rows of a COPY in, one at a time (the machinery in src/pg/copy.cpp is compiled once).
class copy_rows {
public:
    virtual ~copy_rows() = default;
    // Puts the next row's fields into `row` (emptied by the caller); false once there is none.
    virtual bool next(params& row) = 0;
};

template <class View>
class copy_rows_of final : public copy_rows {
public:
    explicit copy_rows_of(View v) : view_(std::move(v)), at_(std::ranges::begin(view_)) {}
    bool next(params& row) override {
        if (at_ == std::ranges::end(view_)) return false;
        add_copy_fields(row, *at_);
        ++at_;
        return true;
    }

private:
    View view_;
    std::ranges::iterator_t<View> at_;
};

// An lvalue range is read in place (it must outlive the operation); an rvalue one is moved in.
template <class Range>
std::unique_ptr<copy_rows> make_copy_rows(Range&& rows) {
    using view = std::views::all_t<Range>;
    return std::make_unique<copy_rows_of<view>>(std::views::all(std::forward<Range>(rows)));
}

// What a COPY out hands each chunk to.
using copy_sink = std::function<void(std::string_view)>;

// "COPY <target>[ (columns)] FROM STDIN[ (FORMAT binary)]".
std::string copy_in_statement(std::string_view target, std::string_view columns, copy_format f);
// "COPY (<query>) TO STDOUT" for a query (SELECT, WITH, VALUES, TABLE), else "COPY <target> TO STDOUT";
// " (FORMAT binary)" for binary.
std::string copy_out_statement(std::string_view query_or_table, copy_format f);

template <class Range>
using copy_row_type = std::remove_cvref_t<std::ranges::range_reference_t<Range>>;

// The COPY in statement for rows of Range: a described struct's members name the columns when
// `table` names none.
template <class Range>
std::string copy_in_statement_for(const std::string& table, copy_format f) {
    return copy_in_statement(
        table, table.find('(') == std::string::npos ? copy_columns<copy_row_type<Range>>() : std::string(),
        f);
}

}  // namespace detail

}  // namespace respool::pg
