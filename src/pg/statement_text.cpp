// A single pass over the statement text, allocation-free: a small lexer of PostgreSQL's syntax (what
// is code, what is a comment or a literal) and, per statement of a script, a few rules on its words.
#include "statement_text.hpp"

#include <algorithm>
#include <array>

namespace respool::pg::detail {

namespace {

unsigned char lower(unsigned char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c - 'A' + 'a') : c;
}
// What each byte can be, looked up once per byte: most are plain (blanks, digits, punctuation) or go
// on a word.
enum char_class : unsigned char { plain = 0, starts_word = 1, in_word = 2, special = 4 };
constexpr std::array<unsigned char, 256> char_classes = [] {
    std::array<unsigned char, 256> t{};
    for (int c = 0; c < 256; ++c) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
        if (letter) t[c] = starts_word | in_word;
        if ((c >= '0' && c <= '9') || c == '$') t[c] |= in_word;  // `a$b` is one identifier
    }
    for (const char c : {';', '-', '/', '\'', '"', '$'}) t[static_cast<unsigned char>(c)] |= special;
    return t;
}();
bool word_start(unsigned char c) noexcept {
    return (char_classes[c] & starts_word) != 0;
}
bool word_char(unsigned char c) noexcept {
    return (char_classes[c] & in_word) != 0;
}

bool is(std::string_view w, std::string_view lower_word) noexcept {
    return w.size() == lower_word.size() &&
           std::equal(w.begin(), w.end(), lower_word.begin(),
                      [](char a, char b) { return lower(static_cast<unsigned char>(a)) == b; });
}
bool starts(std::string_view w, std::string_view lower_prefix) noexcept {
    return w.size() >= lower_prefix.size() && is(w.substr(0, lower_prefix.size()), lower_prefix);
}

// Statements whose first word says they change the session (their tags say so too, but a script's
// tags are only seen for its last statement, and a DO block's body is code the text does not show:
// dynamic SQL inside it can do anything, so a DO always counts).
constexpr std::array<std::string_view, 9> session_commands = {
    "set", "reset", "discard", "listen", "unlisten", "prepare", "load", "declare", "do"};

// Words after which TEMP / TEMPORARY makes a temporary object: CREATE [GLOBAL | LOCAL] TEMP ...,
// CREATE OR REPLACE TEMP VIEW, SELECT ... INTO TEMP (whose tag is a plain "SELECT n").
constexpr std::array<std::string_view, 5> before_temp = {"create", "global", "local", "replace", "into"};

template <std::size_t N>
bool one_of(std::string_view w, const std::array<std::string_view, N>& words) noexcept {
    return std::any_of(words.begin(), words.end(), [w](std::string_view x) { return is(w, x); });
}

class scanner {
public:
    explicit scanner(std::string_view s) noexcept : s_(s) {}

    statement_facts run() noexcept {
        while (i_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[i_]);
            const unsigned char k = char_classes[c];
            if (k == plain) {
                ++i_;
            } else if (c == ';') {
                words_ = 0;
                copy_ = false;
                prev_ = {};
                ++i_;
            } else if (c == '-' && next_is('-')) {
                const std::size_t eol = s_.find('\n', i_);
                i_ = eol == std::string_view::npos ? s_.size() : eol + 1;
            } else if (c == '/' && next_is('*')) {
                skip_block_comment();
            } else if (c == '\'') {
                skip_string(false);
            } else if (c == '"') {
                quoted_identifier();
            } else if (c == '$') {
                skip_dollar_quote();
            } else if (word_start(c)) {
                const std::size_t from = i_;
                while (i_ < s_.size() && word_char(static_cast<unsigned char>(s_[i_]))) ++i_;
                const std::string_view w = s_.substr(from, i_ - from);
                if (i_ < s_.size() && s_[i_] == '\'' && is(w, "e")) {
                    skip_string(true);  // E'...': backslash escapes
                } else {
                    word(w);
                }
            } else {
                ++i_;
            }
        }
        return facts_;
    }

private:
    bool next_is(char c) const noexcept { return i_ + 1 < s_.size() && s_[i_ + 1] == c; }

    void skip_block_comment() noexcept {  // nested, as PostgreSQL's are
        int depth = 0;
        while (i_ < s_.size()) {
            if (s_[i_] == '/' && next_is('*')) {
                ++depth;
                i_ += 2;
            } else if (s_[i_] == '*' && next_is('/')) {
                i_ += 2;
                if (--depth == 0) return;
            } else {
                ++i_;
            }
        }
    }

    // '...' with '' inside; with backslash escapes for E'...'. An unterminated one runs to the end.
    void skip_string(bool backslashes) noexcept {
        ++i_;
        while (i_ < s_.size()) {
            const char c = s_[i_];
            if (backslashes && c == '\\') {
                i_ += 2;
            } else if (c == '\'') {
                if (!next_is('\'')) {
                    ++i_;
                    return;
                }
                i_ += 2;
            } else {
                ++i_;
            }
        }
        i_ = s_.size();
    }

    void quoted_identifier() noexcept {
        const std::size_t from = ++i_;
        while (i_ < s_.size() && !(s_[i_] == '"' && !next_is('"'))) i_ += s_[i_] == '"' ? 2 : 1;
        word(s_.substr(from, std::min(i_, s_.size()) - from));
        if (i_ < s_.size()) ++i_;
    }

    // $tag$...$tag$ (tag empty or an identifier without '$'); a '$' that opens none ($1) is skipped.
    void skip_dollar_quote() noexcept {
        std::size_t j = i_ + 1;
        if (j < s_.size() && word_start(static_cast<unsigned char>(s_[j]))) {
            while (j < s_.size() && word_char(static_cast<unsigned char>(s_[j])) && s_[j] != '$') ++j;
        }
        if (j >= s_.size() || s_[j] != '$') {
            ++i_;
            return;
        }
        const std::string_view tag = s_.substr(i_, j - i_ + 1);
        const std::size_t end = s_.find(tag, j + 1);
        i_ = end == std::string_view::npos ? s_.size() : end + tag.size();
    }

    // Most words are none of these: each test starts with the word's length or first letter, so a
    // word costs a few compares (this runs on every statement the cache does not hold).
    void word(std::string_view w) noexcept {
        const bool first = words_++ == 0;
        const unsigned char c0 = lower(static_cast<unsigned char>(w[0]));
        if (first) {
            if (w.size() <= 8 && one_of(w, session_commands)) facts_.session_effects = true;
            copy_ = c0 == 'c' && is(w, "copy");
        } else if (copy_ && (c0 == 's' && (is(w, "stdin") || is(w, "stdout")))) {
            facts_.copy_stream = true;
        }
        if (c0 == 't' && (is(w, "temp") || is(w, "temporary")) && one_of(prev_, before_temp))
            facts_.session_effects = true;
        else if (c0 == 'p' && starts(w, "pg_temp"))
            facts_.session_effects = true;
        else if (w.size() >= 8 && calls_session_function(w))
            facts_.session_effects = true;
        prev_ = w;
    }

    // advisory-lock functions (any name containing "advisory") and set_config, however qualified.
    static bool calls_session_function(std::string_view w) noexcept {
        for (std::size_t i = 0; i + 8 <= w.size(); ++i) {
            const unsigned char c = lower(static_cast<unsigned char>(w[i]));
            if (c == 'a' && is(w.substr(i, 8), "advisory")) return true;
            if (c == 's' && i + 10 <= w.size() && is(w.substr(i, 10), "set_config")) return true;
        }
        return false;
    }

    std::string_view s_;
    std::size_t i_ = 0;
    std::size_t words_ = 0;  // in the current statement of the script
    bool copy_ = false;      // the current statement is a COPY
    std::string_view prev_;  // the word before, in the current statement
    statement_facts facts_;
};

}  // namespace

statement_facts scan_statement(std::string_view sql) noexcept {
    return scanner(sql).run();
}

}  // namespace respool::pg::detail
