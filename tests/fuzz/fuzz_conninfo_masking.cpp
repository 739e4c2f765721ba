// libFuzzer: pg::masked never lets a password through, whatever surrounds it. Each input is used
// raw (masked must not crash on any bytes) and as the text around a password in the forms libpq
// accepts: keyword/value (bare and quoted, any blanks around '='), and URIs (user:password@ and the
// password query parameter). libpq itself says what the password is (PQconninfoParse): whenever it
// parses the string with exactly our secret as the password, and the secret occurs once in it, the
// masked string must not contain it, nor must any message that quotes the string as libpq's own
// errors do (or with the input's text around it), nor libpq's errors that quote one token of it, nor
// pg::conninfo_error's verdict on the string.
#include <respool/pg/errors.hpp>

#include <libpq-fe.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view secret = "Zq9xS3cretTok";

// The password libpq reads from `info`; empty when it does not parse or has none.
std::string password_of(const std::string& info) {
    char* err = nullptr;
    PQconninfoOption* o = PQconninfoParse(info.c_str(), &err);
    if (err) PQfreemem(err);
    if (!o) return {};
    std::string password;
    for (PQconninfoOption* i = o; i->keyword; ++i)
        if (std::string_view(i->keyword) == "password" && i->val) password = i->val;
    PQconninfoFree(o);
    return password;
}

std::size_t occurrences(std::string_view s, std::string_view what) {
    std::size_t n = 0;
    for (auto p = s.find(what); p != std::string_view::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

void expect_masked(const std::string& text) {
    const std::string m = respool::pg::masked(text);
    if (m.find(secret) != std::string::npos) {
        std::fprintf(stderr, "password not masked\n  in:  %s\n  out: %s\n", text.c_str(), m.c_str());
        std::abort();
    }
}

// The messages of libpq (fe-connect.c) that quote the whole connection string.
constexpr std::string_view quoting[] = {
    "invalid URI propagated to internal parser routine: \"",
    "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"",
    "IPv6 host address may not be empty in URI: \"",
    "unexpected character \"/\" at position 14 in URI (expected \":\" or \"/\"): \"",
};

// `info` as libpq reads it has the secret as its password: it must not survive masking, alone or
// inside a message (libpq's, or the fuzzer's text `a` and `b` around it).
void check(const std::string& info, const std::string& a, const std::string& b) {
    if (occurrences(info, secret) != 1 || password_of(info) != secret) return;
    expect_masked(info);
    if (const std::string e = respool::pg::conninfo_error(info); e.find(secret) != std::string::npos) {
        std::fprintf(stderr, "password in conninfo_error\n  in:  %s\n  out: %s\n", info.c_str(), e.c_str());
        std::abort();
    }
    for (std::string_view q : quoting) expect_masked(std::string(q) + info + "\"\n");
    expect_masked(a + "\"" + info + "\"" + b);
    expect_masked(a + ": " + info);
    expect_masked("connection to server failed: " + info + "\n" + b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    (void)respool::pg::masked(in);
    if (in.find('\0') != std::string_view::npos) return 0;  // libpq reads C strings
    (void)respool::pg::conninfo_error(in);
    const auto cut = in.find('|');
    const std::string a(in.substr(0, cut));
    const std::string b(cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1));
    const std::string s(secret);
    check(a + " password=" + s + " " + b, a, b);
    check(a + " password='" + s + "' " + b, a, b);
    check(a + "password" + b + "=" + s, a, b);
    check(a + "password=" + b + s, a, b);
    check("postgresql://" + a + ":" + s + "@" + b, a, b);
    check("postgres://" + a + s + "@" + b, a, b);
    check("postgresql://" + a + "?" + b + "password=" + s, a, b);
    check("postgresql://" + a + "?password=" + s + "&" + b, a, b);
    // libpq's errors that quote one token: a password it could not percent-decode, the word after a
    // password with a blank in it.
    if (a.find('"') == std::string::npos && b.find('"') == std::string::npos) {
        expect_masked("invalid percent-encoded token: \"" + a + s + b + "\"\n");
        expect_masked("forbidden value %00 in percent-encoded value: \"" + a + s + b + "\"\n");
        expect_masked("missing \"=\" after \"" + a + s + b + "\" in connection info string\n");
    }
    return 0;
}
