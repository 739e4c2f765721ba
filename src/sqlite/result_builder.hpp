// Copies a statement's rows into a sqlite::result as it steps (the statement is reset right after:
// nothing of a result points into SQLite).
#pragma once

#include "result_data.hpp"

#include <sqlite3.h>

#include <memory>

namespace respool::sqlite {

class result_builder {
public:
    result_builder() : d_(std::make_shared<result::data>()) {}

    void add_row(::sqlite3_stmt* st) {
        if (!named_) name(st);
        const int n = static_cast<int>(d_->names.size());
        for (int i = 0; i < n; ++i) {
            result::data::cell c;
            const void* bytes = nullptr;
            switch (::sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER:
                c.kind = value_kind::integer;
                c.integer = ::sqlite3_column_int64(st, i);
                bytes = ::sqlite3_column_text(st, i);  // after the number: the conversion adds text
                break;
            case SQLITE_FLOAT:
                c.kind = value_kind::real;
                c.real = ::sqlite3_column_double(st, i);
                bytes = ::sqlite3_column_text(st, i);
                break;
            case SQLITE_TEXT:
                c.kind = value_kind::text;
                bytes = ::sqlite3_column_text(st, i);
                break;
            case SQLITE_BLOB:
                c.kind = value_kind::blob;
                bytes = ::sqlite3_column_blob(st, i);
                break;
            default: break;
            }
            if (c.kind != value_kind::null) {
                c.size = static_cast<std::size_t>(::sqlite3_column_bytes(st, i));
                c.offset = d_->bytes.size();
                if (bytes && c.size) d_->bytes.append(static_cast<const char*>(bytes), c.size);
            }
            d_->cells.push_back(c);
        }
        ++d_->rows;
    }

    // `st` may be null (a text with no statement): no columns.
    result finish(::sqlite3_stmt* st, std::uint64_t affected, std::int64_t rowid) {
        if (!named_) name(st);
        d_->affected = affected;
        d_->rowid = rowid;
        return result_access::make(std::move(d_));
    }

private:
    // The names are read once the statement has stepped: a cached statement that SQLite re-prepared
    // in its first step (the schema changed) may have other columns than before it (SELECT *).
    void name(::sqlite3_stmt* st) {
        named_ = true;
        const int n = st ? ::sqlite3_column_count(st) : 0;
        for (int i = 0; i < n; ++i) {
            const char* col = ::sqlite3_column_name(st, i);
            d_->names.emplace_back(col ? col : "");
        }
    }

    std::shared_ptr<result::data> d_;
    bool named_ = false;
};

}  // namespace respool::sqlite
