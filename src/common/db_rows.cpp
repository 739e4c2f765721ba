// The errors of reading rows (include/respool/detail/db_values.hpp), built here once for both database
// results: what was wanted, what the result holds, and the struct that asked when there is one.
#include <respool/detail/db_values.hpp>

#include <boost/core/demangle.hpp>

#include <stdexcept>
#include <string>

namespace respool::detail::db {

namespace {

std::string prefix(const char* who) {
    return std::string(who) + ": ";
}

}  // namespace

void throw_row_count(const char* who, std::size_t rows, const char* wanted) {
    throw std::logic_error(prefix(who) + "expected " + wanted + ", the statement returned " +
                           (rows == 0 ? std::string("no rows") : std::to_string(rows) + " rows"));
}

void throw_column_count(const char* who, std::size_t columns) {
    throw std::logic_error(prefix(who) + "expected one row of one column, the statement returned " +
                           std::to_string(columns) + " columns");
}

void throw_no_row(const char* who, std::size_t row, std::size_t rows) {
    throw std::out_of_range(prefix(who) + "no row " + std::to_string(row) + " (the result has " +
                            std::to_string(rows) + ")");
}

void throw_field_count(const char* who, const std::type_info& type, std::size_t fields, std::size_t columns) {
    throw std::logic_error(prefix(who) + "struct " + boost::core::demangle(type.name()) + " has " +
                           std::to_string(fields) + " fields and the result " + std::to_string(columns) +
                           " columns; without BOOST_DESCRIBE_STRUCT a struct is filled by position, "
                           "field i from column i");
}

void throw_integer_range(const char* who, std::string_view column, std::int64_t value, const char* type) {
    throw std::out_of_range(prefix(who) + "column \"" + std::string(column) + "\" holds " +
                            std::to_string(value) + ", which does not fit " + type);
}

void throw_duration_inexact(const char* who, std::string_view column, std::int64_t microseconds,
                            std::intmax_t num, std::intmax_t den) {
    throw std::out_of_range(prefix(who) + "column \"" + std::string(column) + "\" holds " +
                            std::to_string(microseconds) + " microseconds, which a duration of " +
                            std::to_string(num) + "/" + std::to_string(den) +
                            " s ticks cannot hold exactly; read a finer one "
                            "(std::chrono::microseconds)");
}

std::size_t find_column(const char* who, std::string_view name, std::size_t columns,
                        std::string_view (*name_of)(const void*, std::size_t), const void* result,
                        const std::type_info* type) {
    for (std::size_t c = 0; c < columns; ++c)
        if (name_of(result, c) == name) return c;
    std::string message = prefix(who) + "no column \"" + std::string(name) + "\"";
    if (type) message += " for the member of struct " + boost::core::demangle(type->name());
    message += " (the columns are:";
    constexpr std::size_t shown = 16;  // enough to spot a typo; a wide result is not copied whole
    for (std::size_t c = 0; c < columns && c < shown; ++c) {
        message += c == 0 ? " \"" : ", \"";
        message += name_of(result, c);
        message += '"';
    }
    if (columns > shown) message += ", ... " + std::to_string(columns - shown) + " more";
    if (columns == 0) message += " none";
    message += ")";
    throw std::out_of_range(message);
}

}  // namespace respool::detail::db
