// What the text of a statement (or a script of several) says before it is sent: whether it may change
// the session in a way its command tag does not show, and whether it uses the COPY sub-protocol
// (COPY ... FROM STDIN / TO STDOUT), which a plain query cannot carry. The text is read as PostgreSQL
// reads it: words in comments (`--`, nested `/* */`) and literals ('...', E'...', $tag$...$tag$) are
// not code; quoted identifiers are words. Conservative where it cannot know (docs/06-postgresql.md,
// "Reset on return").
#pragma once

#include <string_view>

namespace respool::pg::detail {

struct statement_facts {
    bool session_effects = false;  // may leave state in the session for the next borrower
    bool copy_stream = false;      // COPY ... FROM STDIN or TO STDOUT (the COPY sub-protocol)
};

statement_facts scan_statement(std::string_view sql) noexcept;

}  // namespace respool::pg::detail
