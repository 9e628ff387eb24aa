#include "gateway/core/settings.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

namespace sluice::gateway {
namespace {

constexpr std::int64_t no_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t no_max = std::numeric_limits<std::int64_t>::max();

constexpr setting core_settings[] = {
    {.name = "data.dir", .default_value = "./data",
     .doc = "`--data-dir`: the log and all state; locked by one process at a time"},
    {.name = "listeners", .type = setting_type::list, .default_value = "PLAINTEXT://0.0.0.0:9092",
     .doc = "`--kafka` (repeatable): Kafka's comma list of `PROTOCOL://HOST:PORT` (PLAINTEXT, "
            "SSL, SASL_PLAINTEXT, SASL_SSL), or `off`; `--kafka` flags win over it"},
    {.name = "http.listener", .default_value = "0.0.0.0:8082",
     .doc = "`--http`: `[http://|https://]HOST:PORT` or `off`: REST, WebSocket, SSE, the "
            "console, `/healthz`, `/readyz`, `/metrics`"},
    {.name = "sqs.listener", .default_value = "0.0.0.0:9324",
     .doc = "`--sqs`: `[http://|https://]HOST:PORT` or `off`: the SQS API"},
    {.name = "advertised.listeners",
     .doc = "`--advertise-kafka`: one `HOST:PORT` or `PROTOCOL://HOST:PORT` that Metadata tells "
            "clients to connect to",
     .shown_default = "the address each client connected to"},
    {.name = "log.level", .default_value = "info",
     .doc = "`--log-level`: `trace`, `debug`, `info`, `warn`, `error`, `off`, for every area and "
            "for the areas named (`warn,storage=debug`)"},
    {.name = "log.format", .default_value = "text",
     .doc = "`--log-format`: `text`, or `json` (one object per line)"},
    {.name = "io.threads", .type = setting_type::integer, .default_value = "0",
     .doc = "`--io-threads`: network threads (0: one per core)", .min = 0, .max = 256,
     .shown_default = "one per core"},
};

std::string trim_blanks(std::string item) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    return item;
}

/// "256 MiB" for a byte count that is a whole number of KiB, MiB, GiB or TiB; "" otherwise.
std::string binary_size(std::int64_t v) {
    constexpr std::pair<std::int64_t, const char*> units[] = {
        {std::int64_t{1} << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}};
    for (auto [size, name] : units) {
        if (v >= size && v % size == 0) {
            return std::to_string(v / size) + " " + name;
        }
    }
    return "";
}

std::string_view unit_name(setting_unit u) {
    switch (u) {
        case setting_unit::none:
            return "";
        case setting_unit::bytes:
            return "bytes";
        case setting_unit::bytes_per_second:
            return "bytes/s";
        case setting_unit::milliseconds:
            return "ms";
        case setting_unit::seconds:
            return "s";
        case setting_unit::minutes:
            return "minutes";
        case setting_unit::hours:
            return "hours";
    }
    return "";
}

/// A bound as the doc writes it: 2^40 rather than 1099511627776.
std::string bound_text(std::int64_t v) {
    if (v > 1024 && (v & (v - 1)) == 0) {
        int bits = 0;
        while ((std::int64_t{1} << bits) != v) {
            ++bits;
        }
        return "2^" + std::to_string(bits);
    }
    return std::to_string(v);
}

/// The "values" column and --help's: the range, the unit, and whether it changes live.
std::string values_text(const setting& s) {
    std::string out;
    switch (s.type) {
        case setting_type::boolean:
            out = "true, false";
            break;
        case setting_type::integer: {
            if (!s.range.empty()) {
                out = std::string(s.range);
            } else if (s.min != no_min && s.max != no_max) {
                out = bound_text(s.min) + " to " + bound_text(s.max);
            } else if (s.min != no_min) {
                out = bound_text(s.min) + " or more";
            } else if (s.max != no_max) {
                out = "at most " + bound_text(s.max);
            } else {
                out = "an integer";
            }
            if (auto u = unit_name(s.unit); !u.empty()) {
                out += ", " + std::string(u);
            }
            break;
        }
        case setting_type::decimal:
            out = "a number";
            break;
        case setting_type::string:
            break;
        case setting_type::list:
            out = "a comma list";
            break;
    }
    if (s.change == setting_change::live) {
        out += out.empty() ? "dynamic" : "; dynamic";
    }
    return out;
}

std::string default_text(const setting& s) {
    if (!s.shown_default.empty()) {
        return std::string(s.shown_default);
    }
    if (s.default_value.empty()) {
        return "none";
    }
    std::string out = "`" + std::string(s.default_value) + "`";
    if (s.unit == setting_unit::bytes) {
        std::int64_t v = 0;
        const auto d = s.default_value;
        auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
        if (ec == std::errc() && ptr == d.data() + d.size() && v >= (1 << 20)) {
            if (auto size = binary_size(v); !size.empty()) {
                out += " (" + size + ")";
            }
        }
    }
    return out;
}

/// Text for a markdown table cell: a '|' (as in `[http://|https://]`) would end the cell.
std::string cell(std::string text) {
    for (std::size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2)) {
        text.insert(at, 1, '\\');
    }
    return text;
}

/// The markers of one table's section in the doc.
std::string begin_marker(std::string_view module) {
    return "<!-- settings:" + std::string(module) + " -->";
}
std::string end_marker(std::string_view module) {
    return "<!-- /settings:" + std::string(module) + " -->";
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, char separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::string item = trim_blanks(text.substr(start, end - start));
        if (!item.empty()) {
            out.push_back(std::move(item));
        }
        start = end + 1;
    }
    return out;
}

const setting_table& core_setting_table() {
    static const setting_table table{
        .module = "core", .title = "Listeners, data and logging", .settings = core_settings};
    return table;
}

const setting* setting_catalog::find(std::string_view name) const {
    for (const auto& t : tables_) {
        std::string_view plain = name;
        if (!t.prefix.empty()) {
            // "listener.name.<name>." with one of the table's names.
            const auto hole = t.prefix.find("<name>");
            const auto head = t.prefix.substr(0, hole);
            const auto tail = t.prefix.substr(hole + 6);
            if (name.starts_with(head)) {
                for (auto n : t.prefix_names) {
                    const std::string whole = std::string(head) + std::string(n) + std::string(tail);
                    if (name.starts_with(whole)) {
                        plain = name.substr(whole.size());
                        break;
                    }
                }
            }
        }
        for (const auto& s : t.settings) {
            if (s.name == plain || (!s.alias.empty() && s.alias == plain)) {
                return &s;
            }
        }
    }
    return nullptr;
}

bool setting_catalog::passed_through(std::string_view name) const {
    for (const auto& t : tables_) {
        if (!t.passthrough_prefix.empty() && name.size() > t.passthrough_prefix.size() &&
            name.starts_with(t.passthrough_prefix)) {
            return true;
        }
    }
    return false;
}

std::vector<std::string_view> setting_catalog::names() const {
    std::vector<std::string_view> out;
    for (const auto& t : tables_) {
        for (const auto& s : t.settings) {
            out.push_back(s.name);
            if (!s.alias.empty()) {
                out.push_back(s.alias);
            }
        }
    }
    return out;
}

std::string range_words(const setting& s) {
    if (!s.range.empty()) {
        return std::string(s.range);
    }
    if (s.min != no_min && s.max != no_max) {
        return "between " + std::to_string(s.min) + " and " + std::to_string(s.max);
    }
    if (s.min != no_min) {
        return "at least " + std::to_string(s.min);
    }
    return "at most " + std::to_string(s.max);
}

const std::string* config_values::value_of(const setting& s, std::string_view prefix,
                                           std::string* given_as) const {
    const auto& props = cfg_.properties;
    auto look = [&](std::string key) -> const std::string* {
        auto it = props.find(key);
        if (it == props.end()) {
            return nullptr;
        }
        *given_as = std::move(key);
        return &it->second;
    };
    if (!prefix.empty()) {
        if (auto* v = look(std::string(prefix) + std::string(s.name))) {
            return v;
        }
    }
    if (auto* v = look(std::string(s.name))) {
        return v;
    }
    if (!s.alias.empty()) {
        if (auto* v = look(std::string(s.alias))) {
            return v;
        }
    }
    return nullptr;
}

void config_values::fail_as(const std::string& given_as, const std::string& message) const {
    const std::string from = cfg_.origin(given_as);
    if (from.starts_with("--") && from != "--set") {
        throw config_error(from + ": " + message);  // a flag: the flag's name
    }
    if (from.empty() || from == "--set") {
        throw config_error(given_as + ": " + message);
    }
    throw config_error(given_as + " (from " + from + "): " + message);
}

void config_values::fail(const setting& s, const std::string& message) const {
    std::string given_as;
    if (value_of(s, {}, &given_as) == nullptr) {
        given_as = std::string(s.name);
    }
    fail_as(given_as, message);
}

bool config_values::is_set(const setting& s) const {
    std::string given_as;
    return value_of(s, {}, &given_as) != nullptr;
}

const std::map<std::string, std::string>& config_values::properties() const {
    return cfg_.properties;
}

std::int64_t config_values::get_int(const setting& s) const {
    std::string given_as = std::string(s.name);
    const std::string* given = value_of(s, {}, &given_as);
    const std::string text = given ? *given : std::string(s.default_value);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
        fail_as(given_as, "expected an integer, got '" + text + "'");
    }
    if (v < s.min || v > s.max || (v == 0 && !s.zero_allowed)) {
        fail_as(given_as, "must be " + range_words(s));
    }
    return v;
}

bool config_values::get_bool(const setting& s) const {
    std::string given_as = std::string(s.name);
    const std::string* given = value_of(s, {}, &given_as);
    const std::string text = given ? *given : std::string(s.default_value);
    if (text == "true") {
        return true;
    }
    if (text == "false") {
        return false;
    }
    fail_as(given_as, "expected true or false, got '" + text + "'");
}

std::string config_values::get_string(const setting& s) const {
    return get_string(s, {});
}

std::string config_values::get_string(const setting& s, std::string_view prefix) const {
    std::string given_as;
    const std::string* given = value_of(s, prefix, &given_as);
    return given ? *given : std::string(s.default_value);
}

std::vector<std::string> config_values::get_list(const setting& s) const {
    return split_comma_list(get_string(s));
}

std::string settings_help_text(const setting_catalog& catalog) {
    std::string out = "Settings (--set KEY=VALUE, the --config file, or SLUICE_<KEY>; "
                      "docs/configuration.md, sluice settings):\n";
    for (const auto& t : catalog.tables()) {
        out += "\n  " + std::string(t.title) + ":\n";
        for (const auto& s : t.settings) {
            std::string line = "    " + std::string(s.name);
            if (!s.default_value.empty()) {
                line += "=" + std::string(s.default_value);
            }
            const std::string values = values_text(s);
            if (!values.empty()) {
                line += " (" + values + ")";
            }
            out += line + "\n";
        }
        if (!t.prefix.empty()) {
            std::string names;
            for (auto n : t.prefix_names) {
                names += (names.empty() ? "" : ", ") + std::string(n);
            }
            out += "    each also as " + std::string(t.prefix) + "KEY, <name>: " + names + "\n";
        }
        if (!t.passthrough_prefix.empty()) {
            out += "    " + std::string(t.passthrough_prefix) +
                   "PROPERTY: any other, handed on as PROPERTY\n";
        }
    }
    return out;
}

std::string settings_markdown(const setting_table& table) {
    std::string out = "| setting | default | values | meaning |\n|---|---|---|---|\n";
    for (const auto& s : table.settings) {
        if (s.hidden) {
            continue;
        }
        std::string name = "`" + std::string(s.name) + "`";
        if (!s.alias.empty()) {
            name += " (`" + std::string(s.alias) + "`)";
        }
        out += "| " + name + " | " + cell(default_text(s)) + " | " + cell(values_text(s)) + " | " +
               cell(std::string(s.doc)) + " |\n";
    }
    if (!table.prefix.empty()) {
        std::string names;
        for (auto n : table.prefix_names) {
            names += (names.empty() ? "`" : ", `") + std::string(n) + "`";
        }
        out += "| `" + std::string(table.prefix) + "*` | | | any setting above for one " +
               "listener, winning over the plain key (`<name>`: " + names + ") |\n";
    }
    if (!table.passthrough_prefix.empty()) {
        out += "| `" + std::string(table.passthrough_prefix) + "*` | | | any other key under " +
               "the prefix is handed on as it is, prefix stripped |\n";
    }
    return out;
}

std::string regenerate_settings_doc(std::string_view doc, const setting_catalog& catalog,
                                    std::vector<std::string>* stale) {
    std::string out(doc);
    for (const auto& t : catalog.tables()) {
        const std::string begin = begin_marker(t.module);
        const std::string end = end_marker(t.module);
        const auto b = out.find(begin);
        const auto e = out.find(end);
        if (b == std::string::npos || e == std::string::npos || e < b) {
            throw config_error("the doc has no section " + begin + " ... " + end + " for the " +
                               std::string(t.title) + " settings");
        }
        const auto from = b + begin.size();
        const std::string fresh = "\n" + settings_markdown(t);
        if (out.compare(from, e - from, fresh) != 0) {
            out.replace(from, e - from, fresh);
            if (stale) {
                stale->emplace_back(t.module);
            }
        }
    }
    return out;
}

int run_settings_command(const std::vector<std::string>& args, const setting_catalog& catalog,
                         std::ostream& out, std::ostream& err) {
    auto read_file = [](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            throw config_error("settings: cannot read " + path);
        }
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    };
    if (args.empty()) {
        for (const auto& t : catalog.tables()) {
            out << t.title << "\n";
            for (const auto& s : t.settings) {
                out << "  " << s.name << "  (" << setting_to_variable(s.name) << ")\n";
                out << "      default: " << default_text(s);
                if (const auto v = values_text(s); !v.empty()) {
                    out << "; values: " << v;
                }
                out << "\n      " << s.doc << "\n";
            }
        }
        return 0;
    }
    if (args[0] == "--markdown" && args.size() == 1) {
        for (const auto& t : catalog.tables()) {
            out << begin_marker(t.module) << "\n" << settings_markdown(t) << end_marker(t.module)
                << "\n\n";
        }
        return 0;
    }
    if ((args[0] == "--update-doc" || args[0] == "--check-doc") && args.size() == 2) {
        const std::string doc = read_file(args[1]);
        std::vector<std::string> stale;
        const std::string fresh = regenerate_settings_doc(doc, catalog, &stale);
        if (args[0] == "--check-doc") {
            if (stale.empty()) {
                return 0;
            }
            err << args[1] << ": the settings tables differ from the declared settings (";
            for (std::size_t i = 0; i < stale.size(); ++i) {
                err << (i ? ", " : "") << stale[i];
            }
            err << "); regenerate them with: sluice settings --update-doc " << args[1] << "\n";
            return 1;
        }
        if (!stale.empty()) {
            std::ofstream o(args[1], std::ios::binary | std::ios::trunc);
            o << fresh;
            if (!o) {
                throw config_error("settings: cannot write " + args[1]);
            }
        }
        return 0;
    }
    err << "usage: sluice settings [--markdown | --update-doc FILE | --check-doc FILE]\n";
    return 2;
}

}  // namespace sluice::gateway
