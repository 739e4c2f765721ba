// What params refuses at compile time, with the message the user reads: tests/CMakeLists.txt compiles
// this file once per REFUSED_* case and passes when the compiler prints the static_assert's text. The
// case without a macro must compile, so that a failure is the refusal and not a broken include.
#include <respool/pg/values.hpp>
#include <respool/sqlite/values.hpp>

#include <vector>

int main() {
    respool::pg::params pg;
    respool::sqlite::params lite;
#if defined(REFUSED_PG_CHAR)
    pg.add('c');  // a letter or a number?
#elif defined(REFUSED_SQLITE_CHAR)
    lite.add('c');
#elif defined(REFUSED_SQLITE_ARRAY)
    lite.add(std::vector<int>{1, 2});  // SQLite has no arrays
#else
    pg.add(std::string_view("c")).add(std::int16_t{'c'}).add(std::vector<int>{1, 2});
    lite.add(std::string_view("c")).add(std::int16_t{'c'});
#endif
    return static_cast<int>(pg.size() + lite.size()) == 0;
}
