// The category of respool::db::condition. It knows respool's own codes (errc) and a cancelled Asio
// operation; respool::pg's and respool::sqlite's categories say themselves which conditions their codes
// mean (their equivalent()), so this library knows nothing of either database.
#include <respool/db_condition.hpp>
#include <respool/error.hpp>

#include <boost/system/errc.hpp>

#include <string>

namespace respool::db {
namespace {

// Whether respool's own code `e` means `c`. No default: -Wswitch names an errc added without a decision.
bool pool_error_means(errc e, condition c) noexcept {
    switch (e) {
    case errc::closed: return c == condition::closed;
    case errc::timeout:
    case errc::exhausted: return c == condition::exhausted;
    case errc::cancelled: return c == condition::cancelled;
    // The circuit is open, or no connection could be made for this acquire: retry later.
    case errc::unavailable:
    case errc::create_failed:
    case errc::hook_timeout: return c == condition::unavailable;
    // Reported to circuit strategies, never an acquire's outcome; not_supported is a programming error.
    case errc::broken:
    case errc::poisoned:
    case errc::not_supported: return false;
    }
    return false;
}

class condition_names final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "respool.db.condition"; }
    std::string message(int v) const override {
        switch (static_cast<condition>(v)) {
        case condition::unavailable: return "the database is unavailable";
        case condition::connection_broken: return "connection broken";
        case condition::busy: return "the database is locked by another connection";
        case condition::statement_timeout: return "statement timed out";
        case condition::serialization_failure: return "serialization failure: retry the transaction";
        case condition::constraint_violation: return "constraint violation";
        case condition::unique_violation: return "unique violation";
        case condition::foreign_key_violation: return "foreign key violation";
        case condition::not_null_violation: return "not-null violation";
        case condition::check_violation: return "check violation";
        case condition::read_only: return "write on a read-only database or connection";
        case condition::invalid_statement: return "invalid statement or parameters";
        case condition::operation_in_progress: return "another operation is under way on this connection";
        case condition::exhausted: return "no connection free in time";
        case condition::closed: return "pool is closed";
        case condition::cancelled: return "operation cancelled";
        case condition::database_error: return "the database reported an error";
        }
        return "unknown respool.db condition";
    }
    bool equivalent(const boost::system::error_code& ec, int v) const noexcept override {
        const auto c = static_cast<condition>(v);
        if (ec.category() == respool::category()) return pool_error_means(static_cast<errc>(ec.value()), c);
        // Asio's operation_aborted (a statement or a wait the caller cancelled) and any other code
        // that means ECANCELED.
        return c == condition::cancelled && ec == boost::system::errc::operation_canceled;
    }
};

}  // namespace

const boost::system::error_category& condition_category() noexcept {
    static const condition_names c;
    return c;
}

boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

}  // namespace respool::db
