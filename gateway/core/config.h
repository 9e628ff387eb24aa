// The process configuration: command-line flags, the optional properties file (--config), and
// the broker settings it holds (Kafka's names: num.partitions, log.segment.bytes, ...).
// Built once in main before anything starts; read-only afterwards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::gateway {

/// A host:port to listen on or to advertise. `enabled` is false for "off".
struct endpoint {
    std::string host;
    std::uint16_t port = 0;
    bool enabled = true;

    std::string to_string() const;
};

/// Kafka's security protocols: the PROTOCOL:// of a Kafka listener.
enum class security_protocol { plaintext, ssl, sasl_plaintext, sasl_ssl };

/// Kafka's name: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL.
std::string_view to_string(security_protocol p);

/// One Kafka listener: where, and which security protocol it speaks.
struct kafka_listener_config {
    security_protocol protocol = security_protocol::plaintext;
    endpoint where;

    /// PROTOCOL://HOST:PORT.
    std::string to_string() const;
};

/// Thrown for bad flags or settings; main prints what() as one line and exits non-zero.
class config_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A SLUICE_* variable that names no setting sluice reads (Kubernetes' SLUICE_PORT=tcp://...
/// for a Service named sluice, or a misspelling): ignored, and listed in one warning at start.
struct ignored_variable {
    std::string name;     // SLUICE_PORT
    std::string key;      // the setting it would have been: port
    std::string nearest;  // the variable of the nearest known setting, or "" when none is close
};

/// The warning line for `ignored` (not empty): each variable, and "did you mean" for a near miss.
std::string ignored_variables_warning(const std::vector<ignored_variable>& ignored);

struct config {
    std::filesystem::path data_dir = "./data";
    /// --kafka (repeatable) or listeners= (Kafka's comma list); empty for --kafka off.
    std::vector<kafka_listener_config> kafka{
        {security_protocol::plaintext, endpoint{"0.0.0.0", 9092}}};
    endpoint http{"0.0.0.0", 8082};
    endpoint sqs{"0.0.0.0", 9324};
    /// --http / --sqs given as https://HOST:PORT.
    bool http_tls = false;
    bool sqs_tls = false;
    std::optional<endpoint> advertise_kafka;
    /// --log-level: a level for every area, and areas with their own ("warn,storage=debug").
    std::string log_level = "info";
    /// --log-format: text or json.
    std::string log_format = "text";
    /// Threads running io_contexts; 0 means one per core.
    unsigned io_threads = 0;
    /// Settings in Kafka's names: the --config file (or SLUICE_CONFIG), then the SLUICE_*
    /// variables, then each --set key=value (each wins over the one before). A variable that
    /// names no setting is here too until reject_unknown() tells it apart.
    std::map<std::string, std::string> properties;
    /// Where each setting came from: the file's name, the variable's name, "--set", or the flag.
    std::map<std::string, std::string> sources;

    /// The source of `key` (see `sources`), or "" for a default.
    std::string origin(const std::string& key) const;
    /// An error message "KEY: ..." with the setting's source added when it came from the
    /// environment or the file ("KEY (from SLUICE_X): ...").
    std::string explain(std::string message) const;

    /// A setting as an integer/bool/string, or `fallback` when unset; throws config_error when
    /// the value does not parse. Asking for a key makes it known (see reject_unknown).
    std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
    bool get_bool(const std::string& key, bool fallback) const;
    std::string get_string(const std::string& key, const std::string& fallback) const;

    /// Marks a key as one sluice understands although it is read another way (the log's
    /// topic defaults read the map directly).
    void mark_known(std::string_view key) const;
    /// Whether a reader asked for `key` or marked it known (complete once reject_unknown ran).
    bool known(std::string_view key) const { return known_.find(key) != known_.end(); }
    /// Once every reader has asked for its keys: throws config_error naming the first setting
    /// from the file or --set that no reader knows, with the nearest known key when one is
    /// close (a misspelling). A SLUICE_* variable that no reader knows is not an error: the
    /// environment holds variables sluice was never meant to read (Kubernetes' service links),
    /// so those are returned, for one warning, instead. Kafka settings that mean nothing on a
    /// single node (replication factors, thread counts) are accepted.
    std::vector<ignored_variable> reject_unknown() const;

private:
    mutable std::set<std::string, std::less<>> known_;
};

/// Parses argv, the SLUICE_* environment variables and the config file (--config or
/// SLUICE_CONFIG): flag > variable > file > default. Returns nullopt when --help or --version
/// was handled (text already printed). Throws config_error naming the flag, key or variable.
std::optional<config> parse_command_line(int argc, char** argv);
/// The same with the environment given as NAME=VALUE entries (tests).
std::optional<config> parse_command_line(int argc, char** argv,
                                         const std::vector<std::string>& environment);

/// A setting's variable name, Confluent's mapping: SLUICE_ + the key upper-cased with '.' as
/// '_', '_' as '__' and '-' as '___' (log.retention.hours: SLUICE_LOG_RETENTION_HOURS).
std::string setting_to_variable(std::string_view key);
/// The inverse; nullopt for a name without the SLUICE_ prefix.
std::optional<std::string> variable_to_setting(std::string_view name);

/// Parses "host:port", "[v6addr]:port", ":port" or "off". Throws config_error.
endpoint parse_endpoint(const std::string& text, const std::string& flag);

/// Parses one Kafka listener: "HOST:PORT" (plaintext) or "PROTOCOL://HOST:PORT" with PROTOCOL
/// one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (any case). Throws config_error.
kafka_listener_config parse_kafka_listener(const std::string& text, const std::string& flag);

/// Parses Kafka's `listeners=` value: a comma-separated list of PROTOCOL://HOST:PORT.
std::vector<kafka_listener_config> parse_kafka_listeners(const std::string& text,
                                                         const std::string& flag);

/// Parses --http / --sqs: "HOST:PORT", "http://HOST:PORT", "https://HOST:PORT" or "off";
/// `tls` tells whether https:// was asked for. Throws config_error.
endpoint parse_http_endpoint(const std::string& text, const std::string& flag, bool& tls);

/// Reads a Java-style properties file (key=value or key:value, # and ! comments). Throws
/// config_error.
std::map<std::string, std::string> read_properties_file(const std::filesystem::path& path);
/// The same over the file's text; errors name `source` and the line.
std::map<std::string, std::string> parse_properties(std::string_view text,
                                                    const std::string& source);

/// Levenshtein distance: how "did you mean" finds the nearest known name.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The text `sluice --help` prints.
std::string usage_text();

}  // namespace sluice::gateway
