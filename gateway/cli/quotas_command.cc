#include "gateway/cli/quotas_command.h"

#include <charconv>
#include <cstdint>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "gateway/policy/audit.h"
#include "gateway/cli/command_flags.h"
#include "gateway/core/config.h"
#include "gateway/core/data_dir_lock.h"

namespace sluice::gateway {
namespace {

// The comma-separated items of a --add / --delete-config value, each trimmed of spaces.
std::vector<std::string> split_list(std::string_view s) {
    std::vector<std::string> out;
    while (true) {
        const auto comma = s.find(',');
        std::string_view item = s.substr(0, comma);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        out.emplace_back(item);
        if (comma == std::string_view::npos) {
            return out;
        }
        s.remove_prefix(comma + 1);
    }
}

// A decimal number, all of `s` (no hex, no sign but '-', no spaces); nullopt otherwise.
std::optional<double> parse_number(std::string_view s) {
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

// "1048576.0", "1.5": the value as kafka-configs prints a double (without its exponent form).
std::string format_value(double v) {
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    std::string s = ec == std::errc() ? std::string(buf, end) : std::to_string(v);
    if (s.find('.') == std::string::npos) {
        s += ".0";
    }
    return s;
}

std::string entity_text(const auth::quota_entity& e) {
    auto part = [](const auth::entity_part& p, const std::string& type) {
        return p.name ? type + " '" + *p.name + "'" : "the default " + type;
    };
    std::string out;
    if (e.user.present) {
        out = part(e.user, "user-principal");
    }
    if (e.client_id.present) {
        out += (out.empty() ? "" : ", ") + part(e.client_id, "client-id");
    }
    return out;
}

void add_part(quotas_args& a, const std::string& flag, const std::string& type,
              std::optional<std::string> name) {
    for (const auto& [t, n] : a.entity_parts) {
        if (t == type) {
            throw config_error("quotas: " + flag + ": the " + type +
                               " is already given (one --" +
                               (type == "user" ? "user or --user-default"
                                               : "client-id or --client-default") +
                               ")");
        }
    }
    a.entity_parts.emplace_back(type, std::move(name));
}

}  // namespace

quotas_args parse_quotas_args(const std::vector<std::string>& args) {
    quotas_args a;
    std::vector<std::string> add_items;
    std::vector<std::string> delete_items;
    bool add_given = false;
    bool delete_given = false;
    command_flags flags("quotas", args);
    while (flags.next()) {
        const std::string arg = flags.arg();
        auto nonempty = [&] {
            std::string v = flags.value();
            if (v.empty()) {
                throw config_error("quotas: " + arg + ": empty value");
            }
            return v;
        };
        auto no_value = [&] {
            if (flags.has_inline_value()) {
                throw config_error("quotas: " + arg + " takes no value");
            }
        };
        if (a.where.take(flags, "quotas")) {
            continue;
        }
        if (arg == "--user") {
            add_part(a, arg, "user", nonempty());
        } else if (arg == "--user-default") {
            no_value();
            add_part(a, arg, "user", std::nullopt);
        } else if (arg == "--client-id") {
            add_part(a, arg, "client-id", nonempty());
        } else if (arg == "--client-default") {
            no_value();
            add_part(a, arg, "client-id", std::nullopt);
        } else if (arg == "--add" || arg == "--add-config") {
            for (auto& item : split_list(nonempty())) {
                add_items.push_back(std::move(item));
            }
            add_given = true;
        } else if (arg == "--delete-config" || arg == "--keys") {
            for (auto& item : split_list(nonempty())) {
                delete_items.push_back(std::move(item));
            }
            delete_given = true;
        } else if (arg.starts_with("-")) {
            throw config_error("quotas: unknown option '" + arg + "' (see sluice quotas --help)");
        } else if (a.action.empty()) {
            a.action = arg;
        } else {
            throw config_error("quotas: unexpected argument '" + arg + "'");
        }
    }
    if (a.action != "set" && a.action != "delete" && a.action != "list") {
        throw config_error("quotas: unknown action '" + a.action + "' (set, delete or list)");
    }
    const std::string what = "quotas " + a.action;
    a.where.check(what);
    if (a.action != "set" && add_given) {
        throw config_error(what + ": --add goes with set only");
    }
    if (a.action != "delete" && delete_given) {
        throw config_error(what + ": --delete-config goes with delete only");
    }
    if (a.action != "list" && a.entity_parts.empty()) {
        throw config_error(what + ": name an entity (--user NAME or --user-default, and/or "
                                  "--client-id NAME or --client-default)");
    }
    if (a.action == "set" && !add_given) {
        throw config_error("quotas set: give --add 'KEY=VALUE,...'");
    }
    if (a.action == "delete" && !delete_given) {
        throw config_error("quotas delete: give --delete-config 'KEY,...'");
    }
    for (const auto& item : add_items) {
        const auto eq = item.find('=');
        if (item.empty() || eq == std::string::npos || eq == 0) {
            throw config_error("quotas set: --add: expected KEY=VALUE, got '" + item + "'");
        }
        const std::string key = item.substr(0, eq);
        const std::string number = item.substr(eq + 1);
        const auto value = parse_number(number);
        if (!value) {
            throw config_error("quotas set: --add: " + key + ": '" + number +
                               "' is not a number");
        }
        a.ops.push_back({key, *value, false});
    }
    for (const auto& key : delete_items) {
        if (key.empty()) {
            throw config_error("quotas delete: --delete-config: empty key");
        }
        a.ops.push_back({key, 0, true});
    }
    // The same checks as AlterClientQuotas: the entity, then the keys and values.
    if (!a.entity_parts.empty()) {
        if (auto bad = auth::parse_entity(a.entity_parts, a.entity)) {
            throw config_error(what + ": " + bad->message);
        }
    }
    if (auto bad = auth::client_quotas::validate(a.ops)) {
        const bool unknown_key = bad->message.starts_with("Invalid configuration key");
        throw config_error(what + ": " + bad->message +
                           (unknown_key ? " (keys: producer_byte_rate, consumer_byte_rate, "
                                          "request_percentage)"
                                        : ""));
    }
    return a;
}

std::string describe_quota_line(const auth::quota_entity& entity,
                                const std::vector<std::pair<auth::quota_kind, double>>& values) {
    std::string list;
    for (const auto& [kind, value] : values) {
        list += (list.empty() ? "" : ", ") + std::string(auth::to_string(kind)) + "=" +
                format_value(value);
    }
    return "Quota configs for " + entity_text(entity) + " are " + list;
}

std::string quotas_usage_text() {
    return R"(Usage: sluice quotas set WHERE ENTITY --add 'KEY=VALUE[,KEY=VALUE...]'
       sluice quotas delete WHERE ENTITY --delete-config 'KEY[,KEY...]'
       sluice quotas list WHERE [ENTITY]
WHERE: --data-dir DIR | --upstream BOOTSTRAP.
ENTITY: --user NAME | --user-default, and/or --client-id NAME | --client-default.
KEY: producer_byte_rate, consumer_byte_rate (bytes/s, whole numbers), request_percentage.

Manages the client quotas of a stopped sluice (DIR/quotas), with kafka-configs' entity
flags (--add-config is --add, --keys is --delete-config). Values are checked as
AlterClientQuotas checks them. `list` prints every entity with quotas, or those matching
ENTITY (an entity naming user alice also matches alice's client-id entities). A running
sluice changes its quotas through AlterClientQuotas (kafka-configs --bootstrap-server)
instead.
)" + security_location_usage();
}

int run_quotas_command(const std::vector<std::string>& args, std::ostream& out,
                       const upstream_opener& open) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        out << quotas_usage_text();
        return args.empty() ? 2 : 0;
    }
    const quotas_args a = parse_quotas_args(args);

    security_state state("quotas", a.where, open,
                         "is in use by a running sluice; stop it to change its quotas (or use "
                         "AlterClientQuotas)");
    auth::client_quotas* quotas = &state.quotas();

    std::vector<auth::quota_filter_component> filter;
    for (const auto& [type, name] : a.entity_parts) {
        filter.push_back({type, static_cast<std::int8_t>(name ? 0 : 1), name});
    }
    auto print_matching = [&](bool strict) {
        std::vector<auth::client_quotas::described> found;
        if (auto bad = quotas->describe(filter, strict, found)) {
            throw config_error("quotas " + a.action + ": " + bad->message);
        }
        for (const auto& d : found) {
            out << describe_quota_line(d.entity, d.values) << "\n";
        }
        return found.size();
    };
    if (a.action == "list") {
        print_matching(false);
        return 0;
    }

    // The running server's audit log file, written directly (the server is stopped);
    // upstream mode has no data dir.
    std::optional<audit_log> audit;
    std::optional<scoped_audit_log> audit_installed;
    if (a.where.data_dir) {
        audit.emplace(audit_settings_for(*a.where.data_dir), false);
        audit_installed.emplace(*audit);
    }
    try {
        quotas->alter({{a.entity, a.ops}});
        state.publish();
    } catch (const std::runtime_error& e) {
        std::cerr << "sluice: quotas: " << e.what() << "\n";
        return 1;
    }
    audit_client_quotas_changed(command_audit_source(), a.entity, a.ops);
    out << "Completed updating quota configs for " << entity_text(a.entity) << ".\n";
    if (print_matching(true) == 0) {
        out << "No quota configs for " << entity_text(a.entity) << "\n";
    }
    return 0;
}

}  // namespace sluice::gateway
