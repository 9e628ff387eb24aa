#include "tests/gateway/fake_backend.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::gateway::testing {
namespace asio = boost::asio;
using api::errc;

api::backend_error scripted_error(api::errc e, std::string message) {
    return api::backend_error{api::make_error_code(e), std::move(message)};
}

namespace {

constexpr std::array<std::string_view, 45> call_names = {
    "describe_topic",
    "list_topics",
    "create_topic",
    "remove_topic",
    "create_partitions",
    "describe_configs",
    "replace_configs",
    "alter_configs",
    "describe_storage",
    "produce",
    "fetch",
    "list_offsets",
    "delete_records",
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "consumer_heartbeat",
    "commit_offsets",
    "fetch_offsets",
    "delete_offsets",
    "delete_groups",
    "list_groups",
    "describe_groups",
    "describe_consumer_groups",
    "create_queue",
    "get_queue",
    "list_queues",
    "delete_queue",
    "get_attributes",
    "set_attributes",
    "purge_queue",
    "tag_queue",
    "untag_queue",
    "list_tags",
    "add_permission",
    "remove_permission",
    "dead_letter_source_queues",
    "send_messages",
    "receive_messages",
    "delete_messages",
    "change_visibility",
    "start_message_move_task",
    "list_message_move_tasks",
    "cancel_message_move_task",
};
static_assert(call_names.size() == static_cast<std::size_t>(fake_call::cancel_message_move_task) + 1);

api::awaitable<void> pause(std::chrono::milliseconds d) {
    if (d.count() <= 0) {
        co_return;
    }
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// What every call does first: log itself, wait as scripted, and take a scripted failure.
api::awaitable<std::optional<api::backend_error>> enter(fake_script& script, fake_call c,
                                                      std::string args) {
    script.record(c, std::move(args));
    co_await pause(script.take_delay(c));
    co_return script.take_failure(c);
}

std::error_code code(errc e) { return api::make_error_code(e); }

template <typename T>
api::backend_result<T> failure(errc e, std::string message = {}) {
    return std::unexpected(scripted_error(e, std::move(message)));
}

std::string to_text(protocol::bytes_view b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

/// Appends the batches of one produced partition; the error, or none.
std::error_code append(fake_state& s, const topic_name& topic, partition_id partition,
                       fake_state::partition& part, std::span<std::byte> bytes,
                       api::produced_partition& out) {
    const protocol::bytes_view all(bytes.data(), bytes.size());
    if (all.empty()) {
        return code(errc::invalid_record);
    }
    out.base_offset = offset(part.next);
    std::size_t pos = 0;
    while (pos < all.size()) {
        auto h = protocol::kafka::read_batch_header(all.subspan(pos));
        if (!h || h->total_size() > all.size() - pos || h->magic != 2) {
            return code(errc::corrupt_message);
        }
        fake_state::stored_batch b;
        b.bytes.assign(all.begin() + static_cast<std::ptrdiff_t>(pos),
                       all.begin() + static_cast<std::ptrdiff_t>(pos + h->total_size()));
        protocol::kafka::set_base_offset(b.bytes, part.next);
        b.base = part.next;
        b.last = part.next + h->last_offset_delta;
        b.max_timestamp = h->max_timestamp;
        auto records = protocol::kafka::record_iterator::open(
            protocol::bytes_view(b.bytes.data(), b.bytes.size()), 64 << 20);
        if (!records) {
            return code(errc::corrupt_message);
        }
        protocol::kafka::record_view r;
        while (records->next(r)) {
            produced_copy c;
            c.topic = topic;
            c.partition = partition;
            c.offset = r.offset;
            c.timestamp = r.timestamp;
            if (r.key) {
                c.key = to_text(*r.key);
            }
            if (r.value) {
                c.value = to_text(*r.value);
            }
            for (const auto& hv : r.headers) {
                std::optional<std::string> value;
                if (hv.value) {
                    value = to_text(*hv.value);
                }
                c.headers.emplace_back(std::string(hv.key), std::move(value));
            }
            s.produced.push_back(std::move(c));
        }
        part.next = b.last + 1;
        part.batches.push_back(std::move(b));
        pos += h->total_size();
    }
    out.log_start_offset = offset(part.log_start);
    return {};
}

fake_state::topic* find_topic(fake_state& s, const topic_name& name) {
    auto it = s.topics.find(name);
    return it == s.topics.end() ? nullptr : &it->second;
}

fake_state::partition* find_partition(fake_state& s, const topic_name& name, partition_id p) {
    auto* t = find_topic(s, name);
    if (t == nullptr || p.value < 0 || p.value >= static_cast<std::int32_t>(t->partitions.size())) {
        return nullptr;
    }
    return &t->partitions[static_cast<std::size_t>(p.value)];
}

}  // namespace

std::string_view to_string(fake_call c) { return call_names.at(static_cast<std::size_t>(c)); }

// --- script -------------------------------------------------------------------------------

void fake_script::fail_next(fake_call c, api::errc e, std::string message, int times) {
    failures_[c].push_back({scripted_error(e, std::move(message)), times});
}

void fake_script::delay_next(fake_call c, std::chrono::milliseconds d, int times) {
    delays_[c].emplace_back(d, times);
}

std::size_t fake_script::count(fake_call c) const {
    return static_cast<std::size_t>(
        std::count_if(calls_.begin(), calls_.end(), [c](const auto& r) { return r.call == c; }));
}

std::vector<std::string> fake_script::args_of(fake_call c) const {
    std::vector<std::string> out;
    for (const auto& r : calls_) {
        if (r.call == c) {
            out.push_back(r.args);
        }
    }
    return out;
}

std::optional<api::backend_error> fake_script::take_failure(fake_call c) {
    auto it = failures_.find(c);
    if (it == failures_.end() || it->second.empty()) {
        return std::nullopt;
    }
    auto& next = it->second.front();
    auto e = next.error;
    if (--next.times <= 0) {
        it->second.pop_front();
    }
    return e;
}

std::chrono::milliseconds fake_script::take_delay(fake_call c) {
    auto it = delays_.find(c);
    if (it == delays_.end() || it->second.empty()) {
        return {};
    }
    auto& next = it->second.front();
    const auto d = next.first;
    if (--next.second <= 0) {
        it->second.pop_front();
    }
    return d;
}

// --- seeding ------------------------------------------------------------------------------

void fake_backend::add_topic(std::string name, std::int32_t partitions, bool internal) {
    fake_state::topic t;
    t.description.name = topic_name(name);
    t.description.id = uuid::random();
    t.description.partitions = partitions;
    t.description.internal = internal;
    t.partitions.resize(static_cast<std::size_t>(partitions));
    state_.topics[topic_name(std::move(name))] = std::move(t);
}

void fake_backend::add_queue(std::string name, api::attribute_map attributes) {
    if (name.ends_with(".fifo")) {
        attributes.emplace("FifoQueue", "true");
    }
    state_.queues[api::queue_name(name)].attributes = std::move(attributes);
    if (!state_.topics.contains(topic_name(name))) {
        add_topic(name, 1);
    }
}

// --- topics -------------------------------------------------------------------------------

api::awaitable<std::optional<api::topic_description>> fake_topics::describe(topic_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::describe_topic, std::move(args));
    auto* t = find_topic(s_, name);
    if (failed || t == nullptr) {
        co_return std::nullopt;
    }
    co_return t->description;
}

api::awaitable<std::optional<api::topic_description>> fake_topics::describe(uuid id) {
    std::string args = id.to_string();
    auto failed = co_await enter(script_, fake_call::describe_topic, std::move(args));
    if (!failed) {
        for (const auto& [name, t] : s_.topics) {
            if (t.description.id == id) {
                co_return t.description;
            }
        }
    }
    co_return std::nullopt;
}

api::awaitable<std::vector<api::topic_description>> fake_topics::list() {
    std::string args;
    auto failed = co_await enter(script_, fake_call::list_topics, std::move(args));
    std::vector<api::topic_description> out;
    if (!failed) {
        for (const auto& [name, t] : s_.topics) {
            out.push_back(t.description);
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<api::created_topic>> fake_topics::create(api::new_topic spec) {
    std::string args = fmt::format("{} partitions={}{}", spec.name.value, spec.partitions,
                                   spec.validate_only ? " validate_only" : "");
    auto failed = co_await enter(script_, fake_call::create_topic, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    if (spec.name.value.empty() || spec.name.value.find_first_of("/ ") != std::string::npos) {
        co_return failure<api::created_topic>(errc::invalid_topic_name);
    }
    if (spec.partitions < 1) {
        co_return failure<api::created_topic>(errc::invalid_partitions);
    }
    if (s_.topics.contains(spec.name)) {
        co_return failure<api::created_topic>(errc::topic_already_exists,
                                              "Topic '" + spec.name.value + "' already exists.");
    }
    fake_state::topic t;
    t.description.name = spec.name;
    t.description.id = uuid::random();
    t.description.partitions = spec.partitions;
    t.description.overrides = spec.configs;
    t.partitions.resize(static_cast<std::size_t>(spec.partitions));
    api::created_topic out;
    out.topic = t.description;
    if (!spec.validate_only) {
        s_.topics[spec.name] = std::move(t);
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> fake_topics::remove(topic_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::remove_topic, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto* t = find_topic(s_, name);
    if (t == nullptr) {
        co_return failure<void>(errc::unknown_topic_or_partition);
    }
    if (t->description.internal) {
        co_return failure<void>(errc::policy_violation);
    }
    s_.topics.erase(name);
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_topics::create_partitions(topic_name name,
                                                                       std::int32_t total,
                                                                       bool validate_only) {
    std::string args = fmt::format("{} total={}", name.value, total);
    auto failed = co_await enter(script_, fake_call::create_partitions, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto* t = find_topic(s_, name);
    if (t == nullptr) {
        co_return failure<void>(errc::unknown_topic_or_partition);
    }
    if (total <= t->description.partitions) {
        co_return failure<void>(errc::invalid_partitions);
    }
    if (!validate_only) {
        t->description.partitions = total;
        t->partitions.resize(static_cast<std::size_t>(total));
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<std::vector<api::config_entry>>> fake_topics::describe_configs(
    topic_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::describe_configs, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto* t = find_topic(s_, name);
    if (t == nullptr) {
        co_return failure<std::vector<api::config_entry>>(errc::unknown_topic_or_partition);
    }
    std::map<std::string, std::string> all = {{"cleanup.policy", "delete"}};
    for (const auto& [k, v] : t->description.overrides) {
        all[k] = v;
    }
    std::vector<api::config_entry> out;
    for (const auto& [k, v] : all) {
        api::config_entry e;
        e.name = k;
        e.value = v;
        e.source = t->description.overrides.contains(k) ? api::config_source::dynamic_topic
                                                        : api::config_source::default_config;
        out.push_back(std::move(e));
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> fake_topics::replace_configs(
    topic_name name, std::map<std::string, std::string> configs, bool validate_only) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::replace_configs, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto* t = find_topic(s_, name);
    if (t == nullptr) {
        co_return failure<void>(errc::unknown_topic_or_partition);
    }
    if (!validate_only) {
        t->description.overrides = std::move(configs);
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_topics::alter_configs(
    topic_name name, std::vector<api::config_change> changes, bool validate_only) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::alter_configs, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto* t = find_topic(s_, name);
    if (t == nullptr) {
        co_return failure<void>(errc::unknown_topic_or_partition);
    }
    if (!validate_only) {
        for (const auto& c : changes) {
            if (c.operation == api::config_change::op::remove) {
                t->description.overrides.erase(c.name);
            } else if (c.value) {
                t->description.overrides[c.name] = *c.value;
            }
        }
    }
    co_return api::backend_result<void>{};
}

std::vector<api::partition_state> fake_topics::partition_states() const {
    std::vector<api::partition_state> out;
    for (const auto& [name, t] : s_.topics) {
        for (std::size_t p = 0; p < t.partitions.size(); ++p) {
            api::partition_state st;
            st.topic = name;
            st.partition = partition_id(static_cast<std::int32_t>(p));
            st.log_start_offset = offset(t.partitions[p].log_start);
            st.high_watermark = offset(t.partitions[p].next);
            st.log_end_offset = offset(t.partitions[p].next);
            out.push_back(std::move(st));
        }
    }
    return out;
}

api::awaitable<api::storage_description> fake_topics::describe_storage(std::vector<topic_name>) {
    std::string args;
    co_await enter(script_, fake_call::describe_storage, std::move(args));
    api::storage_description out;
    out.path = "/fake";
    out.partitions = partition_states();
    co_return out;
}

// --- records ------------------------------------------------------------------------------

api::awaitable<api::produce_result> fake_records::produce(api::produce_request req) {
    std::string args;
    for (const auto& t : req.topics) {
        for (const auto& p : t.partitions) {
            args += fmt::format("{}{} p{}", args.empty() ? "" : ", ", t.topic.value,
                                p.partition.value);
        }
    }
    auto failed = co_await enter(script_, fake_call::produce, std::move(args));
    api::produce_result out;
    for (auto& t : req.topics) {
        api::produced_topic pt;
        pt.topic = t.topic;
        auto* topic = find_topic(s_, t.topic);
        for (auto& p : t.partitions) {
            api::produced_partition pp;
            pp.partition = p.partition;
            auto* part = find_partition(s_, t.topic, p.partition);
            if (failed) {
                pp.error = failed->code;
            } else if (part == nullptr) {
                pp.error = code(errc::unknown_topic_or_partition);
            } else if (topic->description.internal) {
                pp.error = code(errc::internal_topic);
            } else {
                pp.error = append(s_, t.topic, p.partition, *part, p.batches, pp);
            }
            if (pp.error) {
                pp.base_offset = offset(-1);
            }
            p.batches = {};  // not valid once this call completes
            pt.partitions.push_back(std::move(pp));
        }
        out.topics.push_back(std::move(pt));
    }
    s_.produce_requests.push_back(std::move(req));
    co_return out;
}

api::fetch_result fake_records::fetch_now(const api::fetch_request& req,
                                          std::int64_t& bytes) const {
    api::fetch_result out;
    bytes = 0;
    std::int64_t budget = req.max_bytes;
    for (const auto& t : req.topics) {
        api::fetched_topic ft;
        ft.topic = t.topic;
        ft.id = t.id;
        const fake_state::topic* topic = nullptr;
        if (!t.id.is_zero()) {
            for (const auto& [name, candidate] : s_.topics) {
                if (candidate.description.id == t.id) {
                    topic = &candidate;
                }
            }
        } else {
            auto it = s_.topics.find(t.topic);
            topic = it == s_.topics.end() ? nullptr : &it->second;
        }
        if (topic != nullptr) {
            ft.topic = topic->description.name;
            ft.id = topic->description.id;
        }
        for (const auto& p : t.partitions) {
            api::fetched_partition fp;
            fp.partition = p.partition;
            if (topic == nullptr || p.partition.value < 0 ||
                p.partition.value >= static_cast<std::int32_t>(topic->partitions.size())) {
                fp.error = code(t.id.is_zero() ? errc::unknown_topic_or_partition
                                               : errc::unknown_topic_id);
                ft.partitions.push_back(std::move(fp));
                continue;
            }
            const auto& part = topic->partitions[static_cast<std::size_t>(p.partition.value)];
            fp.high_watermark = offset(part.next);
            fp.last_stable_offset = offset(part.next);
            fp.log_start_offset = offset(part.log_start);
            if (p.fetch_offset.value < part.log_start || p.fetch_offset.value > part.next) {
                fp.error = code(errc::offset_out_of_range);
                ft.partitions.push_back(std::move(fp));
                continue;
            }
            std::vector<std::byte> buf;
            for (const auto& b : part.batches) {
                if (b.last < p.fetch_offset.value) {
                    continue;
                }
                const auto size = static_cast<std::int64_t>(b.bytes.size());
                const bool first = buf.empty() && bytes == 0;
                if (!first && (static_cast<std::int64_t>(buf.size()) + size > p.max_bytes ||
                               size > budget)) {
                    break;
                }
                buf.insert(buf.end(), b.bytes.begin(), b.bytes.end());
                budget -= size;
                bytes += size;
            }
            fp.records = buf.empty() ? protocol::kafka::records::empty()
                                     : protocol::kafka::records::copy_of(
                                           protocol::bytes_view(buf.data(), buf.size()));
            ft.partitions.push_back(std::move(fp));
        }
        out.topics.push_back(std::move(ft));
    }
    return out;
}

api::awaitable<api::fetch_result> fake_records::fetch(api::fetch_request req) {
    std::string args;
    for (const auto& t : req.topics) {
        for (const auto& p : t.partitions) {
            args += fmt::format("{}{} p{} offset {}", args.empty() ? "" : ", ", t.topic.value,
                                p.partition.value, p.fetch_offset.value);
        }
    }
    s_.fetch_requests.push_back(req);
    auto failed = co_await enter(script_, fake_call::fetch, std::move(args));
    if (failed) {
        api::fetch_result out;
        for (const auto& t : req.topics) {
            api::fetched_topic ft;
            ft.topic = t.topic;
            ft.id = t.id;
            for (const auto& p : t.partitions) {
                api::fetched_partition fp;
                fp.partition = p.partition;
                fp.error = failed->code;
                ft.partitions.push_back(std::move(fp));
            }
            out.topics.push_back(std::move(ft));
        }
        co_return out;
    }
    const auto deadline = std::chrono::steady_clock::now() + req.max_wait;
    for (;;) {
        std::int64_t bytes = 0;
        auto out = fetch_now(req, bytes);
        bool any_error = false;
        for (const auto& t : out.topics) {
            for (const auto& p : t.partitions) {
                any_error = any_error || static_cast<bool>(p.error);
            }
        }
        const auto now = std::chrono::steady_clock::now();
        if (any_error || bytes >= std::max(1, req.min_bytes) || now >= deadline) {
            co_return out;
        }
        // Parked: poll the state again shortly (a fake may poll; a backend may not).
        ++parked_;
        co_await pause(std::min<std::chrono::milliseconds>(
            std::chrono::milliseconds(2),
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                std::chrono::milliseconds(1)));
        --parked_;
    }
}

api::awaitable<std::vector<api::found_offset>> fake_records::list_offsets(
    std::vector<api::offset_query> queries, api::isolation) {
    std::string args;
    for (const auto& q : queries) {
        args += fmt::format("{}{} p{} kind {}", args.empty() ? "" : ", ", q.topic.value,
                            q.partition.value, static_cast<int>(q.spec.what));
        s_.offset_queries.push_back(q);
    }
    auto failed = co_await enter(script_, fake_call::list_offsets, std::move(args));
    std::vector<api::found_offset> out;
    using kind = api::offset_spec::kind;
    for (const auto& q : queries) {
        api::found_offset f;
        auto* part = find_partition(s_, q.topic, q.partition);
        if (failed) {
            f.error = failed->code;
        } else if (part == nullptr) {
            f.error = code(errc::unknown_topic_or_partition);
        } else {
            switch (q.spec.what) {
                case kind::earliest:
                case kind::earliest_local:
                    f.off = offset(part->log_start);
                    break;
                case kind::latest:
                    f.off = offset(part->next);
                    break;
                case kind::latest_tiered:
                    break;
                case kind::max_timestamp:
                    if (!part->batches.empty()) {
                        f.off = offset(part->batches.back().base);
                        f.timestamp = part->batches.back().max_timestamp;
                    }
                    break;
                case kind::timestamp:
                    for (const auto& b : part->batches) {
                        if (b.max_timestamp >= q.spec.timestamp_ms) {
                            f.off = offset(b.base);
                            f.timestamp = b.max_timestamp;
                            break;
                        }
                    }
                    break;
            }
        }
        out.push_back(std::move(f));
    }
    co_return out;
}

api::awaitable<std::vector<api::backend_result<offset>>> fake_records::delete_records(
    std::vector<api::delete_records_request> reqs) {
    std::string args;
    for (const auto& r : reqs) {
        args += fmt::format("{}{} p{} before {}", args.empty() ? "" : ", ", r.topic.value,
                            r.partition.value, r.before.value);
    }
    auto failed = co_await enter(script_, fake_call::delete_records, std::move(args));
    std::vector<api::backend_result<offset>> out;
    for (const auto& r : reqs) {
        auto* part = find_partition(s_, r.topic, r.partition);
        if (failed) {
            out.push_back(std::unexpected(*failed));
            continue;
        }
        if (part == nullptr) {
            out.push_back(std::unexpected(api::backend_error(code(errc::unknown_topic_or_partition))));
            continue;
        }
        const std::int64_t before = r.before.value < 0 ? part->next : r.before.value;
        if (before > part->next) {
            out.push_back(std::unexpected(api::backend_error(code(errc::offset_out_of_range))));
            continue;
        }
        part->log_start = std::max(part->log_start, before);
        std::erase_if(part->batches, [&](const auto& b) { return b.last < part->log_start; });
        out.push_back(offset(part->log_start));
    }
    co_return out;
}

// --- groups -------------------------------------------------------------------------------

api::awaitable<api::join_group_result> fake_groups::join_group(api::join_group_request req) {
    std::string args = fmt::format("{} member '{}'", req.group_id.value, req.member_id);
    auto failed = co_await enter(script_, fake_call::join_group, std::move(args));
    api::join_group_result out;
    if (failed) {
        out.error = failed->code;
        co_return out;
    }
    if (req.group_id.value.empty()) {
        out.error = code(errc::invalid_group_id);
        co_return out;
    }
    if (req.member_id.empty()) {
        req.member_id = fmt::format("{}-member-{}", req.client.client_id, s_.next_id++);
        if (req.require_known_member_id) {
            out.error = code(errc::member_id_required);
            out.member_id = req.member_id;
            co_return out;
        }
    }
    auto& g = s_.groups[req.group_id];
    auto m = std::find_if(g.members.begin(), g.members.end(),
                          [&](const auto& x) { return x.member_id == req.member_id; });
    if (m == g.members.end()) {
        g.members.push_back({req.member_id, req.protocols, {}});
    } else {
        m->protocols = req.protocols;
    }
    ++g.generation;
    ++counters_.rebalances;
    g.protocol_type = req.protocol_type;
    g.protocol = req.protocols.empty() ? std::string() : req.protocols.front().name;
    out.generation_id = g.generation;
    out.protocol_type = g.protocol_type;
    out.protocol_name = g.protocol;
    out.leader = g.members.front().member_id;
    out.member_id = req.member_id;
    if (out.leader == out.member_id) {
        for (const auto& x : g.members) {
            api::join_group_member jm;
            jm.member_id = x.member_id;
            for (const auto& p : x.protocols) {
                if (p.name == g.protocol) {
                    jm.metadata = p.metadata;
                }
            }
            out.members.push_back(std::move(jm));
        }
    }
    co_return out;
}

api::awaitable<api::sync_group_result> fake_groups::sync_group(api::sync_group_request req) {
    std::string args = fmt::format("{} member '{}' generation {}", req.group_id.value,
                                   req.member_id, req.generation_id);
    auto failed = co_await enter(script_, fake_call::sync_group, std::move(args));
    api::sync_group_result out;
    if (failed) {
        out.error = failed->code;
        co_return out;
    }
    auto g = s_.groups.find(req.group_id);
    if (g == s_.groups.end()) {
        out.error = code(errc::unknown_member_id);
        co_return out;
    }
    auto& members = g->second.members;
    auto m = std::find_if(members.begin(), members.end(),
                          [&](const auto& x) { return x.member_id == req.member_id; });
    if (m == members.end()) {
        out.error = code(errc::unknown_member_id);
        co_return out;
    }
    if (req.generation_id != g->second.generation) {
        out.error = code(errc::illegal_generation);
        co_return out;
    }
    if (members.front().member_id == req.member_id) {
        for (auto& x : members) {
            auto it = req.assignments.find(x.member_id);
            x.assignment = it == req.assignments.end() ? std::vector<std::byte>{} : it->second;
        }
    }
    out.protocol_type = g->second.protocol_type;
    out.protocol_name = g->second.protocol;
    out.assignment = m->assignment;
    co_return out;
}

api::awaitable<api::backend_result<void>> fake_groups::heartbeat(api::heartbeat_request req) {
    std::string args = fmt::format("{} member '{}' generation {}", req.group_id.value,
                                   req.member_id, req.generation_id);
    auto failed = co_await enter(script_, fake_call::heartbeat, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto g = s_.groups.find(req.group_id);
    if (g == s_.groups.end() ||
        std::none_of(g->second.members.begin(), g->second.members.end(),
                     [&](const auto& x) { return x.member_id == req.member_id; })) {
        co_return std::unexpected(api::backend_error(code(errc::unknown_member_id)));
    }
    if (req.generation_id != g->second.generation) {
        co_return std::unexpected(api::backend_error(code(errc::illegal_generation)));
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::leave_group_result> fake_groups::leave_group(
    group_id group, std::vector<api::leave_member> members) {
    std::string args = group.value;
    auto failed = co_await enter(script_, fake_call::leave_group, std::move(args));
    api::leave_group_result out;
    if (failed) {
        out.error = failed->code;
        co_return out;
    }
    auto g = s_.groups.find(group);
    for (const auto& lm : members) {
        api::leave_member_result r;
        r.member_id = lm.member_id;
        r.group_instance_id = lm.group_instance_id;
        if (g == s_.groups.end() ||
            std::erase_if(g->second.members,
                          [&](const auto& x) { return x.member_id == lm.member_id; }) == 0) {
            r.error = code(errc::unknown_member_id);
        }
        out.members.push_back(std::move(r));
    }
    if (g != s_.groups.end()) {
        ++g->second.generation;
    }
    co_return out;
}

api::awaitable<api::consumer_heartbeat_result> fake_groups::consumer_heartbeat(
    api::consumer_heartbeat_request req) {
    std::string args = req.group_id.value;
    auto failed = co_await enter(script_, fake_call::consumer_heartbeat, std::move(args));
    api::consumer_heartbeat_result out;
    out.error = failed ? failed->code : code(errc::unsupported);
    co_return out;
}

api::awaitable<api::offset_commit_result> fake_groups::commit_offsets(
    api::offset_commit_request req) {
    std::string args = req.group_id.value;
    for (const auto& t : req.topics) {
        for (const auto& p : t.partitions) {
            args += fmt::format(" {} p{}={}", t.topic.value, p.partition.value, p.committed.value);
        }
    }
    s_.commits.push_back(req);
    auto failed = co_await enter(script_, fake_call::commit_offsets, std::move(args));
    std::error_code all;
    if (failed) {
        all = failed->code;
    } else if (req.group_id.value.empty()) {
        all = code(errc::invalid_group_id);
    } else if (req.generation_id_or_member_epoch >= 0 || !req.member_id.empty()) {
        auto g = s_.groups.find(req.group_id);
        if (g == s_.groups.end() ||
            std::none_of(g->second.members.begin(), g->second.members.end(),
                         [&](const auto& x) { return x.member_id == req.member_id; })) {
            all = code(errc::unknown_member_id);
        } else if (req.generation_id_or_member_epoch != g->second.generation) {
            all = code(errc::illegal_generation);
        }
    }
    api::offset_commit_result out;
    for (const auto& t : req.topics) {
        api::commit_topic_result tr;
        tr.topic = t.topic;
        for (const auto& p : t.partitions) {
            api::commit_partition_result pr;
            pr.partition = p.partition;
            pr.error = all;
            if (!all && find_partition(s_, t.topic, p.partition) == nullptr) {
                pr.error = code(errc::unknown_topic_or_partition);
            }
            if (!pr.error) {
                s_.groups[req.group_id].committed[{t.topic, p.partition}] = p.committed.value;
                ++counters_.offset_commits;
            }
            tr.partitions.push_back(std::move(pr));
        }
        out.topics.push_back(std::move(tr));
    }
    co_return out;
}

api::awaitable<std::vector<api::offset_fetch_result>> fake_groups::fetch_offsets(
    std::vector<api::offset_fetch_request> reqs) {
    std::string args;
    for (const auto& r : reqs) {
        args += (args.empty() ? "" : ", ") + r.group_id.value;
    }
    auto failed = co_await enter(script_, fake_call::fetch_offsets, std::move(args));
    std::vector<api::offset_fetch_result> out;
    for (const auto& r : reqs) {
        api::offset_fetch_result res;
        res.group_id = r.group_id;
        if (failed) {
            res.error = failed->code;
            out.push_back(std::move(res));
            continue;
        }
        auto g = s_.groups.find(r.group_id);
        auto committed = [&](const topic_name& t, partition_id p) {
            api::fetched_offset f;
            f.partition = p;
            if (g != s_.groups.end()) {
                auto it = g->second.committed.find({t, p});
                if (it != g->second.committed.end()) {
                    f.committed = offset(it->second);
                }
            }
            return f;
        };
        if (r.topics) {
            for (const auto& t : *r.topics) {
                api::fetched_offsets_topic ft;
                ft.topic = t.topic;
                for (auto p : t.partitions) {
                    ft.partitions.push_back(committed(t.topic, p));
                }
                res.topics.push_back(std::move(ft));
            }
        } else if (g != s_.groups.end()) {
            for (const auto& [key, off] : g->second.committed) {
                if (res.topics.empty() || res.topics.back().topic != key.first) {
                    res.topics.push_back({key.first, {}});
                }
                res.topics.back().partitions.push_back(committed(key.first, key.second));
            }
        }
        out.push_back(std::move(res));
    }
    co_return out;
}

api::awaitable<api::offset_delete_result> fake_groups::delete_offsets(
    group_id group, std::vector<api::topic_partition_list> topics) {
    std::string args = group.value;
    auto failed = co_await enter(script_, fake_call::delete_offsets, std::move(args));
    api::offset_delete_result out;
    auto g = s_.groups.find(group);
    if (failed || g == s_.groups.end()) {
        out.error = failed ? failed->code : code(errc::group_id_not_found);
        co_return out;
    }
    for (const auto& t : topics) {
        api::commit_topic_result tr;
        tr.topic = t.topic;
        for (auto p : t.partitions) {
            g->second.committed.erase({t.topic, p});
            tr.partitions.push_back({p, {}});
        }
        out.topics.push_back(std::move(tr));
    }
    co_return out;
}

api::awaitable<std::vector<api::group_deletion>> fake_groups::delete_groups(
    std::vector<group_id> ids) {
    std::string args;
    for (const auto& id : ids) {
        args += (args.empty() ? "" : ", ") + id.value;
    }
    auto failed = co_await enter(script_, fake_call::delete_groups, std::move(args));
    std::vector<api::group_deletion> out;
    for (const auto& id : ids) {
        api::group_deletion d;
        d.group_id = id;
        auto g = s_.groups.find(id);
        if (failed) {
            d.error = failed->code;
        } else if (g == s_.groups.end()) {
            d.error = code(errc::group_id_not_found);
        } else if (!g->second.members.empty()) {
            d.error = code(errc::non_empty_group);
        } else {
            s_.groups.erase(g);
        }
        out.push_back(std::move(d));
    }
    co_return out;
}

api::awaitable<std::vector<api::listed_group>> fake_groups::list_groups(std::vector<std::string>,
                                                                        std::vector<std::string>) {
    std::string args;
    auto failed = co_await enter(script_, fake_call::list_groups, std::move(args));
    std::vector<api::listed_group> out;
    if (!failed) {
        for (const auto& [id, g] : s_.groups) {
            out.push_back({id, g.protocol_type, g.members.empty() ? "Empty" : "Stable", "classic"});
        }
    }
    co_return out;
}

api::awaitable<std::vector<api::described_group>> fake_groups::describe_groups(
    std::vector<group_id> ids) {
    std::string args;
    for (const auto& id : ids) {
        args += (args.empty() ? "" : ", ") + id.value;
    }
    auto failed = co_await enter(script_, fake_call::describe_groups, std::move(args));
    std::vector<api::described_group> out;
    for (const auto& id : ids) {
        api::described_group d;
        d.group_id = id;
        auto g = s_.groups.find(id);
        if (failed) {
            d.error = failed->code;
        } else if (g == s_.groups.end()) {
            d.state = "Dead";
        } else {
            d.state = g->second.members.empty() ? "Empty" : "Stable";
            d.protocol_type = g->second.protocol_type;
            d.protocol_data = g->second.protocol;
            for (const auto& m : g->second.members) {
                api::described_member dm;
                dm.member_id = m.member_id;
                dm.assignment = m.assignment;
                d.members.push_back(std::move(dm));
            }
        }
        out.push_back(std::move(d));
    }
    co_return out;
}

api::awaitable<std::vector<api::consumer_group_description>>
fake_groups::describe_consumer_groups(std::vector<group_id> ids) {
    std::string args;
    auto failed = co_await enter(script_, fake_call::describe_consumer_groups, std::move(args));
    std::vector<api::consumer_group_description> out;
    for (const auto& id : ids) {
        api::consumer_group_description d;
        d.group_id = id;
        d.error = failed ? failed->code : code(errc::group_id_not_found);
        out.push_back(std::move(d));
    }
    co_return out;
}

std::vector<api::group_view> fake_groups::view_groups() {
    std::vector<api::group_view> out;
    for (const auto& [id, g] : s_.groups) {
        out.push_back(*view_group(id));
    }
    return out;
}

std::optional<api::group_view> fake_groups::view_group(const group_id& id) {
    auto g = s_.groups.find(id);
    if (g == s_.groups.end()) {
        return std::nullopt;
    }
    api::group_view v;
    v.group_id = id;
    v.type = "classic";
    v.state = g->second.members.empty() ? "Empty" : "Stable";
    v.protocol_type = g->second.protocol_type;
    v.protocol = g->second.protocol;
    v.generation = g->second.generation;
    for (const auto& m : g->second.members) {
        api::group_view::member vm;
        vm.member_id = m.member_id;
        v.members.push_back(std::move(vm));
    }
    for (const auto& [key, off] : g->second.committed) {
        api::group_view::partition p;
        p.topic = key.first;
        p.partition = key.second;
        p.committed = offset(off);
        if (auto* part = find_partition(s_, key.first, key.second)) {
            p.log_end = offset(part->next);
            p.lag = part->next - off;
        }
        v.offsets.push_back(std::move(p));
    }
    return v;
}

// --- queues -------------------------------------------------------------------------------

namespace {

bool valid_queue_name(const std::string& name) {
    const std::string_view base = name.ends_with(".fifo")
                                      ? std::string_view(name).substr(0, name.size() - 5)
                                      : std::string_view(name);
    return !base.empty() && name.size() <= 80 &&
           std::all_of(base.begin(), base.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
           });
}

/// The attributes a queue has, besides those set (what GetQueueAttributes accepts).
constexpr std::array<std::string_view, 16> known_attributes = {
    "VisibilityTimeout",
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "Policy",
    "QueueArn",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
};

/// The queue named by a RedrivePolicy's deadLetterTargetArn (the ARN's last field).
std::optional<std::string> dead_letter_target(const api::attribute_map& attributes) {
    auto it = attributes.find("RedrivePolicy");
    if (it == attributes.end()) {
        return std::nullopt;
    }
    const auto at = it->second.find("arn:aws:sqs:");
    if (at == std::string::npos) {
        return std::nullopt;
    }
    const auto end = it->second.find('"', at);
    const std::string arn = it->second.substr(at, end == std::string::npos ? end : end - at);
    return arn.substr(arn.rfind(':') + 1);
}

}  // namespace

api::backend_result<fake_queue*> fake_queues::find(const api::queue_name& name) {
    auto it = s_.queues.find(name);
    if (it == s_.queues.end()) {
        return std::unexpected(scripted_error(errc::queue_does_not_exist,
                                              "The specified queue does not exist."));
    }
    return &it->second;
}

api::awaitable<api::backend_result<api::queue_name>> fake_queues::create_queue(
    api::queue_name name, api::attribute_map attributes, api::attribute_map tags) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::create_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    if (!valid_queue_name(name.value)) {
        co_return failure<api::queue_name>(
            errc::invalid_parameter_value,
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length");
    }
    if (name.value.ends_with(".fifo")) {
        attributes.emplace("FifoQueue", "true");
    }
    if (auto it = s_.queues.find(name); it != s_.queues.end()) {
        for (const auto& [k, v] : attributes) {
            auto have = it->second.attributes.find(k);
            if (have == it->second.attributes.end() || have->second != v) {
                co_return failure<api::queue_name>(
                    errc::queue_already_exists,
                    "A queue already exists with the same name and a different value for "
                    "attribute " + k);
            }
        }
        co_return name;
    }
    auto& q = s_.queues[name];
    q.attributes = std::move(attributes);
    q.tags = std::move(tags);
    if (!s_.topics.contains(topic_name(name.value))) {
        fake_state::topic t;
        t.description.name = topic_name(name.value);
        t.description.id = uuid::random();
        t.description.partitions = 1;
        t.partitions.resize(1);
        s_.topics[topic_name(name.value)] = std::move(t);
    }
    co_return name;
}

api::awaitable<api::backend_result<api::queue_name>> fake_queues::get_queue(api::queue_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::get_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    if (!s_.queues.contains(name)) {
        auto* t = find_topic(s_, topic_name(name.value));
        if (t == nullptr || t->description.internal) {
            co_return failure<api::queue_name>(errc::queue_does_not_exist,
                                               "The specified queue does not exist.");
        }
        s_.queues[name];  // adopted with the default attributes
    }
    co_return name;
}

api::awaitable<std::vector<api::queue_name>> fake_queues::list_queues(std::string prefix) {
    std::string args = prefix;
    auto failed = co_await enter(script_, fake_call::list_queues, std::move(args));
    std::vector<api::queue_name> out;
    if (!failed) {
        for (const auto& [name, q] : s_.queues) {
            if (name.value.starts_with(prefix)) {
                out.push_back(name);
            }
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> fake_queues::delete_queue(api::queue_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::delete_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    s_.queues.erase(name);
    s_.topics.erase(topic_name(name.value));
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<api::attribute_map>> fake_queues::get_attributes(
    api::queue_name name, std::vector<std::string> attribute_names) {
    std::string args = name.value;
    for (const auto& n : attribute_names) {
        args += " " + n;
    }
    auto failed = co_await enter(script_, fake_call::get_attributes, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    api::attribute_map all = (*q)->attributes;
    std::int64_t visible = 0;
    std::int64_t in_flight = 0;
    for (const auto& m : (*q)->messages) {
        ++(m.in_flight ? in_flight : visible);
    }
    all["QueueArn"] = s_.arn(name.value);
    all["ApproximateNumberOfMessages"] = std::to_string(visible);
    all["ApproximateNumberOfMessagesNotVisible"] = std::to_string(in_flight);
    all["ApproximateNumberOfMessagesDelayed"] = "0";
    all.emplace("VisibilityTimeout", "30");
    api::attribute_map out;
    for (const auto& n : attribute_names) {
        if (n == "All") {
            co_return all;
        }
        if (std::find(known_attributes.begin(), known_attributes.end(), n) ==
            known_attributes.end()) {
            co_return failure<api::attribute_map>(errc::invalid_attribute_name,
                                                  "Unknown Attribute " + n + ".");
        }
        if (auto it = all.find(n); it != all.end()) {
            out.insert(*it);
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> fake_queues::set_attributes(api::queue_name name,
                                                                    api::attribute_map attributes) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::set_attributes, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    for (const auto& [k, v] : attributes) {
        if (k == "FifoQueue" ||
            std::find(known_attributes.begin(), known_attributes.end(), k) ==
                known_attributes.end()) {
            co_return failure<void>(errc::invalid_attribute_name, "Unknown Attribute " + k + ".");
        }
    }
    for (auto& [k, v] : attributes) {
        (*q)->attributes[k] = std::move(v);
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_queues::purge_queue(api::queue_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::purge_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    (*q)->messages.clear();
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_queues::tag_queue(api::queue_name name,
                                                               api::attribute_map tags) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::tag_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    for (auto& [k, v] : tags) {
        (*q)->tags[k] = std::move(v);
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_queues::untag_queue(api::queue_name name,
                                                                 std::vector<std::string> keys) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::untag_queue, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    for (const auto& k : keys) {
        (*q)->tags.erase(k);
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<api::attribute_map>> fake_queues::list_tags(
    api::queue_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::list_tags, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    co_return (*q)->tags;
}

api::awaitable<api::backend_result<void>> fake_queues::add_permission(api::queue_name name,
                                                                    std::string label,
                                                                    std::vector<std::string>,
                                                                    std::vector<std::string>) {
    std::string args = name.value + " " + label;
    auto failed = co_await enter(script_, fake_call::add_permission, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> fake_queues::remove_permission(api::queue_name name,
                                                                       std::string label) {
    std::string args = name.value + " " + label;
    auto failed = co_await enter(script_, fake_call::remove_permission, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<std::vector<api::queue_name>>>
fake_queues::dead_letter_source_queues(api::queue_name name) {
    std::string args = name.value;
    auto failed = co_await enter(script_, fake_call::dead_letter_source_queues, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    std::vector<api::queue_name> out;
    for (const auto& [source, sq] : s_.queues) {
        if (dead_letter_target(sq.attributes) == name.value) {
            out.push_back(source);
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::sent_message>>> fake_queues::send_messages(
    api::queue_name name, std::vector<api::outgoing_message> messages) {
    std::string args = fmt::format("{} messages={}", name.value, messages.size());
    auto failed = co_await enter(script_, fake_call::send_messages, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    const bool fifo = name.value.ends_with(".fifo");
    std::vector<api::sent_message> out;
    for (auto& m : messages) {
        s_.sent.emplace_back(name, m);
        api::sent_message sent;
        if (auto refused = s_.refused_bodies.find(m.body); refused != s_.refused_bodies.end()) {
            sent.error = refused->second;
            out.push_back(std::move(sent));
            continue;
        }
        fake_message fm;
        fm.message_id = fmt::format("msg-{}", s_.next_id++);
        fm.sent_timestamp_ms = 1700000000000 + s_.next_id;
        if (fifo) {
            fm.sequence_number = fmt::format("{:020}", s_.next_id);
        }
        fm.sent = std::move(m);
        sent.message_id = fm.message_id;
        sent.sequence_number = fm.sequence_number;
        (*q)->messages.push_back(std::move(fm));
        out.push_back(std::move(sent));
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::received_message>>>
fake_queues::receive_messages(api::receive_request req) {
    std::string args = fmt::format("{} max={}", req.queue.value, req.max_messages);
    s_.receives.push_back(req);
    auto failed = co_await enter(script_, fake_call::receive_messages, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(req.queue);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    if (req.max_messages < 1 || req.max_messages > 10) {
        co_return failure<std::vector<api::received_message>>(
            errc::invalid_parameter_value,
            fmt::format("Value {} for parameter MaxNumberOfMessages is invalid. Reason: Must be "
                        "between 1 and 10, if provided.",
                        req.max_messages));
    }
    std::vector<api::received_message> out;
    for (auto& m : (*q)->messages) {
        if (static_cast<std::int32_t>(out.size()) >= req.max_messages) {
            break;
        }
        if (m.in_flight) {
            continue;
        }
        m.in_flight = true;
        ++m.receive_count;
        m.receipt_handle = fmt::format("rh-{}-{}", m.message_id, m.receive_count);
        api::received_message r;
        r.message_id = m.message_id;
        r.receipt_handle = m.receipt_handle;
        r.body = m.sent.body;
        r.attributes = m.sent.attributes;
        r.sent_timestamp_ms = m.sent_timestamp_ms;
        r.receive_count = m.receive_count;
        r.first_receive_timestamp_ms = m.sent_timestamp_ms + 1;
        r.sender_id = "AIDAFAKESENDER";
        r.group_id = m.sent.group_id;
        r.deduplication_id = m.sent.deduplication_id;
        r.sequence_number = m.sequence_number;
        for (const auto& a : m.sent.system_attributes) {
            if (a.name == "AWSTraceHeader") {
                r.trace_header = a.value;
            }
        }
        out.push_back(std::move(r));
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::backend_error>>> fake_queues::delete_messages(
    api::queue_name name, std::vector<std::string> receipt_handles) {
    std::string args = name.value;
    for (const auto& h : receipt_handles) {
        args += " " + h;
        s_.deleted_handles.emplace_back(name, h);
    }
    auto failed = co_await enter(script_, fake_call::delete_messages, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    std::vector<api::backend_error> out;
    for (const auto& h : receipt_handles) {
        const auto erased = std::erase_if(
            (*q)->messages, [&](const auto& m) { return !h.empty() && m.receipt_handle == h; });
        out.push_back(erased > 0 ? api::backend_error{}
                                 : scripted_error(errc::receipt_handle_invalid,
                                                  "The input receipt handle \"" + h +
                                                      "\" is not a valid receipt handle."));
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::backend_error>>> fake_queues::change_visibility(
    api::queue_name name, std::vector<api::visibility_change> changes) {
    std::string args = name.value;
    for (const auto& c : changes) {
        args += fmt::format(" {}={}s", c.receipt_handle, c.timeout.count());
        s_.visibility_changes.emplace_back(name, c);
    }
    auto failed = co_await enter(script_, fake_call::change_visibility, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    std::vector<api::backend_error> out;
    for (const auto& c : changes) {
        auto m = std::find_if((*q)->messages.begin(), (*q)->messages.end(), [&](const auto& x) {
            return !c.receipt_handle.empty() && x.receipt_handle == c.receipt_handle;
        });
        if (m == (*q)->messages.end()) {
            out.push_back(scripted_error(errc::receipt_handle_invalid,
                                         "The input receipt handle is not a valid receipt handle."));
        } else if (!m->in_flight) {
            out.push_back(scripted_error(errc::message_not_inflight,
                                         "Message does not exist or is not available for "
                                         "visibility timeout change."));
        } else {
            m->in_flight = c.timeout.count() > 0;
            out.push_back({});
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<std::string>> fake_queues::start_message_move_task(
    std::string source_arn, std::optional<std::string> destination_arn,
    std::optional<std::int32_t> max_per_second) {
    std::string args = source_arn;
    auto failed = co_await enter(script_, fake_call::start_message_move_task, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    const std::string source = source_arn.substr(source_arn.rfind(':') + 1);
    if (source_arn != s_.arn(source) || !s_.queues.contains(api::queue_name(source))) {
        co_return failure<std::string>(errc::resource_not_found,
                                       "The resource that you specified for the SourceArn "
                                       "parameter doesn't exist.");
    }
    api::move_task t;
    t.task_handle = fmt::format("task-{}", s_.next_id++);
    t.status = "RUNNING";
    t.source_arn = std::move(source_arn);
    t.destination_arn = std::move(destination_arn);
    t.max_per_second = max_per_second;
    s_.move_tasks.push_back(t);
    co_return t.task_handle;
}

api::awaitable<api::backend_result<std::vector<api::move_task>>>
fake_queues::list_message_move_tasks(std::string source_arn, std::int32_t max_results) {
    std::string args = source_arn;
    auto failed = co_await enter(script_, fake_call::list_message_move_tasks, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    std::vector<api::move_task> out;
    for (auto it = s_.move_tasks.rbegin(); it != s_.move_tasks.rend(); ++it) {
        if (it->source_arn == source_arn && static_cast<std::int32_t>(out.size()) < max_results) {
            out.push_back(*it);
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<std::int64_t>> fake_queues::cancel_message_move_task(
    std::string task_handle) {
    std::string args = task_handle;
    auto failed = co_await enter(script_, fake_call::cancel_message_move_task, std::move(args));
    if (failed) {
        co_return std::unexpected(*failed);
    }
    for (auto& t : s_.move_tasks) {
        if (t.task_handle == task_handle && t.status == "RUNNING") {
            t.status = "CANCELLED";
            co_return t.moved;
        }
    }
    co_return failure<std::int64_t>(errc::resource_not_found,
                                    "The task handle does not name a running task.");
}

std::optional<api::move_task> fake_queues::find_message_move_task(
    const std::string& task_handle) const {
    for (const auto& t : s_.move_tasks) {
        if (t.task_handle == task_handle) {
            return t;
        }
    }
    return std::nullopt;
}

std::vector<api::queue_view> fake_queues::view_queues() const {
    std::vector<api::queue_view> out;
    for (const auto& [name, q] : s_.queues) {
        api::queue_view v;
        v.name = name;
        v.fifo = name.value.ends_with(".fifo");
        for (const auto& m : q.messages) {
            ++(m.in_flight ? v.in_flight : v.available);
        }
        if (auto dlq = dead_letter_target(q.attributes)) {
            v.dead_letter_queue = api::queue_name(*dlq);
        }
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace sluice::gateway::testing
