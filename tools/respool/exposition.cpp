#include "exposition.hpp"

#include <charconv>

namespace respool_cli::exposition {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name,
            std::initializer_list<std::pair<std::string_view, std::string_view>> labels, double value) {
    out.append(name).append("{");
    bool first = true;
    for (const auto& [label, text] : labels) {
        if (!first) out += ',';
        first = false;
        out.append(label).append("=\"");
        for (const char c : text) {
            if (c == '\\' || c == '"') {
                out += '\\';
                out += c;
            } else if (c == '\n') {
                out += "\\n";
            } else {
                out += c;
            }
        }
        out += '"';
    }
    out.append("} ");
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, ec == std::errc() ? end : buf);
    out += '\n';
}

}  // namespace respool_cli::exposition
