// libFuzzer: pg::masked never lets a password through, whatever surrounds it. Each input is used
// raw (masked must not crash on any bytes) and as the text around a password in the forms libpq
// accepts: keyword/value (bare and quoted, any blanks around '='), and URIs (user:password@ and the
// password query parameter). libpq itself says what the password is (PQconninfoParse): whenever it
// parses the string with exactly our secret as the password, and the secret occurs once in it, the
// masked text must not contain it.
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

void check(const std::string& info) {
    if (occurrences(info, secret) != 1 || password_of(info) != secret) return;
    const std::string m = respool::pg::masked(info);
    if (m.find(secret) != std::string::npos) {
        std::fprintf(stderr, "password not masked\n  in:  %s\n  out: %s\n", info.c_str(), m.c_str());
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    (void)respool::pg::masked(in);
    if (in.find('\0') != std::string_view::npos) return 0;  // libpq reads C strings
    const auto cut = in.find('|');
    const std::string a(in.substr(0, cut));
    const std::string b(cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1));
    const std::string s(secret);
    check(a + " password=" + s + " " + b);
    check(a + " password='" + s + "' " + b);
    check(a + "password" + b + "=" + s);
    check(a + "password=" + b + s);
    check("postgresql://" + a + ":" + s + "@" + b);
    check("postgres://" + a + s + "@" + b);
    check("postgresql://" + a + "?" + b + "password=" + s);
    check("postgresql://" + a + "?password=" + s + "&" + b);
    return 0;
}
