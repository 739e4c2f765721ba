// test::table_lock: a session of a test's own that holds a table's ACCESS EXCLUSIVE lock in an open
// transaction, so that another client's statements on the table (its Parse included) wait for it;
// given back by release() or the destructor. Used by the chaos tests of the pool and of `respool
// serve` to make prepares run into the server's statement_timeout.
#pragma once

#include <libpq-fe.h>

#include <string>

namespace test {

class table_lock {
public:
    explicit table_lock(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {}
    ~table_lock() { PQfinish(conn_); }  // ends the transaction, and the lock with it
    table_lock(const table_lock&) = delete;
    table_lock& operator=(const table_lock&) = delete;

    bool connected() const { return PQstatus(conn_) == CONNECTION_OK; }
    std::string error() const { return PQerrorMessage(conn_); }

    // BEGIN, then LOCK TABLE `table` IN ACCESS EXCLUSIVE MODE; false when either failed.
    bool take(const std::string& table) {
        return exec("BEGIN") && exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
    }
    bool release() { return exec("COMMIT"); }

private:
    bool exec(const std::string& sql) {
        PGresult* r = PQexec(conn_, sql.c_str());
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        return ok;
    }

    PGconn* conn_;
};

}  // namespace test
