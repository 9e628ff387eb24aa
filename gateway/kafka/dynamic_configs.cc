#include "gateway/kafka/dynamic_configs.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "gateway/kafka/logger.h"
#include "auth/credential_store.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

constexpr const char* file_header = "sluice-dynamic-configs 1";

std::string encode(const std::string& s) {
    if (s.empty()) {
        return "-";
    }
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

std::optional<std::string> decode(std::string_view s) {
    if (s == "-") {
        return std::string();
    }
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out.push_back(s[i]);
            continue;
        }
        unsigned v = 0;
        if (i + 2 >= s.size()) {
            return std::nullopt;
        }
        auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
        if (ec != std::errc{} || end != s.data() + i + 3) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(v));
        i += 2;
    }
    return out;
}

// Kafka prints a Scala Set: "Set(a, b)".
std::string scala_set(const std::set<std::string>& names) {
    std::string out = "Set(";
    for (const auto& n : names) {
        if (out.size() > 4) {
            out += ", ";
        }
        out += n;
    }
    return out + ")";
}

config_outcome refuse(kafka::error_code e, std::string message) {
    return config_outcome{e, std::move(message), false};
}

// Kafka's dynamic broker configs that have nothing to act on in sluice (thread pools,
// connection limits, metric reporters, the log cleaner's buffers): known names, refused as
// not dynamic rather than as unknown.
constexpr std::string_view kafka_only_names[] = {
    "background.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.threads",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "metric.reporters",
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "num.replica.alter.log.dirs.threads",
    "num.replica.fetchers",
    "log.message.format.version",
};

}  // namespace

dynamic_configs::dynamic_configs(std::filesystem::path file, std::int32_t node_id,
                                 api::topics& topics, api::groups& groups,
                                 static_name_check is_static)
    : file_(std::move(file)),
      node_id_(node_id),
      topics_(topics),
      groups_(groups),
      is_static_(std::move(is_static)) {
    for (auto& n : topics_.dynamic_config_names()) {
        dynamic_names_.insert(std::move(n));
    }
}

std::filesystem::path dynamic_configs::path_in(const std::filesystem::path& data_dir) {
    return data_dir / "dynamic-configs";
}

void dynamic_configs::load() {
    std::lock_guard lock(mu_);
    std::ifstream in(file_);
    if (!in) {
        if (std::filesystem::exists(file_)) {
            throw std::runtime_error("cannot read " + file_.string());
        }
        return;
    }
    std::string line;
    std::size_t number = 0;
    bool header = false;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line.front() == '#') {
            continue;
        }
        if (!header) {
            if (line != file_header) {
                throw std::runtime_error(file_.string() + ": not a dynamic config file (line " +
                                         std::to_string(number) + ")");
            }
            header = true;
            continue;
        }
        std::istringstream fields(line);
        std::string type, name, key, value, extra;
        fields >> type >> name >> key >> value;
        auto n = decode(name);
        auto k = decode(key);
        auto v = decode(value);
        if ((type != "broker" && type != "group") || !n || !k || !v || k->empty() ||
            (fields >> extra)) {
            throw std::runtime_error(file_.string() + ": damaged line " + std::to_string(number));
        }
        configs_[{type, *n}][*k] = *v;
    }
    // The broker layers, config by config, so that one the backend now refuses drops alone.
    api::dynamic_broker_configs accepted;
    for (const auto* name : {"", "this"}) {
        const std::string resource = std::string(name) == "this" ? std::to_string(node_id_) : "";
        auto it = configs_.find({"broker", resource});
        if (it == configs_.end()) {
            continue;
        }
        auto& layer = resource.empty() ? accepted.cluster_default : accepted.broker;
        for (auto c = it->second.begin(); c != it->second.end();) {
            auto candidate = accepted;
            (resource.empty() ? candidate.cluster_default : candidate.broker)[c->first] = c->second;
            if (auto r = topics_.set_dynamic_configs(candidate, true); !r) {
                kafka_log().error("dynamic broker config {}={} of broker '{}' ignored: {}",
                                  c->first, c->second, resource, r.error().message);
                c = it->second.erase(c);
                continue;
            }
            layer[c->first] = c->second;
            ++c;
        }
    }
    (void)topics_.set_dynamic_configs(accepted, false);
    std::size_t groups = 0;
    for (auto& [key, configs] : configs_) {
        if (key.type != "group") {
            continue;
        }
        if (auto r = groups_.set_group_configs(sluice::group_id(key.name), configs, false); !r) {
            kafka_log().error("configs of group '{}' ignored: {}", key.name, r.error().message);
            configs.clear();
            continue;
        }
        ++groups;
    }
    if (!configs_.empty()) {
        kafka_log().info("dynamic configs loaded: {} broker configs, {} cluster defaults, {} "
                         "groups with their own configs",
                         accepted.broker.size(), accepted.cluster_default.size(), groups);
    }
}

std::optional<config_outcome> dynamic_configs::apply_ops(
    config_map& current, const std::vector<config_op>& ops, bool replace,
    const std::function<bool(const std::string&)>& is_list) {
    // compat: ConfigAdminManager.preprocess's checks, with its messages.
    std::set<std::string> seen;
    std::string nulls;
    for (const auto& op : ops) {
        if (!seen.insert(op.name).second) {
            return refuse(kafka::error_code::invalid_request, "Error due to duplicate config keys");
        }
        if (op.operation != config_op::kind::remove && !op.value) {
            nulls += (nulls.empty() ? "" : ", ") + op.name;
        }
    }
    if (!nulls.empty()) {
        return refuse(kafka::error_code::invalid_request, "Null value not supported for : " + nulls);
    }
    if (replace) {
        current.clear();
    }
    for (const auto& op : ops) {
        switch (op.operation) {
            case config_op::kind::set:
                current[op.name] = *op.value;
                break;
            case config_op::kind::remove:
                current.erase(op.name);
                break;
            case config_op::kind::append:
            case config_op::kind::subtract: {
                const bool append = op.operation == config_op::kind::append;
                if (!is_list(op.name)) {
                    return refuse(kafka::error_code::invalid_config,
                                  std::string("Config value ") + (append ? "append" : "subtract") +
                                      " is not allowed for config key: " + op.name);
                }
                std::vector<std::string> items;
                auto split = [](const std::string& s) {
                    std::vector<std::string> out;
                    std::stringstream in(s);
                    std::string item;
                    while (std::getline(in, item, ',')) {
                        if (!item.empty()) {
                            out.push_back(item);
                        }
                    }
                    return out;
                };
                auto it = current.find(op.name);
                items = split(it != current.end() ? it->second : "");
                for (const auto& item : split(*op.value)) {
                    auto pos = std::find(items.begin(), items.end(), item);
                    if (append && pos == items.end()) {
                        items.push_back(item);
                    } else if (!append && pos != items.end()) {
                        items.erase(pos);
                    }
                }
                std::string joined;
                for (const auto& item : items) {
                    joined += (joined.empty() ? "" : ",") + item;
                }
                current[op.name] = joined;
                break;
            }
        }
    }
    return std::nullopt;
}

api::dynamic_broker_configs dynamic_configs::broker_layers_locked() const {
    api::dynamic_broker_configs layers;
    if (auto it = configs_.find({"broker", std::to_string(node_id_)}); it != configs_.end()) {
        layers.broker = it->second;
    }
    if (auto it = configs_.find({"broker", ""}); it != configs_.end()) {
        layers.cluster_default = it->second;
    }
    return layers;
}

std::map<std::string, std::string> dynamic_configs::cluster_default() const {
    std::lock_guard lock(mu_);
    return broker_layers_locked().cluster_default;
}

void dynamic_configs::save_locked() const {
    std::string text = std::string(file_header) + "\n";
    for (const auto& [key, configs] : configs_) {
        for (const auto& [k, v] : configs) {
            text += key.type + " " + encode(key.name) + " " + encode(k) + " " + encode(v) + "\n";
        }
    }
    auth::write_private_file(file_, text);
}

config_outcome dynamic_configs::alter_broker(const std::string& name,
                                             const std::vector<config_op>& ops, bool replace,
                                             bool validate_only) {
    // compat: ConfigAdminManager.validateResourceNameIsCurrentNodeId.
    if (!name.empty()) {
        std::int32_t id = 0;
        auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
        if (ec != std::errc{} || end != name.data() + name.size()) {
            return refuse(kafka::error_code::invalid_request,
                          "Node id must be an integer, but it is: " + name);
        }
        if (id != node_id_) {
            return refuse(kafka::error_code::invalid_request,
                          "Unexpected broker id, expected " + std::to_string(node_id_) +
                              ", but received " + name);
        }
    }
    const resource_key key{"broker", name};
    std::lock_guard lock(mu_);
    config_map next;
    if (auto it = configs_.find(key); it != configs_.end()) {
        next = it->second;
    }
    auto is_list = [this](const std::string& n) {
        if (n == "log.cleanup.policy") {
            return true;
        }
        if (dynamic_names_.count(n) == 0 && !is_static_(n)) {
            return true;  // unknown: refused below with its own error
        }
        return false;
    };
    if (auto refused = apply_ops(next, ops, replace, is_list)) {
        return *refused;
    }
    // compat: DynamicBrokerConfig.validateConfigs: names that cannot change while running
    // first (INVALID_REQUEST, as ConfigAdminManager wraps the ConfigException). Kafka takes
    // any other name as a custom config; sluice has no plugins to read one, so it refuses
    // them as unknown.
    std::set<std::string> not_dynamic;
    std::set<std::string> unknown;
    for (const auto& [k, v] : next) {
        if (dynamic_names_.count(k) != 0) {
            continue;
        }
        const bool kafka_only = std::find(std::begin(kafka_only_names), std::end(kafka_only_names),
                                          k) != std::end(kafka_only_names);
        (kafka_only || is_static_(k) ? not_dynamic : unknown).insert(k);
    }
    if (!not_dynamic.empty()) {
        return refuse(kafka::error_code::invalid_request,
                      "Cannot update these configs dynamically: " + scala_set(not_dynamic));
    }
    if (!unknown.empty()) {
        return refuse(kafka::error_code::invalid_config,
                      "Unknown broker config name: " + *unknown.begin());
    }
    auto layers = broker_layers_locked();
    (name.empty() ? layers.cluster_default : layers.broker) = next;
    if (auto r = topics_.set_dynamic_configs(layers, validate_only); !r) {
        return refuse(kafka::error_code::invalid_request, r.error().message);
    }
    if (validate_only) {
        return {};
    }
    if (auto refused = store_locked(key, next, [this] {
            (void)topics_.set_dynamic_configs(broker_layers_locked(), false);
        })) {
        return *refused;
    }
    return config_outcome{kafka::error_code::none, {}, true};
}

std::optional<config_outcome> dynamic_configs::store_locked(
    const resource_key& key, const config_map& next, const std::function<void()>& reapply_previous) {
    auto previous = configs_;
    if (next.empty()) {
        configs_.erase(key);
    } else {
        configs_[key] = next;
    }
    try {
        save_locked();
        return std::nullopt;
    } catch (const std::exception& e) {
        // What is in effect goes back to what is on disk.
        configs_ = std::move(previous);
        reapply_previous();
        kafka_log().error("dynamic configs of {} '{}' not saved: {}", key.type, key.name, e.what());
        return refuse(kafka::error_code::kafka_storage_error,
                      std::string("the dynamic configs could not be saved: ") + e.what());
    }
}

config_outcome dynamic_configs::alter_group(const std::string& group,
                                            const std::vector<config_op>& ops, bool replace,
                                            bool validate_only) {
    const resource_key key{"group", group};
    std::lock_guard lock(mu_);
    config_map next;
    if (auto it = configs_.find(key); it != configs_.end()) {
        next = it->second;
    }
    if (auto refused = apply_ops(next, ops, replace, [](const std::string&) { return false; })) {
        return *refused;
    }
    if (auto r = groups_.set_group_configs(sluice::group_id(group), next, validate_only); !r) {
        return refuse(kafka::error_code::invalid_config, r.error().message);
    }
    if (validate_only) {
        return {};
    }
    if (auto refused = store_locked(key, next, [this, &key, &group] {
            config_map restored;
            if (auto it = configs_.find(key); it != configs_.end()) {
                restored = it->second;
            }
            (void)groups_.set_group_configs(sluice::group_id(group), restored, false);
        })) {
        return *refused;
    }
    return {};
}

}  // namespace sluice::gateway
