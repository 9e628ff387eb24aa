#include "gateway/core/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "gateway/core/logging.h"
#include "gateway/core/version.h"
#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

std::string trim(std::string s) {
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    return s;
}

}  // namespace

std::string endpoint::to_string() const {
    if (!enabled) {
        return "off";
    }
    if (host.find(':') != std::string::npos) {
        return "[" + host + "]:" + std::to_string(port);
    }
    return host + ":" + std::to_string(port);
}

endpoint parse_endpoint(const std::string& text, const std::string& flag) {
    if (text == "off") {
        return endpoint{"", 0, false};
    }
    std::string host;
    std::string port_text;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            throw config_error(flag + ": expected [ADDRESS]:PORT, got '" + text + "'");
        }
        host = text.substr(1, close - 1);
        port_text = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string::npos) {
            throw config_error(flag + ": expected HOST:PORT or off, got '" + text + "'");
        }
        host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
    }
    if (host.empty()) {
        host = "0.0.0.0";
    }
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535) {
        throw config_error(flag + ": bad port in '" + text + "'");
    }
    return endpoint{host, static_cast<std::uint16_t>(port), true};
}

std::string_view to_string(security_protocol p) {
    switch (p) {
        case security_protocol::plaintext:
            return "PLAINTEXT";
        case security_protocol::ssl:
            return "SSL";
        case security_protocol::sasl_plaintext:
            return "SASL_PLAINTEXT";
        case security_protocol::sasl_ssl:
            return "SASL_SSL";
    }
    return "PLAINTEXT";
}

std::string kafka_listener_config::to_string() const {
    return std::string(gateway::to_string(protocol)) + "://" + where.to_string();
}

kafka_listener_config parse_kafka_listener(const std::string& text, const std::string& flag) {
    const auto scheme_end = text.find("://");
    if (scheme_end == std::string::npos) {
        return kafka_listener_config{security_protocol::plaintext, parse_endpoint(text, flag)};
    }
    std::string name = text.substr(0, scheme_end);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    kafka_listener_config l;
    if (name == "PLAINTEXT") {
        l.protocol = security_protocol::plaintext;
    } else if (name == "SSL") {
        l.protocol = security_protocol::ssl;
    } else if (name == "SASL_PLAINTEXT") {
        l.protocol = security_protocol::sasl_plaintext;
    } else if (name == "SASL_SSL") {
        l.protocol = security_protocol::sasl_ssl;
    } else {
        throw config_error(flag + ": unknown security protocol '" + text.substr(0, scheme_end) +
                           "' in '" + text +
                           "' (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; listener names "
                           "other than these are not supported)");
    }
    const std::string address = text.substr(scheme_end + 3);
    if (address == "off") {
        throw config_error(flag + ": expected " + name + "://HOST:PORT, got '" + text + "'");
    }
    l.where = parse_endpoint(address, flag);
    return l;
}

std::vector<kafka_listener_config> parse_kafka_listeners(const std::string& text,
                                                         const std::string& flag) {
    std::vector<kafka_listener_config> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::string item = trim(text.substr(start, end - start));
        if (item.empty()) {
            throw config_error(flag + ": empty entry in '" + text + "'");
        }
        out.push_back(parse_kafka_listener(item, flag));
        start = end + 1;
    }
    return out;
}

endpoint parse_http_endpoint(const std::string& text, const std::string& flag, bool& tls) {
    tls = false;
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.rfind("https://", 0) == 0) {
        tls = true;
        return parse_endpoint(text.substr(8), flag);
    }
    if (lower.rfind("http://", 0) == 0) {
        return parse_endpoint(text.substr(7), flag);
    }
    if (text.find("://") != std::string::npos) {
        throw config_error(flag + ": expected HOST:PORT, http://HOST:PORT or https://HOST:PORT, "
                           "got '" + text + "'");
    }
    return parse_endpoint(text, flag);
}

std::map<std::string, std::string> parse_properties(std::string_view text,
                                                    const std::string& source) {
    std::map<std::string, std::string> out;
    int n = 0;
    while (!text.empty()) {
        const auto end = text.find('\n');
        std::string line = trim(std::string(text.substr(0, end)));
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++n;
        if (line.empty() || line[0] == '#' || line[0] == '!') {
            continue;
        }
        auto eq = line.find_first_of("=:");
        if (eq == std::string::npos) {
            throw config_error(source + ":" + std::to_string(n) + ": expected key=value");
        }
        out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
    }
    return out;
}

std::map<std::string, std::string> read_properties_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw config_error("--config: cannot read " + path.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_properties(text.str(), path.string());
}

namespace {

/// Kafka broker settings that have no effect on one node; a Kafka server.properties may carry
/// them, so they are accepted (and ignored).
constexpr std::string_view single_node_settings[] = {
    "broker.id.generation.enable",
    "controlled.shutdown.enable",
    "default.replication.factor",
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
    "offsets.topic.replication.factor",
    "replica.lag.time.max.ms",
    "transaction.state.log.min.isr",
    "transaction.state.log.replication.factor",
    "unclean.leader.election.enable",
};

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        prev[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                               prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::vector<ignored_variable> config::reject_unknown(const setting_catalog& catalog) const {
    std::vector<ignored_variable> ignored;
    setting_catalog flags;
    flags.add(core_setting_table());
    auto known = [&](std::string_view key) { return catalog.known(key) || flags.known(key); };
    for (const auto& [key, value] : properties) {
        if (known(key) ||
            std::find(std::begin(single_node_settings), std::end(single_node_settings), key) !=
                std::end(single_node_settings)) {
            continue;
        }
        const std::string from = origin(key);
        const bool from_variable = from.starts_with("SLUICE_");
        if (!from_variable && (key == "log.dirs" || key == "log.dir")) {
            throw config_error(key + ": the data directory is set with --data-dir");
        }
        std::string nearest;
        std::size_t best = std::max<std::size_t>(2, key.size() / 5) + 1;
        std::vector<std::string_view> names = catalog.names();
        for (auto n : flags.names()) {
            names.push_back(n);
        }
        for (std::string_view k : names) {
            const std::size_t d = edit_distance(key, k);
            if (d < best) {
                best = d;
                nearest = std::string(k);
            }
        }
        if (from_variable) {
            ignored.push_back(
                {from, key, nearest.empty() ? std::string() : setting_to_variable(nearest)});
            continue;
        }
        throw config_error(key + ": unknown setting" +
                           (nearest.empty() ? std::string() : " (did you mean " + nearest + "?)"));
    }
    return ignored;
}

std::string ignored_variables_warning(const std::vector<ignored_variable>& ignored) {
    std::string out = "ignoring environment variables that name no setting:";
    for (std::size_t i = 0; i < ignored.size(); ++i) {
        out += (i == 0 ? " " : ", ") + ignored[i].name;
        if (!ignored[i].nearest.empty()) {
            out += " (did you mean " + ignored[i].nearest + "?)";
        }
    }
    out += " (settings: docs/configuration.md)";
    return out;
}

std::string usage_text() {
    return R"(sluice: a Kafka-compatible gateway with HTTP, WebSocket and SQS fronts over one log.

Usage: sluice [options]
       sluice users set|delete|list ...    SASL users and AWS keys (sluice users --help)
       sluice acls add|remove|list ...     ACLs, while sluice is stopped (sluice acls --help)
       sluice quotas set|delete|list ...   client quotas (sluice quotas --help)

sluice --data-dir DIR --kafka [PROTOCOL://]HOST:PORT --http [https://]HOST:PORT
       --sqs [https://]HOST:PORT [--advertise-kafka HOST:PORT] [--config FILE]
       [--set KEY=VALUE] [--log-level LEVEL]

  --data-dir DIR            where the log and state live (default ./data)
  --kafka [PROTOCOL://]HOST:PORT|off
                            a Kafka protocol listener (default 0.0.0.0:9092); may repeat.
                            PROTOCOL: PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL
                            (SASL: clients log in with sasl.enabled.mechanisms, users: sluice
                            users --help; SSL: ssl.certificate.location, ssl.key.location,
                            docs/security.md)
  --http [http://|https://]HOST:PORT|off
                            HTTP listener: REST, WebSocket, SSE, the console, /healthz,
                            /metrics (default 0.0.0.0:8082); https:// serves HTTPS with the
                            ssl.* settings (listener.name.https.ssl.* for this one only)
  --sqs [http://|https://]HOST:PORT|off
                            SQS API listener (default 0.0.0.0:9324); https:// as for --http
  --upstream HOST:PORT[,HOST:PORT...]
                            upstream mode: serve the HTTP, WebSocket and SSE fronts over this
                            Kafka cluster (bootstrap servers) instead of a local log; every
                            upstream.PROPERTY setting goes to librdkafka as PROPERTY
                            (docs/configuration.md#upstream-mode)
  --advertise-kafka HOST:PORT
                            the address Kafka clients are told to connect to (default: the
                            Kafka listener's address, or 127.0.0.1 when it listens on 0.0.0.0)
  --config FILE             broker settings as a properties file (Kafka's names, e.g.
                            num.partitions=3, log.segment.bytes=1073741824)
  --set KEY=VALUE           one broker setting; overrides --config; may repeat
  --log-level LEVEL[,AREA=LEVEL...]
                            trace, debug, info, warn, error, off (default info), for every
                            area or for one: server, storage, group, producer, txn, kafka,
                            http, sqs, queue, auth, upstream (e.g. warn,storage=debug)
  --log-format text|json    log lines as text (default) or one JSON object per line
  --io-threads N            network threads (default: one per core)
  --help                    this text
  --version                 the version

  sluice users set NAME --data-dir DIR [--aws-access-key-id ID]
                                            add or change a user (password, or AWS secret
                                            key with --aws-access-key-id, on stdin)
  sluice users delete NAME --data-dir DIR   remove a user
  sluice users list --data-dir DIR          list the users
  sluice acls add|remove|list --data-dir DIR [kafka-acls flags]
                                            change or list the ACLs (authorizer.enabled=true)
  sluice quotas set|delete|list --data-dir DIR [kafka-configs entity flags]
                                            change or list the client quotas

Every flag above except --config and --set is also a setting (data.dir, listeners,
http.listener, sqs.listener, upstream.bootstrap.servers, advertised.listeners, log.level,
log.format, io.threads), and every setting can be given as an environment variable: SLUICE_
and the key in capitals with '.' as '_', '_' as '__' and '-' as '___'
(SLUICE_LOG_RETENTION_HOURS=48). SLUICE_CONFIG names the config file. A flag wins over a variable, a variable over the file, the file over the
default. A listener given as 'off' is not opened. Settings: docs/configuration.md.
)";
}

namespace {

/// The flags that are also settings: each has a config-file key and a SLUICE_* variable.
struct flag_setting {
    std::string_view flag;
    std::string_view key;
};
constexpr flag_setting flag_settings[] = {
    {"--data-dir", "data.dir"},
    {"--kafka", "listeners"},
    {"--http", "http.listener"},
    {"--sqs", "sqs.listener"},
    {"--upstream", "upstream.bootstrap.servers"},
    {"--advertise-kafka", "advertised.listeners"},
    {"--log-level", "log.level"},
    {"--log-format", "log.format"},
    {"--io-threads", "io.threads"},
};

/// SLUICE_* variables that belong to the project's scripts and tests, not to sluice.
bool reserved_variable(std::string_view name) {
    constexpr std::string_view exact[] = {"SLUICE_BIN", "SLUICE_CONFIG",
                                          "SLUICE_JSON_BOTO3_PYTHON"};
    constexpr std::string_view prefixes[] = {"SLUICE_TEST_", "SLUICE_BENCH_", "SLUICE_FAULT_",
                                             "SLUICE_FAULTS_"};
    return std::find(std::begin(exact), std::end(exact), name) != std::end(exact) ||
           std::any_of(std::begin(prefixes), std::end(prefixes),
                       [&](std::string_view p) { return name.starts_with(p); });
}

unsigned parse_io_threads(const std::string& v, const std::string& name) {
    unsigned n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || ptr != v.data() + v.size() || n > 256) {
        throw config_error(name + ": expected a number of threads, got '" + v + "'");
    }
    return n;
}

/// advertised.listeners / --advertise-kafka: HOST:PORT, or one PROTOCOL://HOST:PORT entry.
endpoint parse_advertised(const std::string& v, const std::string& name) {
    if (v.find(',') != std::string::npos) {
        throw config_error(name + ": one address is advertised for every listener, got '" + v +
                           "'");
    }
    const auto scheme_end = v.find("://");
    auto e = parse_endpoint(scheme_end == std::string::npos ? v : v.substr(scheme_end + 3), name);
    if (!e.enabled || e.port == 0) {
        throw config_error(name + ": needs a real HOST:PORT, got '" + v + "'");
    }
    return e;
}

/// Applies one flag-or-setting value to `c`; `name` is what an error calls it (the flag, the
/// key, or the variable that set it).
void apply_setting(config& c, std::string_view key, const std::vector<std::string>& values,
                   const std::string& name) {
    const std::string& v = values.back();
    if (key == "data.dir") {
        if (v.empty()) {
            throw config_error(name + ": needs a directory");
        }
        c.data_dir = v;
    } else if (key == "listeners") {
        c.kafka.clear();
        bool off = false;
        for (const auto& one : values) {
            if (one == "off") {
                off = true;
                continue;
            }
            auto parsed = parse_kafka_listeners(one, name);
            c.kafka.insert(c.kafka.end(), parsed.begin(), parsed.end());
        }
        if (off && !c.kafka.empty()) {
            throw config_error(name + ": 'off' cannot be combined with other listeners");
        }
    } else if (key == "http.listener") {
        c.http = parse_http_endpoint(v, name, c.http_tls);
    } else if (key == "sqs.listener") {
        c.sqs = parse_http_endpoint(v, name, c.sqs_tls);
    } else if (key == "advertised.listeners") {
        c.advertise_kafka = parse_advertised(v, name);
    } else if (key == "log.level") {
        parse_log_levels(v);  // refuses a bad level or area now, before start-up
        c.log_level = v;
    } else if (key == "log.format") {
        parse_log_format(v);
        c.log_format = v;
    } else if (key == "io.threads") {
        c.io_threads = parse_io_threads(v, name);
    } else if (key == "upstream.bootstrap.servers") {
        // Read through the upstream table (gateway/server/upstream_settings.h) like any setting.
        if (v.empty()) {
            throw config_error(name + ": needs HOST:PORT[,HOST:PORT...]");
        }
        c.properties[std::string(key)] = v;
    }
}

}  // namespace

std::string setting_to_variable(std::string_view key) {
    std::string out = "SLUICE_";
    for (char ch : key) {
        if (ch == '.') {
            out += '_';
        } else if (ch == '_') {
            out += "__";
        } else if (ch == '-') {
            out += "___";
        } else {
            out += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        }
    }
    return out;
}

std::optional<std::string> variable_to_setting(std::string_view name) {
    if (!name.starts_with("SLUICE_") || name.size() == 7) {
        return std::nullopt;
    }
    std::string out;
    for (std::size_t i = 7; i < name.size();) {
        if (name[i] != '_') {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
            ++i;
            continue;
        }
        std::size_t run = 0;
        while (i + run < name.size() && name[i + run] == '_') {
            ++run;
        }
        i += run;
        // Confluent's mapping: '_' is '.', '__' is '_', '___' is '-'.
        for (; run >= 3; run -= 3) {
            out += '-';
        }
        if (run == 2) {
            out += '_';
        } else if (run == 1) {
            out += '.';
        }
    }
    return out;
}

std::string config::origin(const std::string& key) const {
    auto it = sources.find(key);
    return it == sources.end() ? std::string() : it->second;
}

std::string config::explain(std::string message) const {
    const auto colon = message.find(':');
    if (colon == std::string::npos) {
        return message;
    }
    const std::string key = message.substr(0, colon);
    const std::string from = origin(key);
    if (from.empty() || from.starts_with("--")) {
        return message;
    }
    return key + " (from " + from + ")" + message.substr(colon);
}

std::optional<config> parse_command_line(int argc, char** argv,
                                         const setting_catalog* catalog) {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        if (std::strncmp(*e, "SLUICE_", 7) == 0) {
            env.emplace_back(*e);
        }
    }
    return parse_command_line(argc, argv, env, catalog);
}

std::optional<config> parse_command_line(int argc, char** argv,
                                         const std::vector<std::string>& environment,
                                         const setting_catalog* catalog) {
    config c;
    std::vector<std::pair<std::string, std::string>> sets;
    std::optional<std::filesystem::path> config_file;
    // The values each flag was given, in order (only --kafka may repeat).
    std::map<std::string_view, std::vector<std::string>> flags;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        bool has_inline = false;
        if (arg.rfind("--", 0) == 0) {
            auto eq = arg.find('=');
            if (eq != std::string::npos && arg.rfind("--set", 0) != 0) {
                value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
                has_inline = true;
            }
        }
        auto need_value = [&]() -> std::string {
            if (has_inline) {
                return value;
            }
            if (i + 1 >= argc) {
                throw config_error(arg + ": missing value");
            }
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            setting_catalog core;
            core.add(core_setting_table());
            const std::string text =
                usage_text() + "\n" + settings_help_text(catalog ? *catalog : core);
            std::fputs(text.c_str(), stdout);
            return std::nullopt;
        }
        if (arg == "--version") {
            std::puts(("sluice " + sluice_version_text()).c_str());
            return std::nullopt;
        }
        const auto fs = std::find_if(std::begin(flag_settings), std::end(flag_settings),
                                     [&](const flag_setting& f) { return f.flag == arg; });
        if (fs != std::end(flag_settings)) {
            // --kafka repeats; for the others the last one given wins.
            flags[fs->flag].push_back(need_value());
        } else if (arg == "--config") {
            config_file = need_value();
        } else if (arg == "--set" || arg.rfind("--set=", 0) == 0) {
            std::string kv = arg == "--set" ? need_value() : arg.substr(6);
            auto eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                throw config_error("--set: expected KEY=VALUE, got '" + kv + "'");
            }
            sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else {
            throw config_error("unknown option '" + arg + "' (see sluice --help)");
        }
    }
    // Precedence: flags (and --set) over SLUICE_* variables over the file over the defaults.
    std::vector<std::pair<std::string, std::string>> variables;
    for (const auto& entry : environment) {
        const auto eq = entry.find('=');
        if (eq == std::string::npos) {
            continue;
        }
        std::string name = entry.substr(0, eq);
        std::string value = entry.substr(eq + 1);
        if (name == "SLUICE_CONFIG") {
            if (!config_file) {
                if (value.empty()) {
                    throw config_error("SLUICE_CONFIG: needs a file name");
                }
                config_file = value;
            }
            continue;
        }
        if (reserved_variable(name)) {
            continue;
        }
        if (auto key = variable_to_setting(name); key && !key->empty()) {
            variables.emplace_back(std::move(name), std::move(value));
        }
    }
    if (config_file) {
        if (!std::filesystem::is_regular_file(*config_file)) {
            throw config_error("--config: no such file " + config_file->string());
        }
        c.properties = read_properties_file(*config_file);
        for (const auto& [k, v] : c.properties) {
            c.sources[k] = config_file->string();
        }
    }
    for (auto& [name, value] : variables) {
        const std::string key = *variable_to_setting(name);
        c.properties[key] = value;
        c.sources[key] = name;
    }
    for (auto& [k, v] : sets) {
        c.properties[k] = v;
        c.sources[k] = "--set";
    }
    for (const auto& f : flag_settings) {
        const std::string key(f.key);
        if (auto it = flags.find(f.flag); it != flags.end()) {
            apply_setting(c, f.key, it->second, std::string(f.flag));
            c.sources[key] = std::string(f.flag);
        } else if (auto p = c.properties.find(key); p != c.properties.end()) {
            const std::string from = c.origin(key);
            const std::string name =
                from == "--set" || from.empty() ? key : key + " (from " + from + ")";
            apply_setting(c, f.key, {p->second}, name);
        }
    }
    return c;
}

}  // namespace sluice::gateway
