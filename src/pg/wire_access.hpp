// How the PostgreSQL layer reaches into params and result (their friends): the arrays libpq takes
// for a statement's parameters, and a result made from a PGresult. Private to the layer.
#pragma once

#include <respool/pg/values.hpp>

#include <boost/container/small_vector.hpp>

#include <libpq-fe.h>

#include <charconv>
#include <cstring>
#include <memory>
#include <string>

namespace respool::pg {

// What PQsendQueryParams takes, pointing into the params (which must outlive the call).
// A params' values, in the arrays libpq takes: up to 4 parameters without a further allocation.
struct params::values {
    boost::container::small_vector<unsigned, 4> types;  // OIDs; 0 = let the server infer
    boost::container::small_vector<int, 4> formats;     // 1 = binary
    boost::container::small_vector<int, 4> lengths;
    boost::container::small_vector<std::size_t, 4> offsets;  // into data; npos = NULL
    std::string data;                                        // the values, back to back
};

struct params_access {
    const params& p;
    boost::container::small_vector<const char*, 8> values;  // into p.data_, which must outlive the send
    explicit params_access(const params& q) : p(q), values(q.size()) {
        for (std::size_t i = 0; i < q.size(); ++i)
            values[i] =
                q.v_->offsets[i] == std::string::npos ? nullptr : q.v_->data.data() + q.v_->offsets[i];
    }
    [[nodiscard]] const Oid* types() const noexcept { return p.v_ ? p.v_->types.data() : nullptr; }
    [[nodiscard]] const int* formats() const noexcept { return p.v_ ? p.v_->formats.data() : nullptr; }
    [[nodiscard]] const int* lengths() const noexcept { return p.v_ ? p.v_->lengths.data() : nullptr; }
};

struct result_access {
    // Takes ownership of `r` (PQclear runs with the last copy of the result).
    static result adopt(PGresult* r) {
        result out;
        out.res_ =
            std::shared_ptr<const PGresult>(r, [](const PGresult* p) { PQclear(const_cast<PGresult*>(p)); });
        out.rows_ = static_cast<std::size_t>(PQntuples(r));
        out.columns_ = static_cast<std::size_t>(PQnfields(r));
        // (from_chars: strtoull would consult the locale for every statement's "1" or "0".)
        const char* affected = PQcmdTuples(r);
        if (affected && *affected &&
            std::from_chars(affected, affected + std::strlen(affected), out.affected_).ec != std::errc{})
            out.affected_ = 0;  // not a count (it always is one: PQcmdTuples gives digits or "")
        return out;
    }
};

}  // namespace respool::pg
