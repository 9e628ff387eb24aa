// Declared settings (owned by backend/api): what a module reads from the configuration, said
// once as data. A backend declares its settings here the way the gateway's modules do (the
// native backend in backend/native/native_settings.h; an upstream backend will declare
// upstream.*), and reads them through `setting_values`, which the gateway implements: parsing,
// range errors that name the setting and where its value came from, the SLUICE_* variable
// names, `sluice --help` and the tables of docs/configuration.md all come from these tables
// (gateway/core/settings.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::backend::api {

/// How a setting's value is written.
enum class setting_type : std::uint8_t {
    boolean,  // true or false
    integer,  // a whole number in [min, max], in `unit`
    decimal,  // a number with a fraction (read by its module, not by the gateway's getters)
    string,   // any text
    list,     // a comma list: blanks around items trimmed, empty items dropped
};

/// What an integer counts.
enum class setting_unit : std::uint8_t {
    none,
    bytes,
    bytes_per_second,
    milliseconds,
    seconds,
    minutes,
    hours,
};

/// Whether a new value needs a restart (a static broker config) or can change while sluice
/// runs (a dynamic broker config: AlterConfigs on a BROKER resource).
enum class setting_change : std::uint8_t { restart, live };

/// One setting. Aggregate with designated initializers; tables are constexpr arrays.
struct setting {
    std::string_view name;  // Kafka's name where Kafka has one: num.partitions
    setting_type type = setting_type::string;
    /// The default, written as a value would be ("268435456", "true", "a,b"); "" for none.
    std::string_view default_value = {};
    /// One line for the doc's table and --help (markdown: `code` and links are fine).
    std::string_view doc = {};
    setting_unit unit = setting_unit::none;
    /// Bounds of an integer, inclusive.
    std::int64_t min = std::numeric_limits<std::int64_t>::min();
    std::int64_t max = std::numeric_limits<std::int64_t>::max();
    /// Words for the allowed values when [min, max] does not say it all ("-1 (no bound) or a
    /// positive size"); a value in [min, max] that is 0 is refused when `zero_allowed` is false.
    std::string_view range = {};
    bool zero_allowed = true;
    setting_change change = setting_change::restart;
    /// An older name read when `name` is not set (Kafka's broker.id for node.id).
    std::string_view alias = {};
    /// The default as the doc says it when it is not a plain value ("one per core").
    std::string_view shown_default = {};
    /// Left out of the doc's generated table (a setting the doc describes elsewhere).
    bool hidden = false;
};

/// One module's settings, in the order the doc lists them.
struct setting_table {
    std::string_view module;  // the doc's marker: <!-- settings:MODULE -->
    std::string_view title;   // "HTTP front"
    std::span<const setting> settings;
    /// A prefix every setting of the table is also read under, winning over the plain name:
    /// "listener.name.<name>." with <name> one of `prefix_names` (Kafka's per-listener keys).
    std::string_view prefix = {};
    std::span<const std::string_view> prefix_names = {};
    /// Every key under this prefix ("upstream.") that no setting of the table names is accepted
    /// as it is and handed on by its module, prefix stripped (a client library's own
    /// properties); "" for none.
    std::string_view passthrough_prefix = {};
};

/// The values of declared settings, parsed and checked: what a backend reads its tables
/// through. The gateway's implementation (gateway/core/settings.h) throws its configuration
/// error, naming the setting and its source, for a value that does not parse or is out of
/// range. Used once at start-up; not thread-safe.
class setting_values {
public:
    virtual ~setting_values() = default;

    /// The value, or the declared default; an integer is checked against [min, max].
    virtual std::int64_t get_int(const setting& s) const = 0;
    virtual bool get_bool(const setting& s) const = 0;
    virtual std::string get_string(const setting& s) const = 0;
    virtual std::vector<std::string> get_list(const setting& s) const = 0;
    /// Whether the setting (or its alias) was given at all.
    virtual bool is_set(const setting& s) const = 0;
    /// Every setting as given, by name: for a module that parses a family of settings itself
    /// (the log's topic defaults, which AlterConfigs changes as strings too).
    virtual const std::map<std::string, std::string>& properties() const = 0;
    /// Throws the configuration error "NAME (from SOURCE): message".
    [[noreturn]] virtual void fail(const setting& s, const std::string& message) const = 0;

    /// An integer of unit milliseconds, seconds, minutes or hours as a duration.
    std::chrono::milliseconds get_duration(const setting& s) const {
        const std::int64_t v = get_int(s);
        switch (s.unit) {
            case setting_unit::seconds:
                return std::chrono::seconds(v);
            case setting_unit::minutes:
                return std::chrono::minutes(v);
            case setting_unit::hours:
                return std::chrono::hours(v);
            case setting_unit::none:
            case setting_unit::bytes:
            case setting_unit::bytes_per_second:
            case setting_unit::milliseconds:
                break;
        }
        return std::chrono::milliseconds(v);
    }
};

}  // namespace sluice::backend::api
