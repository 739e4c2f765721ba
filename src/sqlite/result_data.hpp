// What a sqlite::result holds: the rows copied out of a statement, every field with its storage class,
// its number (INTEGER, REAL) and its bytes (TEXT and BLOB as they are; numbers as SQLite writes them,
// so that text() needs no conversion later).
#pragma once

#include <respool/sqlite/values.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace respool::sqlite {

struct result::data {
    struct cell {
        value_kind kind = value_kind::null;
        std::int64_t integer = 0;
        double real = 0;
        std::size_t offset = 0;  // into bytes
        std::size_t size = 0;
    };
    std::vector<std::string> names;
    std::vector<cell> cells;  // row-major
    std::string bytes;        // every field's bytes, back to back
    std::size_t rows = 0;
    std::uint64_t affected = 0;
    std::int64_t rowid = 0;
};

struct result_access {
    static result make(std::shared_ptr<const result::data> d) {
        result r;
        r.data_ = std::move(d);
        return r;
    }
};

}  // namespace respool::sqlite
