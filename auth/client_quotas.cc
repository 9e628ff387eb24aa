#include "auth/client_quotas.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "auth/credential_store.h"
#include "auth/text_fields.h"

namespace sluice::auth {
namespace {

constexpr std::string_view file_magic = "sluice-quotas 1";
constexpr std::string_view default_name = "<default>";
constexpr std::array<std::string_view, quota_kind_count> kind_names = {
    "producer_byte_rate", "consumer_byte_rate", "request_percentage"};


std::string part_text(const entity_part& p) {
    return p.name ? *p.name : std::string(default_name);
}

// Why `value` cannot be the value of `kind`, or nullopt.
std::optional<quota_error> check_value(quota_kind kind, double value) {
    const std::string key(to_string(kind));
    if (!std::isfinite(value) || value <= 0) {
        return quota_error{quota_error::code::invalid_config,
                           key + " must be a positive number, not " + std::to_string(value)};
    }
    // compat: ClientQuotaControlManager.validateQuotaKeyValue: the byte rates are LONG configs.
    if (is_byte_rate(kind) && (value != std::floor(value) || value > 9.2e18)) {
        return quota_error{quota_error::code::invalid_request,
                           "Configuration " + key + " must be a Long value"};
    }
    return std::nullopt;
}

bool part_matches(const entity_part& p, const quota_filter_component& c) {
    if (!p.present) {
        return false;
    }
    switch (c.match_type) {
    case 0:
        return p.name && c.match && *p.name == *c.match;
    case 1:
        return !p.name;
    default:
        return p.name.has_value();
    }
}

}  // namespace

std::string entity_part_text(const entity_part& p) {
    if (!p.present) {
        return "-";
    }
    return p.name ? "=" + encode_field(*p.name) : std::string(default_name);
}

std::optional<entity_part> parse_entity_part(std::string_view s) {
    if (s == "-") {
        return entity_part{};
    }
    if (s == default_name) {
        return entity_part::default_entity();
    }
    if (s.empty() || s[0] != '=') {
        return std::nullopt;
    }
    auto name = decode_field(s.substr(1));
    if (!name) {
        return std::nullopt;
    }
    return entity_part::named(std::move(*name));
}

std::string_view to_string(quota_kind k) {
    return kind_names[static_cast<std::size_t>(k)];
}

std::optional<quota_kind> parse_quota_kind(std::string_view key) {
    for (std::size_t i = 0; i < kind_names.size(); ++i) {
        if (kind_names[i] == key) {
            return static_cast<quota_kind>(i);
        }
    }
    return std::nullopt;
}

std::string describe(const quota_entity& e) {
    std::string out;
    if (e.user.present) {
        out = "user=" + part_text(e.user);
    }
    if (e.client_id.present) {
        out += (out.empty() ? "" : ", ") + std::string("client-id=") + part_text(e.client_id);
    }
    return out;
}

// --- rate_sampler ----------------------------------------------------------------------------

rate_sampler::rate_sampler(int samples, std::chrono::milliseconds window)
    : samples_(std::max(samples, 1)), window_(std::max(window, std::chrono::milliseconds(1))) {}

void rate_sampler::purge(clock::time_point now) {
    const auto horizon = window_ * samples_;
    auto old = std::find_if(kept_.begin(), kept_.end(),
                            [&](const sample& s) { return now - s.start < horizon; });
    kept_.erase(kept_.begin(), old);
}

void rate_sampler::record(double amount, clock::time_point now) {
    purge(now);
    if (kept_.empty() || now - kept_.back().start >= window_) {
        if (static_cast<int>(kept_.size()) == samples_) {
            kept_.erase(kept_.begin());
        }
        kept_.push_back({now, 0});
    }
    kept_.back().total += amount;
}

std::chrono::milliseconds rate_sampler::span(clock::time_point now) {
    purge(now);
    if (kept_.empty()) {
        return window_;
    }
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - kept_.front().start);
    return std::max(elapsed, window_);
}

double rate_sampler::rate(clock::time_point now) {
    const auto over = span(now);
    double total = 0;
    for (const auto& s : kept_) {
        total += s.total;
    }
    return total * 1000.0 / static_cast<double>(over.count());
}

bool rate_sampler::idle(clock::time_point now) const {
    return kept_.empty() || now - kept_.back().start >= window_ * samples_;
}

double rate_sampler::headroom(double quota, clock::time_point now) {
    const auto over = span(now);
    double total = 0;
    for (const auto& s : kept_) {
        total += s.total;
    }
    return quota * static_cast<double>(over.count()) / 1000.0 - total;
}

std::chrono::milliseconds throttle_time(double rate, double quota, std::chrono::milliseconds span,
                                        std::chrono::milliseconds cap) {
    if (quota <= 0 || rate <= quota) {
        return std::chrono::milliseconds(0);
    }
    const double ms = (rate - quota) / quota * static_cast<double>(span.count());
    if (ms >= static_cast<double>(cap.count())) {
        return cap;
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(ms)));
}

// --- entities ----------------------------------------------------------------------------------

std::optional<quota_error> parse_entity(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& parts,
    quota_entity& out) {
    out = {};
    if (parts.empty()) {
        return quota_error{quota_error::code::invalid_request, "the entity has no component"};
    }
    for (const auto& [type, name] : parts) {
        entity_part* p = type == "user"        ? &out.user
                         : type == "client-id" ? &out.client_id
                                               : nullptr;
        if (p == nullptr) {
            return quota_error{quota_error::code::invalid_request,
                               "unsupported quota entity type '" + type +
                                   "' (sluice serves user and client-id)"};
        }
        if (p->present) {
            return quota_error{quota_error::code::invalid_request,
                               "duplicate entity type '" + type + "'"};
        }
        if (name && name->empty()) {
            return quota_error{quota_error::code::invalid_request,
                               "empty " + type + " name (null is the default entity)"};
        }
        *p = name ? entity_part::named(*name) : entity_part::default_entity();
    }
    return std::nullopt;
}

// --- client_quotas ---------------------------------------------------------------------------

client_quotas::client_quotas(quota_settings settings, std::filesystem::path file)
    : settings_(std::move(settings)), file_(std::move(file)) {
    if (!file_.empty()) {
        load();
    }
    update_any();
}

std::filesystem::path client_quotas::path_in(const std::filesystem::path& data_dir) {
    return data_dir / "quotas";
}

void client_quotas::update_any() {
    any_.store(!entries_.empty() || settings_.producer_default || settings_.consumer_default,
               std::memory_order_relaxed);
}

std::optional<client_quotas::bound> client_quotas::find_locked(quota_kind kind,
                                                               std::string_view user,
                                                               std::string_view client_id) const {
    const auto u = entity_part::named(std::string(user));
    const auto c = entity_part::named(std::string(client_id));
    const auto d = entity_part::default_entity();
    const entity_part none;
    const std::array<quota_entity, 8> order = {
        quota_entity{u, c}, quota_entity{u, d},    quota_entity{u, none},
        quota_entity{d, c}, quota_entity{d, d},    quota_entity{d, none},
        quota_entity{none, c}, quota_entity{none, d}};
    const auto k = static_cast<std::size_t>(kind);
    for (const auto& e : order) {
        auto it = entries_.find(e);
        if (it != entries_.end() && it->second[k]) {
            return bound{*it->second[k], e};
        }
    }
    const auto& fallback = kind == quota_kind::producer_byte_rate   ? settings_.producer_default
                           : kind == quota_kind::consumer_byte_rate ? settings_.consumer_default
                                                                    : std::nullopt;
    if (fallback) {
        return bound{*fallback, quota_entity{none, d}};
    }
    return std::nullopt;
}

std::optional<client_quotas::bound> client_quotas::find(quota_kind kind, std::string_view user,
                                                        std::string_view client_id) const {
    if (!any()) {
        return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    return find_locked(kind, user, client_id);
}

rate_sampler* client_quotas::sampler_for(quota_kind kind, const bound& b, std::string_view user,
                                         std::string_view client_id, bool create,
                                         clock::time_point now) {
    // Drop the rates nobody used for a whole window span, at most once per span.
    const auto horizon = settings_.window * settings_.samples;
    if (now - last_sweep_ >= horizon) {
        last_sweep_ = now;
        std::erase_if(sensors_, [&](auto& kv) { return kv.second.idle(now); });
    }
    sensor_key key{kind, b.entity.user.present ? std::string(user) : std::string(),
                   b.entity.client_id.present ? std::string(client_id) : std::string()};
    auto it = sensors_.find(key);
    if (it == sensors_.end()) {
        if (!create) {
            return nullptr;
        }
        it = sensors_.emplace(std::move(key), rate_sampler(settings_.samples, settings_.window))
                 .first;
    }
    return &it->second;
}

std::chrono::milliseconds client_quotas::throttle_after(quota_kind kind, std::string_view user,
                                                        std::string_view client_id,
                                                        std::optional<double> amount,
                                                        clock::time_point now) {
    if (!any()) {
        return std::chrono::milliseconds(0);
    }
    std::lock_guard lock(mutex_);
    const auto b = find_locked(kind, user, client_id);
    if (!b) {
        return std::chrono::milliseconds(0);
    }
    // Only a recording creates the sampler: a check alone never starts a window.
    rate_sampler* s = sampler_for(kind, *b, user, client_id, amount.has_value(), now);
    if (s == nullptr) {
        return std::chrono::milliseconds(0);
    }
    if (amount) {
        s->record(*amount, now);
    }
    return throttle_time(s->rate(now), b->value, s->span(now),
                         settings_.window * settings_.samples);
}

std::chrono::milliseconds client_quotas::record(quota_kind kind, std::string_view user,
                                                std::string_view client_id, double amount,
                                                clock::time_point now) {
    return throttle_after(kind, user, client_id, amount, now);
}

std::chrono::milliseconds client_quotas::throttle_now(quota_kind kind, std::string_view user,
                                                      std::string_view client_id,
                                                      clock::time_point now) {
    return throttle_after(kind, user, client_id, std::nullopt, now);
}

std::optional<double> client_quotas::headroom(quota_kind kind, std::string_view user,
                                              std::string_view client_id,
                                              clock::time_point now) {
    if (!any()) {
        return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    const auto b = find_locked(kind, user, client_id);
    if (!b) {
        return std::nullopt;
    }
    rate_sampler* s = sampler_for(kind, *b, user, client_id, false, now);
    if (s == nullptr) {
        return b->value * static_cast<double>(settings_.window.count()) / 1000.0;
    }
    return s->headroom(b->value, now);
}

std::optional<quota_error> client_quotas::describe(
    const std::vector<quota_filter_component>& filter, bool strict,
    std::vector<described>& out) const {
    out.clear();
    bool seen_user = false;
    bool seen_client = false;
    for (const auto& c : filter) {
        bool* seen = c.entity_type == "user"        ? &seen_user
                     : c.entity_type == "client-id" ? &seen_client
                                                    : nullptr;
        if (seen == nullptr) {
            return quota_error{quota_error::code::invalid_request,
                               "unsupported quota entity type '" + c.entity_type + "'"};
        }
        if (*seen) {
            return quota_error{quota_error::code::invalid_request,
                               "duplicate filter component for '" + c.entity_type + "'"};
        }
        *seen = true;
        if (c.match_type < 0 || c.match_type > 2) {
            return quota_error{quota_error::code::invalid_request,
                               "unknown match type " + std::to_string(c.match_type)};
        }
        if ((c.match_type == 0) != c.match.has_value()) {
            return quota_error{quota_error::code::invalid_request,
                               c.match_type == 0 ? "an exact match needs a name"
                                                 : "only an exact match carries a name"};
        }
    }
    std::lock_guard lock(mutex_);
    for (const auto& [entity, values] : entries_) {
        bool ok = true;
        for (const auto& c : filter) {
            const entity_part& p = c.entity_type == "user" ? entity.user : entity.client_id;
            ok = ok && part_matches(p, c);
        }
        if (strict) {
            ok = ok && (!entity.user.present || seen_user) &&
                 (!entity.client_id.present || seen_client);
        }
        if (!ok) {
            continue;
        }
        auto& d = out.emplace_back();
        d.entity = entity;
        for (std::size_t k = 0; k < quota_kind_count; ++k) {
            if (values[k]) {
                d.values.emplace_back(static_cast<quota_kind>(k), *values[k]);
            }
        }
    }
    return std::nullopt;
}

std::optional<quota_error> client_quotas::validate(const std::vector<quota_op>& ops) {
    std::array<bool, quota_kind_count> seen{};
    for (const auto& op : ops) {
        const auto kind = parse_quota_kind(op.key);
        if (!kind) {
            return quota_error{quota_error::code::invalid_request,
                               "Invalid configuration key " + op.key};
        }
        if (seen[static_cast<std::size_t>(*kind)]) {
            return quota_error{quota_error::code::invalid_request,
                               "duplicate quota key " + op.key};
        }
        seen[static_cast<std::size_t>(*kind)] = true;
        if (!op.remove) {
            if (auto bad = check_value(*kind, op.value)) {
                return bad;
            }
        }
    }
    return std::nullopt;
}

void client_quotas::alter(
    const std::vector<std::pair<quota_entity, std::vector<quota_op>>>& entries) {
    std::lock_guard lock(mutex_);
    auto next = entries_;
    for (const auto& [entity, ops] : entries) {
        auto& values = next[entity];
        for (const auto& op : ops) {
            const auto kind = parse_quota_kind(op.key);
            if (kind) {
                auto& v = values[static_cast<std::size_t>(*kind)];
                v = op.remove ? std::nullopt : std::optional<double>(op.value);
            }
        }
        if (std::none_of(values.begin(), values.end(), [](const auto& v) { return v; })) {
            next.erase(entity);
        }
    }
    save(next);
    entries_ = std::move(next);
    update_any();
}

void client_quotas::replace_entries(std::map<quota_entity, quota_values> entries) {
    std::lock_guard lock(mutex_);
    entries_ = std::move(entries);
    update_any();
}

std::map<quota_entity, quota_values> client_quotas::entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
}

void client_quotas::save(const std::map<quota_entity, quota_values>& entries) const {
    if (file_.empty()) {
        return;  // the cluster's quotas (upstream mode): nothing on disk
    }
    std::ostringstream text;
    text.precision(17);
    text << "# sluice client quotas: quota USER CLIENT KEY VALUE\n" << file_magic << "\n";
    for (const auto& [entity, values] : entries) {
        for (std::size_t k = 0; k < quota_kind_count; ++k) {
            if (values[k]) {
                text << "quota " << entity_part_text(entity.user) << ' '
                     << entity_part_text(entity.client_id) << ' ' << kind_names[k] << ' '
                     << *values[k]
                     << '\n';
            }
        }
    }
    write_private_file(file_, text.str());
}

void client_quotas::load() {
    read_record_file(file_, file_magic, "quota", [&](std::string_view line) {
        const auto fields = split_spaces(line);
        if (fields.size() != 5 || fields[0] != "quota") {
            throw bad_record("expected 'quota USER CLIENT KEY VALUE'");
        }
        quota_entity entity;
        const auto user = parse_entity_part(fields[1]);
        const auto client = parse_entity_part(fields[2]);
        if (!user || !client || (!user->present && !client->present)) {
            throw bad_record(
                "bad entity (each part '-', '<default>' or '=NAME', at least one set)");
        }
        entity.user = *user;
        entity.client_id = *client;
        const auto kind = parse_quota_kind(fields[3]);
        if (!kind) {
            throw bad_record("unknown quota key '" + std::string(fields[3]) + "'");
        }
        double value = 0;
        const std::string number(fields[4]);
        std::size_t used = 0;
        try {
            value = std::stod(number, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != number.size() || number.empty()) {
            throw bad_record("'" + number + "' is not a number");
        }
        if (auto why = check_value(*kind, value)) {
            throw bad_record(why->message);
        }
        entries_[entity][static_cast<std::size_t>(*kind)] = value;
    });
}

}  // namespace sluice::auth
