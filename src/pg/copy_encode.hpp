// The COPY data formats (text and binary), written from a row's fields as pg::params holds them (its
// encoders are the one place a C++ value becomes PostgreSQL's): plain functions, no connection, tested
// without a server (tests/unit/pg_copy_encode_test.cpp). Private to the PostgreSQL layer.
#pragma once

#include <respool/pg/copy.hpp>

#include <string>
#include <string_view>

namespace respool::pg::detail {

// What opens the data: binary COPY's signature, flags and (empty) header extension; nothing for text.
void copy_header(copy_format f, std::string& out);
// What closes the data: binary COPY's trailer (a field count of -1); nothing for text.
void copy_trailer(copy_format f, std::string& out);
// Appends one row. text: each field as PostgreSQL's text input reads it, escaped (backslash, tab,
// newline, carriage return), NULL as \N, tab-separated, then a newline. binary: the field count, then
// each field's length (-1 for NULL) and its binary value. std::invalid_argument for what the format
// cannot carry (more than 32767 fields in binary).
void encode_copy_row(const params& row, copy_format f, std::string& out);
// `s` escaped for COPY's text format, appended.
void escape_copy_text(std::string_view s, std::string& out);

}  // namespace respool::pg::detail
