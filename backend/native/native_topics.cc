#include "backend/native/native_topics.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "backend/log/errc.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "backend/native/blocking.h"

namespace sluice::backend::native {
namespace blog = backend::log;

namespace {

api::backend_error admin_failure(std::error_code ec, std::string why) {
    return api::backend_error{ec, why.empty() ? ec.message() : std::move(why)};
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

std::string join_list(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        if (!out.empty()) {
            out.push_back(',');
        }
        out += i;
    }
    return out;
}


}  // namespace

native_topics::native_topics(blog::log_manager& log, std::map<std::string, std::string> properties,
                             boost::asio::any_io_executor pool, const traffic& counters)
    : log_(log), properties_(std::move(properties)), pool_(std::move(pool)), traffic_(counters) {}

api::topic_description native_topics::describe_info(const blog::topic_info& info) {
    api::topic_description d;
    d.name = topic_name(info.name);
    d.id = info.id;
    d.partitions = info.partitions;
    d.internal = info.internal;
    d.overrides = info.overrides;
    return d;
}

api::awaitable<std::optional<api::topic_description>> native_topics::describe(topic_name name) {
    auto info = log_.find_topic(name.value);
    co_return info ? std::optional(describe_info(*info)) : std::nullopt;
}

api::awaitable<std::optional<api::topic_description>> native_topics::describe(uuid id) {
    auto info = log_.find_topic(id);
    co_return info ? std::optional(describe_info(*info)) : std::nullopt;
}

api::awaitable<std::vector<api::topic_description>> native_topics::list() {
    std::vector<api::topic_description> out;
    for (const auto& info : log_.list_topics()) {
        out.push_back(describe_info(info));
    }
    co_return out;
}

api::awaitable<api::backend_result<api::created_topic>> native_topics::create(api::new_topic spec) {
    std::string why;
    // Creating a topic writes and syncs files for every partition: seconds for thousands.
    auto created = co_await run_blocking(pool_, [&] {
        return log_.create_topic(spec.name.value, spec.partitions, spec.configs,
                                 spec.validate_only, &why);
    });
    if (!created) {
        co_return std::unexpected(admin_failure(created.error(), std::move(why)));
    }
    co_return api::created_topic{describe_info(*created), topic_configs(*created)};
}

api::awaitable<api::backend_result<void>> native_topics::remove(topic_name name) {
    auto deleted = co_await run_blocking(pool_, [&] { return log_.delete_topic(name.value); });
    if (!deleted) {
        co_return std::unexpected(admin_failure(deleted.error(), {}));
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> native_topics::create_partitions(topic_name name,
                                                                         std::int32_t total,
                                                                         bool validate_only) {
    auto grown = co_await run_blocking(
        pool_, [&] { return log_.create_partitions(name.value, total, validate_only); });
    if (!grown) {
        co_return std::unexpected(admin_failure(grown.error(), {}));
    }
    co_return api::backend_result<void>{};
}

std::vector<api::config_synonym> native_topics::broker_synonyms(
    std::string_view key, std::string_view default_value) const {
    std::vector<api::config_synonym> out;
    const auto names = blog::broker_config_synonyms(key);
    auto add_layer = [&](const std::map<std::string, std::string>& layer,
                         api::config_source source) {
        for (auto name : names) {
            auto it = layer.find(std::string(name));
            if (it != layer.end()) {
                out.push_back({it->first, it->second, source});
            }
        }
    };
    {
        std::lock_guard lock(dynamic_mu_);
        add_layer(dynamic_.broker, api::config_source::dynamic_broker);
        add_layer(dynamic_.cluster_default, api::config_source::dynamic_default_broker);
    }
    add_layer(properties_, api::config_source::static_broker);
    out.push_back({std::string(key), std::string(default_value),
                   api::config_source::default_config});
    return out;
}

std::vector<api::config_entry> native_topics::topic_configs(const blog::topic_info& topic) const {
    std::vector<api::config_entry> out;
    for (const auto& def : blog::topic_config_defs()) {
        api::config_entry e;
        e.name = std::string(def.name);
        e.value = topic.config.get(def.name);
        e.type = def.type;
        e.documentation = std::string(def.documentation);
        const auto override_it = topic.overrides.find(e.name);
        if (override_it != topic.overrides.end()) {
            e.synonyms.push_back({e.name, override_it->second, api::config_source::dynamic_topic});
        }
        // compat: Kafka lists the broker property's levels after the topic's own value.
        auto broker = broker_synonyms(def.broker_key.empty() ? def.name : def.broker_key,
                                      def.default_value);
        e.synonyms.insert(e.synonyms.end(), broker.begin(), broker.end());
        e.source = e.synonyms.front().source;
        out.push_back(std::move(e));
    }
    return out;
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>> native_topics::describe_configs(
    topic_name name) {
    auto topic = log_.find_topic(name.value);
    if (!topic) {
        co_return std::unexpected(api::backend_error{make_error_code(blog::errc::unknown_topic_or_partition),
                                                   "unknown topic '" + name.value + "'"});
    }
    co_return topic_configs(*topic);
}

api::awaitable<api::backend_result<void>> native_topics::replace_configs(
    topic_name name, std::map<std::string, std::string> configs, bool validate_only) {
    std::string why;
    auto altered = co_await run_blocking(
        pool_, [&] { return log_.alter_config(name.value, configs, validate_only, &why); });
    if (!altered) {
        co_return std::unexpected(admin_failure(altered.error(), std::move(why)));
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> native_topics::alter_configs(
    topic_name name, std::vector<api::config_change> changes, bool validate_only) {
    auto topic = log_.find_topic(name.value);
    if (!topic) {
        co_return std::unexpected(api::backend_error{make_error_code(blog::errc::unknown_topic_or_partition),
                                                   "unknown topic '" + name.value + "'"});
    }
    auto overrides = topic->overrides;
    using op = api::config_change::op;
    for (const auto& c : changes) {
        auto refuse = [](std::string message) {
            return std::unexpected(
                api::backend_error{make_error_code(api::errc::invalid_request), std::move(message)});
        };
        switch (c.operation) {
            case op::set:
                if (!c.value) {
                    co_return refuse("SET of '" + c.name + "' needs a value");
                }
                overrides[c.name] = *c.value;
                break;
            case op::remove:
                overrides.erase(c.name);
                break;
            case op::append:
            case op::subtract: {
                const auto* def = blog::find_topic_config_def(c.name);
                if (def == nullptr || def->type != blog::config_type::list || !c.value) {
                    co_return refuse("APPEND/SUBTRACT apply only to list configs, not '" + c.name +
                                     "'");
                }
                auto current = split_list(topic->config.get(c.name).value_or(""));
                for (const auto& item : split_list(*c.value)) {
                    auto it = std::find(current.begin(), current.end(), item);
                    if (c.operation == op::append) {
                        if (it == current.end()) {
                            current.push_back(item);
                        }
                    } else if (it != current.end()) {
                        current.erase(it);
                    }
                }
                overrides[c.name] = join_list(current);
                break;
            }
        }
    }
    co_return co_await replace_configs(std::move(name), std::move(overrides), validate_only);
}

namespace {

// compat: Kafka's DynamicLogConfig takes every broker default of a topic config as a
// cluster-wide dynamic config except log.message.format.version.
constexpr std::string_view not_dynamic_log_key = "log.message.format.version";

}  // namespace

std::vector<std::string> native_topics::dynamic_config_names() const {
    std::vector<std::string> out;
    for (auto key : blog::broker_default_keys()) {
        if (key != not_dynamic_log_key) {
            out.emplace_back(key);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

result<blog::topic_config> native_topics::layered_defaults(
    const api::dynamic_broker_configs& dynamic, std::string* error) const {
    auto props = properties_;
    blog::override_broker_properties(props, dynamic.cluster_default);
    blog::override_broker_properties(props, dynamic.broker);
    return blog::broker_defaults(props, error);
}

api::backend_result<void> native_topics::set_dynamic_configs(api::dynamic_broker_configs configs,
                                                           bool validate_only) {
    const auto names = dynamic_config_names();
    for (const auto* layer : {&configs.broker, &configs.cluster_default}) {
        for (const auto& [key, value] : *layer) {
            if (!std::binary_search(names.begin(), names.end(), key)) {
                return std::unexpected(api::backend_error{
                    make_error_code(api::errc::invalid_config),
                    "Cannot update these configs dynamically: Set(" + key + ")"});
            }
        }
    }
    std::string why;
    if (auto d = layered_defaults(configs, &why); !d) {
        return std::unexpected(
            api::backend_error{make_error_code(api::errc::invalid_config), std::move(why)});
    }
    if (!validate_only) {
        std::lock_guard lock(dynamic_mu_);
        dynamic_ = std::move(configs);
    }
    return {};
}

api::awaitable<void> native_topics::apply_dynamic_configs() {
    // On the pool: the log manager takes its admin lock, which a topic creation may hold
    // while it syncs files.
    co_await run_blocking(pool_, [this] {
        std::lock_guard apply(apply_mu_);
        api::dynamic_broker_configs current;
        {
            std::lock_guard lock(dynamic_mu_);
            current = dynamic_;
        }
        std::string why;
        auto d = layered_defaults(current, &why);
        if (!d) {
            // set_dynamic_configs checked them: only a bug gets here.
            storage_log().error("log: dynamic broker configs not applied: {}", why);
            return;
        }
        log_.set_defaults(*d);
    });
}

std::vector<api::config_entry> native_topics::backend_configs() const {
    std::vector<api::config_entry> out;
    auto add = [&](std::string name, std::string value, api::config_type type, std::string doc) {
        out.push_back(api::static_config_entry(std::move(name), std::move(value), type,
                                               std::move(doc), properties_));
    };
    using ct = api::config_type;
    add("log.dirs", std::filesystem::absolute(log_.data_dir()).string(), ct::string,
        "The directory holding the log (--data-dir).");
    add("default.replication.factor", "1", ct::int_, "Single node: always 1.");
    add("offsets.topic.replication.factor", "1", ct::short_, "Single node: always 1.");
    // The broker-level defaults of topic configs (log.retention.ms and friends): dynamic.
    const auto defaults = log_.defaults();
    for (const auto& def : blog::topic_config_defs()) {
        if (def.broker_key.empty()) {
            continue;
        }
        api::config_entry e;
        e.name = std::string(def.broker_key);
        e.value = defaults.get(def.name);
        e.type = def.type;
        e.documentation = std::string(def.documentation);
        e.synonyms = broker_synonyms(def.broker_key, def.default_value);
        e.source = e.synonyms.front().source;
        e.read_only = def.broker_key == not_dynamic_log_key;
        out.push_back(std::move(e));
    }
    // Their coarser synonyms, each with its own value where one is set.
    const std::pair<std::string_view, const char*> coarse[] = {
        {"log.retention.minutes", nullptr},
        {"log.retention.hours", "168"},
        {"log.roll.hours", "168"},
        {"log.roll.jitter.hours", "0"}};
    for (const auto& [key, kafka_default] : coarse) {
        api::config_entry e;
        e.name = std::string(key);
        e.type = ct::int_;
        e.documentation = "The same setting as " +
                          std::string(blog::broker_config_synonyms(key).front()) +
                          " in a coarser unit.";
        auto all = broker_synonyms(key, kafka_default ? kafka_default : "");
        for (auto& s : all) {
            if (s.name == key && s.source != api::config_source::default_config) {
                e.synonyms.push_back(s);
            }
        }
        if (kafka_default != nullptr) {
            e.synonyms.push_back({e.name, std::string(kafka_default),
                                  api::config_source::default_config});
        }
        if (e.synonyms.empty()) {
            e.source = api::config_source::default_config;
        } else {
            e.source = e.synonyms.front().source;
            e.value = e.synonyms.front().value;
        }
        out.push_back(std::move(e));
    }
    return out;
}

api::partition_state native_topics::state_of(const blog::partition_log& p) const {
    api::partition_state s;
    s.topic = topic_name(p.topic());
    s.partition = p.partition();
    s.log_start_offset = p.log_start_offset();
    s.high_watermark = p.high_watermark();
    s.log_end_offset = p.log_end_offset();
    s.leader_epoch = 0;
    s.size_bytes = p.size_bytes();
    if (const auto* c = traffic_.find(p.topic(), p.partition())) {
        s.bytes_in = c->bytes_in.load(std::memory_order_relaxed);
        s.records_in = c->records_in.load(std::memory_order_relaxed);
        s.bytes_out = c->bytes_out.load(std::memory_order_relaxed);
        s.records_out = c->records_out.load(std::memory_order_relaxed);
    }
    return s;
}

std::vector<api::partition_state> native_topics::partition_states() const {
    std::vector<api::partition_state> out;
    for (const auto& info : log_.list_topics()) {
        for (const auto& part : log_.partitions(info.name)) {
            if (part) {
                out.push_back(state_of(*part));
            }
        }
    }
    return out;
}

api::awaitable<api::storage_description> native_topics::describe_storage(
    std::vector<topic_name> topics) {
    api::storage_description d;
    d.path = std::filesystem::absolute(log_.data_dir()).string();
    struct statvfs fs {};
    if (::statvfs(d.path.c_str(), &fs) == 0) {
        d.total_bytes =
            static_cast<std::int64_t>(fs.f_blocks) * static_cast<std::int64_t>(fs.f_frsize);
        d.usable_bytes =
            static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
    }
    auto add_topic = [&](const std::string& name) {
        for (const auto& part : log_.partitions(name)) {
            if (part) {
                d.partitions.push_back(state_of(*part));
            }
        }
    };
    if (topics.empty()) {
        for (const auto& info : log_.list_topics()) {
            add_topic(info.name);
        }
    } else {
        for (const auto& t : topics) {
            add_topic(t.value);
        }
    }
    co_return d;
}

}  // namespace sluice::backend::native
