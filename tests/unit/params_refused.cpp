// What params refuses at compile time, with the message the user reads: tests/CMakeLists.txt compiles
// this file once per REFUSED_* case and passes when the compiler prints the static_assert's text. The
// case without a macro must compile, so that a failure is the refusal and not a broken include. A row
// of a temporary result is refused too (it would dangle): the compiler says the function is deleted.
#include <respool/pg/values.hpp>
#include <respool/sqlite/values.hpp>

#include <ranges>
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
#elif defined(REFUSED_ROW_OF_A_TEMPORARY)
    auto dangling = respool::sqlite::result().one();  // a view into a result destroyed at the semicolon
#else
    const respool::pg::result r;
    for (respool::pg::row row : r) (void)row;  // a result is a range of rows
    static_assert(std::ranges::input_range<respool::sqlite::result>);
    pg.add(std::string_view("c")).add(std::int16_t{'c'}).add(std::vector<int>{1, 2});
    lite.add(std::string_view("c")).add(std::int16_t{'c'});
#endif
    return static_cast<int>(pg.size() + lite.size()) == 0;
}
