// Declared settings, the gateway's side (owned by gateway/core): the catalog of every module's
// table (backend/api/settings.h declares the table type), the typed getters that parse a value
// and refuse one out of range naming the setting and where it came from (a flag, the file or a
// SLUICE_ variable), and what the tables print: `sluice --help`'s settings list and the
// tables of docs/configuration.md (`sluice settings --markdown`).
//
// Each module declares its table beside its reader (http_settings.cc, tls_settings.cc,
// backend/native/native_settings.cc...); the start-up file puts them in one catalog
// (settings_catalog() in gateway/server/server.h), against which config::reject_unknown
// tells a misspelt setting from a known one.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "backend/api/settings.h"
#include "gateway/core/config.h"

namespace sluice::gateway {

using backend::api::setting;
using backend::api::setting_change;
using backend::api::setting_table;
using backend::api::setting_type;
using backend::api::setting_unit;

/// Splits a list at `separator`, trimming blanks and dropping empty items.
std::vector<std::string> split_list(const std::string& text, char separator);

/// Splits a comma list, trimming blanks and dropping empty items: the list type's parser.
inline std::vector<std::string> split_comma_list(const std::string& text) {
    return split_list(text, ',');
}

/// Every setting table sluice reads. Built once at start (and by `sluice settings`); then
/// read-only. The tables' storage outlives the catalog (static arrays).
class setting_catalog {
public:
    setting_catalog() = default;
    explicit setting_catalog(std::vector<setting_table> tables) : tables_(std::move(tables)) {}

    void add(const setting_table& t) { tables_.push_back(t); }
    void add(const std::vector<setting_table>& ts) { tables_.insert(tables_.end(), ts.begin(), ts.end()); }
    const std::vector<setting_table>& tables() const { return tables_; }

    /// The declaration `name` is given as: its own name, its alias, or a table's prefix with
    /// one of its names ("listener.name.sasl_ssl.ssl.key.location"). Null when none.
    const setting* find(std::string_view name) const;
    /// A declared setting, or a key under a table's passthrough_prefix.
    bool known(std::string_view name) const {
        return find(name) != nullptr || passed_through(name);
    }
    /// Whether `name` is under a table's passthrough_prefix (and longer than it).
    bool passed_through(std::string_view name) const;
    /// Every plain name and alias, for "did you mean".
    std::vector<std::string_view> names() const;

private:
    std::vector<setting_table> tables_;
};

/// The core table: the settings that are also flags (data.dir, listeners, ...).
const setting_table& core_setting_table();

/// Declared settings read from a config: parsed, defaulted and range-checked. A value that
/// does not parse or is out of range throws config_error "NAME (from SOURCE): what is wrong"
/// (NAME alone for --set; the flag for a flag). Not thread-safe; used at start-up.
class config_values final : public backend::api::setting_values {
public:
    explicit config_values(const config& cfg) : cfg_(cfg) {}

    std::int64_t get_int(const setting& s) const override;
    bool get_bool(const setting& s) const override;
    std::string get_string(const setting& s) const override;
    std::vector<std::string> get_list(const setting& s) const override;
    bool is_set(const setting& s) const override;
    const std::map<std::string, std::string>& properties() const override;
    [[noreturn]] void fail(const setting& s, const std::string& message) const override;

    /// The same under a table's prefix ("listener.name.https."): the prefixed name wins over
    /// the plain one, which wins over the default.
    std::string get_string(const setting& s, std::string_view prefix) const;

    /// An integer of a time unit as milliseconds (checked like get_int).
    std::chrono::milliseconds get_ms(const setting& s) const { return get_duration(s); }

private:
    /// The name a value was given under (name, alias, or prefixed), or nullptr when unset.
    const std::string* value_of(const setting& s, std::string_view prefix,
                                std::string* given_as) const;
    [[noreturn]] void fail_as(const std::string& given_as, const std::string& message) const;

    const config& cfg_;
};

/// What an error says a setting's value must be: its `range` words, else "between MIN and
/// MAX", "at least MIN" or "at most MAX".
std::string range_words(const setting& s);

/// `sluice --help`'s list: each table's title, then one line per setting (name, default and
/// unit, the SLUICE_ variable).
std::string settings_help_text(const setting_catalog& catalog);

/// One table as docs/configuration.md shows it: | setting | default | values | meaning |.
std::string settings_markdown(const setting_table& table);

/// The doc's marked sections (<!-- settings:MODULE --> ... <!-- /settings:MODULE -->) with
/// each table regenerated; the prose around them is kept. `stale` (when given) receives the
/// modules whose section changed. Throws config_error when a table has no section.
std::string regenerate_settings_doc(std::string_view doc, const setting_catalog& catalog,
                                    std::vector<std::string>* stale = nullptr);

/// `sluice settings [--markdown | --update-doc FILE | --check-doc FILE]`: prints the list
/// (with each setting's doc), the doc's tables, rewrites a doc's tables, or checks them (exit
/// 1, naming the command that regenerates them, when they differ).
int run_settings_command(const std::vector<std::string>& args, const setting_catalog& catalog,
                         std::ostream& out, std::ostream& err);

}  // namespace sluice::gateway
