#include "gateway/http/rest/consumer_store.h"

#include <algorithm>
#include <map>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/httpcore/logger.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
namespace kafka = protocol::kafka;

namespace {

std::string key_of(const sluice::group_id& group, const std::string& name) {
    std::string k = group.value;
    k.push_back('\0');
    k += name;
    return k;
}

const char* reset_name(offset_reset r) {
    switch (r) {
        case offset_reset::earliest: return "earliest";
        case offset_reset::latest: return "latest";
        case offset_reset::none: return "none";
    }
    return "latest";
}

}  // namespace

consumer_store::consumer_store(api::client& client, boost::asio::any_io_executor ex)
    : client_(client), strand_(boost::asio::make_strand(ex)) {}

std::string consumer_store::encode(const stored_instance& s) {
    json::writer w;
    w.start_object();
    w.field("group", s.group.value);
    w.field("name", s.name);
    w.field("format", s.config.format == media::json ? "json" : "binary");
    w.field("auto_offset_reset", reset_name(s.config.auto_offset_reset));
    w.key("auto_commit");
    w.boolean(s.config.auto_commit);
    w.key("fetch_min_bytes");
    if (s.config.fetch_min_bytes) {
        w.int64(*s.config.fetch_min_bytes);
    } else {
        w.null();
    }
    w.key("request_timeout_ms");
    if (s.config.request_timeout) {
        w.int64(s.config.request_timeout->count());
    } else {
        w.null();
    }
    w.key("topics");
    w.start_array();
    for (const auto& t : s.topics) {
        w.string(t.value);
    }
    w.end_array();
    w.key("pattern");
    if (s.pattern) {
        w.string(*s.pattern);
        w.field("pattern_principal", s.pattern_principal);
        w.field("pattern_host", s.pattern_host);
    } else {
        w.null();
    }
    w.key("assigned");
    w.start_array();
    for (const auto& tp : s.assigned) {
        w.start_object();
        w.field("topic", tp.topic.value);
        w.field("partition", tp.partition.value);
        w.end_object();
    }
    w.end_array();
    w.key("positions");
    w.start_array();
    for (const auto& [tp, off] : s.positions) {
        w.start_object();
        w.field("topic", tp.topic.value);
        w.field("partition", tp.partition.value);
        w.field("offset", off);
        w.end_object();
    }
    w.end_array();
    if (!s.owner.empty()) {
        w.field("owner", s.owner);
    }
    w.end_object();
    return w.str();
}

std::optional<stored_instance> consumer_store::decode(std::string_view text) {
    json::document doc;
    if (json::parse(text, doc) || !doc.IsObject()) {
        return std::nullopt;
    }
    stored_instance s;
    auto group = json::get_string(doc, "group");
    auto name = json::get_string(doc, "name");
    if (!group || !name) {
        return std::nullopt;
    }
    s.group = sluice::group_id(std::string(*group));
    s.name = std::string(*name);
    s.config.format = json::get_string(doc, "format") == std::optional<std::string_view>("json")
                          ? media::json
                          : media::binary;
    const auto reset = json::get_string(doc, "auto_offset_reset").value_or("latest");
    s.config.auto_offset_reset = reset == "earliest" ? offset_reset::earliest
                                 : reset == "none"   ? offset_reset::none
                                                     : offset_reset::latest;
    s.config.auto_commit = json::get_bool(doc, "auto_commit").value_or(true);
    if (auto v = json::get_int(doc, "fetch_min_bytes")) {
        s.config.fetch_min_bytes = static_cast<std::int32_t>(*v);
    }
    if (auto v = json::get_int(doc, "request_timeout_ms")) {
        s.config.request_timeout = std::chrono::milliseconds(*v);
    }
    if (const auto* t = json::member(doc, "topics"); t && t->IsArray()) {
        for (const auto& v : t->GetArray()) {
            if (v.IsString()) {
                s.topics.emplace_back(std::string(json::as_view(v)));
            }
        }
    }
    if (auto p = json::get_string(doc, "pattern")) {
        s.pattern = std::string(*p);
        s.pattern_principal = std::string(json::get_string(doc, "pattern_principal").value_or(""));
        s.pattern_host = std::string(json::get_string(doc, "pattern_host").value_or(""));
    }
    auto read_tp = [](const json::value& v) -> std::optional<topic_partition> {
        auto topic = json::get_string(v, "topic");
        auto partition = json::get_int(v, "partition");
        if (!topic || !partition) {
            return std::nullopt;
        }
        return topic_partition{topic_name(std::string(*topic)),
                               partition_id(static_cast<std::int32_t>(*partition))};
    };
    if (const auto* a = json::member(doc, "assigned"); a && a->IsArray()) {
        for (const auto& v : a->GetArray()) {
            if (auto tp = read_tp(v)) {
                s.assigned.push_back(*tp);
            }
        }
    }
    if (const auto* p = json::member(doc, "positions"); p && p->IsArray()) {
        for (const auto& v : p->GetArray()) {
            auto tp = read_tp(v);
            auto off = json::get_int(v, "offset");
            if (tp && off) {
                s.positions[*tp] = *off;
            }
        }
    }
    s.owner = std::string(json::get_string(doc, "owner").value_or(""));
    return s;
}

boost::asio::awaitable<std::optional<std::int64_t>> consumer_store::end_offset(
    clock::time_point deadline) {
    const topic_name name{std::string(topic)};
    boost::asio::steady_timer timer(strand_);
    for (auto pause = std::chrono::milliseconds(100);; pause = std::min(pause * 2, max_pause)) {
        std::vector<api::offset_query> q{
            {name, partition_id(0), api::offset_spec{api::offset_spec::kind::latest, -1}}};
        auto found =
            co_await client_.admin().list_offsets(std::move(q), api::isolation::read_uncommitted);
        if (found.size() == 1 && !found[0].error) {
            co_return found[0].off.value;
        }
        const auto why = found.size() == 1 ? found[0].error : api::backend_error{};
        if (why && why.reason() == api::errc::unknown_topic_or_partition) {
            co_return std::int64_t{-1};  // nothing stored yet
        }
        if (clock::now() + pause >= deadline) {
            http_log().warn("REST consumers: cannot read {}: {}", topic,
                            why ? why.text() : std::string("no answer"));
            co_return std::nullopt;
        }
        // A gateway may start before its upstream answers (both restarted at once): again.
        http_log().debug("REST consumers: {} not readable yet: {}", topic,
                         why ? why.text() : std::string("no answer"));
        timer.expires_after(pause);
        boost::system::error_code ec;
        co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }
}

boost::asio::awaitable<consumer_store::loaded> consumer_store::load() {
    loaded out;
    const auto deadline = clock::now() + load_deadline;
    const auto last = co_await end_offset(deadline);
    if (!last) {
        co_return out;
    }
    if (*last >= 0) {
        topic_ready_ = true;  // it exists: the first write need not create it
    }
    if (*last <= 0) {
        co_return out;
    }
    const topic_name name{std::string(topic)};
    // A consumer of the one partition, without a group, from the start to the end found
    // above: the last record of each key wins.
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    o.client = api::client_info{"sluice-rest-store", ""};
    auto reader = client_.open_consumer(std::move(o), strand_.get_inner_executor());
    const api::topic_partition tp{name, partition_id(0)};
    reader->assign({tp});
    std::map<std::string, std::optional<std::string>> latest;
    api::message_sink sink = [&](const topic_name&, partition_id, const kafka::record_view& r) {
        if (!r.key) {
            return true;
        }
        std::string key(protocol::as_chars(*r.key));
        latest[key] = r.value ? std::optional<std::string>(
                                    std::string(protocol::as_chars(*r.value)))
                              : std::nullopt;
        return true;
    };
    api::poll_limits limits;
    limits.max_bytes = 16 * 1024 * 1024;
    limits.partition_max_bytes = 16 * 1024 * 1024;
    limits.max_wait = std::chrono::milliseconds(500);
    auto position = [&] {
        const auto at = reader->positions();
        const auto it = at.find(tp);
        return it == at.end() ? std::int64_t{-1} : it->second.value;
    };
    std::string failure;
    while (position() < *last) {
        if (clock::now() >= deadline) {
            failure = "read to offset " + std::to_string(position()) + " of " +
                      std::to_string(*last) + " before the deadline";
            break;
        }
        auto res = co_await reader->poll(limits, sink);
        if (!res) {
            failure = res.error().text();
        } else if (!res->empty() && (*res)[0].error) {
            failure = (*res)[0].error.text();
        } else {
            failure.clear();
        }
        // A failed poll is tried again until the deadline (the cluster may be coming back).
    }
    out.next = std::max<std::int64_t>(position(), 0);
    reader->close(false);
    if (!failure.empty()) {
        http_log().warn("REST consumers: reading {} failed: {}", topic, failure);
    }
    for (const auto& [key, value] : latest) {
        if (!value) {
            continue;
        }
        if (auto s = decode(*value)) {
            out.instances.push_back(std::move(*s));
        }
    }
    topic_ready_ = true;
    co_return out;
}

boost::asio::awaitable<void> consumer_store::follow(std::int64_t from, record_handler on_record,
                                                    std::function<void(std::int64_t)> on_position,
                                                    std::function<bool()> stopping) {
    boost::asio::steady_timer timer(strand_);
    auto pause = [&](std::chrono::milliseconds d) -> boost::asio::awaitable<void> {
        timer.expires_after(d);
        boost::system::error_code ec;
        co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    };
    // Until the topic exists (no gateway has stored an instance yet), look for it now and
    // then: a consumer assigned a partition of a missing topic may not notice it appear.
    while (!stopping()) {
        const auto last = co_await end_offset(clock::now() + poll_wait);
        if (last && *last >= 0) {
            break;
        }
        co_await pause(max_pause);
    }
    if (stopping()) {
        co_return;
    }
    const topic_name name{std::string(topic)};
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    o.client = api::client_info{"sluice-rest-store", ""};
    auto reader = client_.open_consumer(std::move(o), strand_.get_inner_executor());
    const api::topic_partition tp{name, partition_id(0)};
    reader->assign({tp});
    if (from > 0) {
        reader->seek({{tp, offset(from)}});
    }
    api::message_sink sink = [&](const topic_name&, partition_id, const kafka::record_view& r) {
        if (!r.key) {
            return true;
        }
        const std::string_view key = protocol::as_chars(*r.key);
        const auto nul = key.find('\0');
        if (nul == std::string_view::npos) {
            return true;
        }
        sluice::group_id group{std::string(key.substr(0, nul))};
        std::string instance(key.substr(nul + 1));
        if (!r.value) {
            on_record(std::move(group), std::move(instance), std::nullopt);
            return true;
        }
        auto s = decode(protocol::as_chars(*r.value));
        if (!s) {
            http_log().warn("REST consumers: a record of {} for instance {} of group {} does "
                            "not decode; skipped",
                            topic, instance, group.value);
            return true;
        }
        on_record(std::move(group), std::move(instance), std::move(s));
        return true;
    };
    api::poll_limits limits;
    limits.max_bytes = 4 * 1024 * 1024;
    limits.partition_max_bytes = 4 * 1024 * 1024;
    limits.max_wait = poll_wait;
    std::string failing;  // the last failure logged, so that a lasting one is logged once
    while (!stopping()) {
        auto res = co_await reader->poll(limits, sink);
        const api::backend_error why = !res                                 ? res.error()
                                       : !res->empty() && (*res)[0].error ? (*res)[0].error
                                                                          : api::backend_error{};
        if (why) {
            if (why.text() != failing) {
                failing = why.text();
                http_log().warn("REST consumers: following {} failed: {}; trying again", topic,
                                failing);
            }
            co_await pause(max_pause);
            continue;
        }
        failing.clear();
        const auto at = reader->positions();
        if (const auto it = at.find(tp); it != at.end()) {
            on_position(it->second.value);
        }
    }
    reader->close(false);
}

boost::asio::awaitable<void> consumer_store::save(stored_instance s) {
    co_await write(key_of(s.group, s.name), encode(s));
}

boost::asio::awaitable<void> consumer_store::erase(sluice::group_id group, std::string name) {
    co_await write(key_of(group, name), std::nullopt);
}

boost::asio::awaitable<void> consumer_store::write(std::string key,
                                                   std::optional<std::string> value) {
    co_await boost::asio::co_spawn(strand_, write_on_strand(std::move(key), std::move(value)),
                                   boost::asio::use_awaitable);
}

boost::asio::awaitable<void> consumer_store::write_on_strand(std::string key,
                                                             std::optional<std::string> value) {
    const topic_name name{std::string(topic)};
    if (!topic_ready_) {
        const auto now = clock::now();
        if (create_failing_ && now < next_create_) {
            // The topic could not be created a moment ago: without it the write has nowhere to
            // go, and asking the cluster again on every save only repeats the refusal.
            http_log().debug("REST consumers: {} not created yet, instance state not stored",
                             topic);
            co_return;
        }
        api::new_topic spec;
        spec.name = name;
        spec.partitions = 1;
        spec.configs = {{"cleanup.policy", "compact"}};
        auto created = co_await client_.admin().create_topic(std::move(spec));
        if (!created && created.error().reason() != api::errc::topic_already_exists) {
            if (!create_failing_) {
                http_log().warn("REST consumers: cannot create {}: {} (instances are served but "
                                "not stored; tried again with a growing pause up to {} s)",
                                topic, created.error().text(), max_create_pause.count() / 1000);
            } else {
                http_log().debug("REST consumers: cannot create {}: {}", topic,
                                 created.error().text());
            }
            next_create_ = clock::now() + create_pause_;
            create_pause_ = std::min(create_pause_ * 2, max_create_pause);
            create_failing_ = true;
            co_return;
        }
        if (create_failing_) {
            http_log().info("REST consumers: {} created, instances are stored again", topic);
        }
        create_failing_ = false;
        create_pause_ = first_create_pause;
        topic_ready_ = true;
    }
    std::vector<api::outgoing_record> records(1);
    records[0].key = std::move(key);
    records[0].value = std::move(value);
    records[0].partition = 0;
    api::send_options opts;
    opts.acks = api::acks::leader;
    auto res = co_await client_.producer().send(name, std::move(records), opts);
    if (!res) {
        http_log().warn("REST consumers: storing an instance failed: {}", res.error().text());
        co_return;
    }
    for (const auto& d : *res) {
        if (d.error) {
            http_log().warn("REST consumers: storing an instance failed: {}", d.error.text());
        }
    }
}

}  // namespace sluice::gateway::rest
