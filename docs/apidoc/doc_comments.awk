# Doxygen input filter (docs/apidoc/Doxyfile): the public headers document their declarations with plain
# `//` comments; this turns them into Doxygen comments, shown as written (verbatim: the comments are
# plain text with code sketches, not Doxygen markup).
#   a block of `//` lines      -> `/** @verbatim ... @endverbatim */`, documenting the declaration below it;
#                                 the block before `#pragma once` documents the file
#   `declaration;  // text`    -> `declaration;  ///< @verbatim text @endverbatim` (members, enumerators)
# Comments inside function bodies, on preprocessor lines and after closing braces stay plain.
# `template <> struct boost::system::is_error_code_enum<...>` (the traits that make an enum an error code)
# become blank lines: they are Boost's customisation points, not respool's API, and Doxygen cannot place
# a specialisation declared with a qualified name.
function flush(   i) {
    if (n == 0) return
    if (!seen_code) print "/// @file"
    # A C-style block: Doxygen keeps the `///` of every line inside a verbatim section of `///` lines.
    for (i = 1; i <= n; i++) {
        line = block[i]
        if (i == 1) line = indent[i] "/** @verbatim " line
        if (i == n) line = line " @endverbatim */"
        print line
    }
    n = 0
}
$0 ~ /^template <>[ \t]*$/ {
    if ((getline next_line) > 0) {
        if (next_line ~ /^struct boost::/) { flush(); print ""; print ""; next }
        handle($0); handle(next_line); next
    }
}
{ handle($0) }
function handle(l) {
    $0 = l
    if (match($0, /^[ \t]*\/\/ ?/) && $0 !~ /^[ \t]*\/\/\//) {
        text = substr($0, RLENGTH + 1)
        ind = $0; sub(/\/\/.*/, "", ind)
        if (depth > 0) { print; return }
        n++; block[n] = text; indent[n] = ind
        return
    }
    flush()
    line = $0
    if ($0 ~ /^[ \t]*#/) { seen_code = 1; print; return }
    code = line; sub(/[ \t]+\/\/.*$/, "", code)
    if (depth == 0 && code != line && code ~ /[;,][ \t]*$/ && code !~ /^[ \t]*}[ \t;]*$/ && gsub(/"/, "\"", code) % 2 == 0) {
        rest = substr(line, length(code) + 1)
        sub(/^[ \t]+\/\/ ?/, "", rest)
        line = code "  ///< @verbatim " rest " @endverbatim"
    }
    if ($0 ~ /[^ \t]/) seen_code = 1
    print line
    # Brace depth inside function bodies: a line that opens a body after `)` (or `) const`, `noexcept`...)
    # starts one; namespace, class and enum braces do not count.
    opens = gsub(/{/, "{", code); closes = gsub(/}/, "}", code)
    if (depth > 0) depth += opens - closes
    else if (opens > closes && code ~ /\)[^;]*\{[^}]*$/ && code !~ /^[ \t]*(namespace|class|struct|enum|union)/) depth = opens - closes
    if (depth < 0) depth = 0
}
END { flush() }
