#include "gateway/http/rest/consumer_instance.h"

#include <algorithm>
#include <set>

#include "gateway/http/record_reader.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
namespace kafka = protocol::kafka;
using clock = std::chrono::steady_clock;

std::string rest_instance_id(const std::string& name) { return "sluice-rest/" + name; }

namespace {

/// The member's revoke hook: commits what the instance consumed (a named coroutine, so that
/// nothing it needs lives in a lambda's captures).
boost::asio::awaitable<void> revoke_for(std::weak_ptr<consumer_instance> weak,
                                        group_member::state held,
                                        boost::asio::awaitable<void> (consumer_instance::*fn)(
                                            const group_member::state&)) {
    if (auto self = weak.lock()) {
        co_await ((*self).*fn)(held);
    }
}

error illegal_state(const topic_partition& tp) {
    return {code::illegal_state, "Illegal state: No current assignment for partition " +
                                     tp.topic.value + "-" + std::to_string(tp.partition.value)};
}

std::string_view view_of(protocol::bytes_view b) { return protocol::as_chars(b); }

}  // namespace

consumer_instance::consumer_instance(rest_context& rc, boost::asio::any_io_executor ex,
                                     sluice::group_id group, std::string name,
                                     instance_config config)
    : rc_(rc),
      ex_(std::move(ex)),
      group_(std::move(group)),
      name_(std::move(name)),
      config_(config),
      last_used_(clock::now()) {}

consumer_instance::~consumer_instance() = default;

std::chrono::milliseconds consumer_instance::request_timeout() const {
    return config_.request_timeout.value_or(rc_.settings.consumer_request_timeout);
}

void consumer_instance::touch() {
    std::lock_guard lock(mu_);
    last_used_ = clock::now();
}

bool consumer_instance::expired(clock::time_point now) const {
    std::lock_guard lock(mu_);
    return !reading_ && now - last_used_ >= rc_.settings.consumer_instance_timeout;
}

void consumer_instance::stop(bool leave) {
    std::shared_ptr<group_member> m;
    {
        std::lock_guard lock(mu_);
        stopped_ = true;
        m = member_;
    }
    if (m) {
        m->stop(leave);
    }
}

bool consumer_instance::done() const {
    std::lock_guard lock(mu_);
    return !member_ || member_->done();
}

void consumer_instance::ensure_member() {
    if (member_) {
        return;
    }
    group_member::options o;
    o.group = group_;
    o.instance_id = rest_instance_id(name_);
    o.session_timeout_ms = rc_.settings.member_session_timeout_ms;
    o.client = api::client_info{"sluice-rest", ""};
    member_ = std::make_shared<group_member>(rc_.groups, rc_.topics, ex_, std::move(o));
    std::weak_ptr<consumer_instance> weak = weak_from_this();
    member_->set_revoke_hook([weak](const group_member::state& held) {
        return revoke_for(weak, held, &consumer_instance::commit_held);
    });
    member_->start();
}

std::optional<error> consumer_instance::subscribe(std::vector<topic_name> topics) {
    std::lock_guard lock(mu_);
    if (!manual_.empty()) {
        return error{code::illegal_state,
                     "Illegal state: Subscription to topics, partitions and pattern are "
                     "mutually exclusive"};
    }
    if (member_ && member_->subscribed_pattern()) {
        return error{code::consumer_already_subscribed, std::string(already_subscribed_message)};
    }
    ensure_member();
    member_->subscribe(std::move(topics));
    return std::nullopt;
}

group_member::topic_filter consumer_instance::describe_filter(std::string principal,
                                                             std::string host) const {
    if (!rc_.chain.authorizing()) {
        return nullptr;
    }
    return [chain = rc_.chain, principal = std::move(principal),
            host = std::move(host)](const topic_name& t) {
        const requester who{.front = policy_front::rest, .principal = principal, .host = host};
        return chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                             t.value);
    };
}

std::optional<error> consumer_instance::subscribe_pattern(const std::string& pattern,
                                                          std::string principal,
                                                          std::string host) {
    std::lock_guard lock(mu_);
    if (!manual_.empty()) {
        return error{code::illegal_state,
                     "Illegal state: Subscription to topics, partitions and pattern are "
                     "mutually exclusive"};
    }
    if (member_ && !member_->subscribed_topics().empty()) {
        return error{code::consumer_already_subscribed, std::string(already_subscribed_message)};
    }
    ensure_member();
    if (!member_->subscribe_pattern(pattern, describe_filter(principal, host))) {
        return error{code::invalid_consumer_config,
                     "Invalid consumer configuration: topic_pattern is not a valid RE2 "
                     "expression"};
    }
    pattern_principal_ = std::move(principal);
    pattern_host_ = std::move(host);
    return std::nullopt;
}

void consumer_instance::unsubscribe() {
    std::lock_guard lock(mu_);
    if (member_) {
        member_->unsubscribe();
    }
    manual_.clear();
    positions_.clear();
}

std::vector<std::string> consumer_instance::subscription() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    if (!member_) {
        return out;
    }
    if (member_->subscribed_pattern()) {
        for (const auto& t : member_->snapshot().topics) {
            out.push_back(t.value);
        }
    } else {
        for (const auto& t : member_->subscribed_topics()) {
            out.push_back(t.value);
        }
    }
    return out;
}

std::optional<error> consumer_instance::assign(std::vector<topic_partition> partitions) {
    std::lock_guard lock(mu_);
    if (member_ && (!member_->subscribed_topics().empty() || member_->subscribed_pattern())) {
        return error{code::illegal_state,
                     "Illegal state: Subscription to topics, partitions and pattern are "
                     "mutually exclusive"};
    }
    std::sort(partitions.begin(), partitions.end());
    partitions.erase(std::unique(partitions.begin(), partitions.end()), partitions.end());
    manual_ = std::move(partitions);
    std::erase_if(positions_, [&](const auto& kv) {
        return !std::binary_search(manual_.begin(), manual_.end(), kv.first);
    });
    return std::nullopt;
}

consumer_instance::held_partitions consumer_instance::held() const {
    std::lock_guard lock(mu_);
    held_partitions h;
    if (member_ && manual_.empty()) {
        const auto s = member_->snapshot();
        h.member = true;
        h.stable = s.stable;
        h.generation = s.generation;
        h.member_id = s.member_id;
        for (const auto& [topic, parts] : s.partitions) {
            for (auto p : parts) {
                h.parts.push_back({topic, p});
            }
        }
        return h;
    }
    h.parts = manual_;
    return h;
}

std::vector<topic_partition> consumer_instance::assignment() const {
    auto h = held();
    return h.stable ? h.parts : std::vector<topic_partition>{};
}

std::optional<error> consumer_instance::seek(
    const std::vector<std::pair<topic_partition, std::int64_t>>& to) {
    const auto h = held();
    for (const auto& [tp, off] : to) {
        if (std::find(h.parts.begin(), h.parts.end(), tp) == h.parts.end()) {
            return illegal_state(tp);
        }
    }
    std::lock_guard lock(mu_);
    for (const auto& [tp, off] : to) {
        positions_[tp] = std::max<std::int64_t>(off, 0);
    }
    return std::nullopt;
}

boost::asio::awaitable<std::optional<error>> consumer_instance::seek_to(
    std::vector<topic_partition> parts, seek_kind kind) {
    const auto h = held();
    std::vector<api::offset_query> queries;
    for (const auto& tp : parts) {
        if (std::find(h.parts.begin(), h.parts.end(), tp) == h.parts.end()) {
            co_return illegal_state(tp);
        }
        queries.push_back({tp.topic, tp.partition,
                           api::offset_spec{kind == seek_kind::beginning
                                                ? api::offset_spec::kind::earliest
                                                : api::offset_spec::kind::latest,
                                            -1}});
    }
    auto found = co_await rc_.records.list_offsets(std::move(queries),
                                                   api::isolation::read_uncommitted);
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < found.size() && i < parts.size(); ++i) {
        if (found[i].error) {
            co_return from_backend(found[i].error, subject::partition);
        }
        positions_[parts[i]] = found[i].off.value;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<error>> consumer_instance::seek_to_time(
    std::vector<std::pair<topic_partition, std::int64_t>> times) {
    const auto h = held();
    std::vector<api::offset_query> queries;
    for (const auto& [tp, ts] : times) {
        if (std::find(h.parts.begin(), h.parts.end(), tp) == h.parts.end()) {
            co_return illegal_state(tp);
        }
        queries.push_back(
            {tp.topic, tp.partition, api::offset_spec{api::offset_spec::kind::timestamp, ts}});
        queries.push_back({tp.topic, tp.partition,
                           api::offset_spec{api::offset_spec::kind::latest, -1}});
    }
    auto found = co_await rc_.records.list_offsets(std::move(queries),
                                                   api::isolation::read_uncommitted);
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < times.size() && 2 * i + 1 < found.size(); ++i) {
        const auto& at = found[2 * i];
        if (at.error) {
            co_return from_backend(at.error, subject::partition);
        }
        // No record at or after the time: the end of the partition.
        positions_[times[i].first] = at.off.value >= 0 ? at.off.value : found[2 * i + 1].off.value;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<error>> consumer_instance::fill_positions(
    const held_partitions& h) {
    std::vector<topic_partition> missing;
    {
        std::lock_guard lock(mu_);
        for (const auto& tp : h.parts) {
            if (positions_.contains(tp)) {
                continue;
            }
            if (auto it = restored_.find(tp); it != restored_.end()) {
                positions_[tp] = it->second;
                continue;
            }
            missing.push_back(tp);
        }
        if (h.member && h.stable) {
            restored_.clear();  // only the first assignment after a restart uses them
        }
    }
    if (missing.empty()) {
        co_return std::nullopt;
    }
    // The group's committed offsets first.
    api::offset_fetch_request req;
    req.group_id = group_;
    std::map<topic_name, std::vector<partition_id>> by_topic;
    for (const auto& tp : missing) {
        by_topic[tp.topic].push_back(tp.partition);
    }
    std::vector<api::topic_partition_list> topics;
    for (auto& [t, parts] : by_topic) {
        topics.push_back(api::topic_partition_list{t, std::move(parts)});
    }
    req.topics = std::move(topics);
    std::vector<api::offset_fetch_request> reqs;
    reqs.push_back(std::move(req));
    auto fetched = co_await rc_.groups.fetch_offsets(std::move(reqs));
    std::map<topic_partition, std::int64_t> found;
    if (!fetched.empty() && !fetched[0].error) {
        for (const auto& t : fetched[0].topics) {
            for (const auto& p : t.partitions) {
                if (!p.error && p.committed.value >= 0) {
                    found[{t.topic, p.partition}] = p.committed.value;
                }
            }
        }
    }
    // The rest by auto.offset.reset.
    std::vector<topic_partition> reset;
    std::vector<api::offset_query> queries;
    for (const auto& tp : missing) {
        if (found.contains(tp)) {
            continue;
        }
        if (config_.auto_offset_reset == offset_reset::none) {
            co_return error{code::kafka_error, "Kafka error: Undefined offset with no reset "
                                               "policy for partition: " +
                                                   tp.topic.value + "-" +
                                                   std::to_string(tp.partition.value)};
        }
        reset.push_back(tp);
        queries.push_back({tp.topic, tp.partition,
                           api::offset_spec{config_.auto_offset_reset == offset_reset::earliest
                                                ? api::offset_spec::kind::earliest
                                                : api::offset_spec::kind::latest,
                                            -1}});
    }
    if (!queries.empty()) {
        auto offsets = co_await rc_.records.list_offsets(std::move(queries),
                                                         api::isolation::read_uncommitted);
        for (std::size_t i = 0; i < offsets.size() && i < reset.size(); ++i) {
            if (offsets[i].error) {
                co_return from_backend(offsets[i].error, subject::partition);
            }
            found[reset[i]] = offsets[i].off.value;
        }
    }
    std::lock_guard lock(mu_);
    for (const auto& [tp, off] : found) {
        positions_.emplace(tp, off);  // a seek that came meanwhile wins
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::variant<std::string, error>> consumer_instance::read(
    std::chrono::milliseconds timeout, std::int64_t max_bytes) {
    const auto limit = request_timeout();
    const auto wait = timeout.count() <= 0 ? limit : std::min(timeout, limit);
    const auto deadline = clock::now() + wait;

    // One read at a time per instance, in arrival order.
    for (;;) {
        std::uint64_t seen = 0;
        {
            std::lock_guard lock(mu_);
            if (!reading_) {
                reading_ = true;
                last_used_ = clock::now();
                break;
            }
            seen = read_done_.version();
        }
        const bool done = co_await read_done_.wait(seen, deadline);
        if (!done) {
            co_return std::string("[]");
        }
    }
    struct release {
        consumer_instance* self;
        ~release() {
            {
                std::lock_guard lock(self->mu_);
                self->reading_ = false;
                self->last_used_ = clock::now();
            }
            self->read_done_.notify();
        }
    } guard{this};

    const std::int64_t cap = rc_.settings.consumer_request_max_bytes;
    const std::int64_t budget = max_bytes <= 0 ? cap : std::min(max_bytes, cap);
    json::writer w;
    w.start_array();
    std::size_t count = 0;
    std::optional<error> conversion;
    held_partitions h;
    bool advanced = false;
    for (;;) {
        h = held();
        std::shared_ptr<group_member> member;
        {
            std::lock_guard lock(mu_);
            member = member_;
        }
        if (h.member && (!h.stable || h.parts.empty())) {
            // Rebalancing, or nothing assigned yet: wait for the next assignment.
            const auto seen = member->changed().version();
            const auto again = held();
            if (!again.stable || again.parts.empty()) {
                const bool changed = co_await member->changed().wait(seen, deadline);
                if (!changed) {
                    break;
                }
            }
            continue;
        }
        if (h.parts.empty()) {
            break;
        }
        auto e = co_await fill_positions(h);
        if (e) {
            co_return *e;
        }
        std::vector<read_position> positions;
        {
            std::lock_guard lock(mu_);
            for (const auto& tp : h.parts) {
                positions.push_back({tp.topic, tp.partition, offset(positions_[tp])});
            }
        }
        const auto now = clock::now();
        read_limits limits;
        limits.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(deadline - now, clock::duration::zero()));
        limits.min_bytes = config_.fetch_min_bytes.value_or(
            rc_.settings.fetch_min_bytes > 0 ? rc_.settings.fetch_min_bytes : 1);
        limits.max_bytes = budget;
        limits.partition_max_bytes =
            static_cast<std::int32_t>(std::min<std::int64_t>(budget, 64 * 1024 * 1024));
        const bool json_format = config_.format == media::json;
        auto sink = [&](std::size_t i, const kafka::record_view& r) {
            if (json_format) {
                const bool key_ok = !r.key || json::is_json(view_of(*r.key));
                const bool value_ok = !r.value || json::is_json(view_of(*r.value));
                if (!key_ok || !value_ok) {
                    if (count == 0) {
                        conversion = error{code::json_conversion,
                                           "Conversion of JSON to Object failed: the record at " +
                                               positions[i].topic.value + "-" +
                                               std::to_string(positions[i].partition.value) +
                                               " offset " + std::to_string(r.offset) +
                                               " is not JSON"};
                    }
                    return false;
                }
            }
            const std::size_t before = w.size();
            if (count > 0 && static_cast<std::int64_t>(before) >= budget) {
                return false;
            }
            w.start_object();
            w.field("topic", positions[i].topic.value);
            w.key("key");
            if (!r.key) {
                w.null();
            } else if (json_format) {
                w.raw(view_of(*r.key));
            } else {
                w.base64(view_of(*r.key));
            }
            w.key("value");
            if (!r.value) {
                w.null();
            } else if (json_format) {
                w.raw(view_of(*r.value));
            } else {
                w.base64(view_of(*r.value));
            }
            w.field("partition", positions[i].partition.value);
            w.field("offset", r.offset);
            w.field("timestamp", r.timestamp);
            w.key("headers");
            w.start_array();
            for (const auto& hv : r.headers) {
                w.start_object();
                w.field("name", hv.key);
                w.key("value");
                if (hv.value) {
                    w.base64(view_of(*hv.value));
                } else {
                    w.null();
                }
                w.end_object();
            }
            w.end_array();
            w.end_object();
            ++count;
            return true;
        };
        auto outcome = co_await read_records(rc_.records, positions, limits, sink);
        if (conversion) {
            co_return *conversion;
        }
        // Positions advance only where nothing moved them meanwhile (a seek, a rebalance).
        std::vector<std::size_t> out_of_range;
        {
            std::lock_guard lock(mu_);
            for (std::size_t i = 0; i < outcome.size(); ++i) {
                const topic_partition tp{positions[i].topic, positions[i].partition};
                auto it = positions_.find(tp);
                if (it == positions_.end() || it->second != positions[i].next.value) {
                    continue;
                }
                if (outcome[i].error &&
                    api::reason(outcome[i].error) == api::errc::offset_out_of_range) {
                    out_of_range.push_back(i);
                    continue;
                }
                if (outcome[i].next.value != it->second) {
                    it->second = outcome[i].next.value;
                    advanced = true;
                }
            }
            for (auto i : out_of_range) {
                positions_.erase({positions[i].topic, positions[i].partition});
            }
        }
        if (!out_of_range.empty()) {
            // compat: the Kafka consumer resets an out-of-range position by auto.offset.reset,
            // not to the committed offset; clearing it and filling again does that here, as
            // the committed offset is what went out of range or is older.
            std::lock_guard lock(mu_);
            for (auto i : out_of_range) {
                const auto& o = outcome[i];
                const bool earliest = config_.auto_offset_reset != offset_reset::latest;
                positions_[{positions[i].topic, positions[i].partition}] =
                    earliest ? std::max<std::int64_t>(o.log_start.value, 0)
                             : std::max<std::int64_t>(o.high_watermark.value, 0);
            }
            advanced = true;
        }
        if (count > 0 || clock::now() >= deadline) {
            break;
        }
    }
    w.end_array();
    if (advanced) {
        co_await save();
        if (config_.auto_commit && count > 0) {
            std::map<topic_partition, std::int64_t> offsets;
            {
                std::lock_guard lock(mu_);
                for (const auto& tp : h.parts) {
                    if (auto it = positions_.find(tp); it != positions_.end()) {
                        offsets[tp] = it->second;
                    }
                }
            }
            co_await commit_offsets(h, offsets, {});
        }
    }
    co_return w.str();
}

boost::asio::awaitable<std::optional<error>> consumer_instance::commit_offsets(
    const held_partitions& h, const std::map<topic_partition, std::int64_t>& offsets,
    const std::map<topic_partition, std::optional<std::string>>& metadata) {
    if (offsets.empty()) {
        co_return std::nullopt;
    }
    api::offset_commit_request req;
    req.group_id = group_;
    if (h.member) {
        req.generation_id_or_member_epoch = h.generation;
        req.member_id = h.member_id;
        req.group_instance_id = rest_instance_id(name_);
    }
    std::map<topic_name, std::vector<api::commit_partition>> by_topic;
    for (const auto& [tp, off] : offsets) {
        api::commit_partition cp;
        cp.partition = tp.partition;
        cp.committed = offset(off);
        if (auto it = metadata.find(tp); it != metadata.end()) {
            cp.metadata = it->second;
        }
        by_topic[tp.topic].push_back(std::move(cp));
    }
    for (auto& [t, parts] : by_topic) {
        req.topics.push_back(api::commit_topic{t, std::move(parts)});
    }
    auto res = co_await rc_.groups.commit_offsets(std::move(req));
    for (const auto& t : res.topics) {
        for (const auto& p : t.partitions) {
            if (p.error) {
                co_return from_backend(p.error, subject::partition);
            }
        }
    }
    co_return std::nullopt;
}

boost::asio::awaitable<void> consumer_instance::commit_held(const group_member::state& held) {
    std::map<topic_partition, std::int64_t> offsets;
    bool stopping = false;
    {
        std::lock_guard lock(mu_);
        stopping = stopped_;
        for (const auto& [topic, parts] : held.partitions) {
            for (auto p : parts) {
                const topic_partition tp{topic, p};
                if (auto it = positions_.find(tp); it != positions_.end()) {
                    offsets[tp] = it->second;
                    if (!stopping) {
                        positions_.erase(it);  // a new assignment starts from the commit
                    }
                }
            }
        }
    }
    if (config_.auto_commit) {
        held_partitions h;
        h.member = true;
        h.generation = held.generation;
        h.member_id = held.member_id;
        co_await commit_offsets(h, offsets, {});
    }
}

boost::asio::awaitable<std::variant<std::string, error>> consumer_instance::commit(
    std::optional<std::vector<commit_entry>> entries) {
    touch();
    const auto h = held();
    std::map<topic_partition, std::int64_t> offsets;
    std::map<topic_partition, std::optional<std::string>> metadata;
    if (!entries) {
        std::lock_guard lock(mu_);
        for (const auto& tp : h.parts) {
            if (auto it = positions_.find(tp); it != positions_.end()) {
                offsets[tp] = it->second;
            }
        }
    } else {
        for (const auto& e : *entries) {
            offsets[e.tp] = e.offset + 1;  // compat: KafkaConsumerState.commitOffsets
            metadata[e.tp] = e.metadata;
        }
    }
    auto e = co_await commit_offsets(h, offsets, metadata);
    if (e) {
        co_return *e;
    }
    json::writer w;
    w.start_array();
    for (const auto& [tp, off] : offsets) {
        w.start_object();
        w.field("topic", tp.topic.value);
        w.field("partition", tp.partition.value);
        w.field("consumed", off - 1);
        w.field("committed", off);
        w.end_object();
    }
    w.end_array();
    co_return w.str();
}

boost::asio::awaitable<std::variant<std::string, error>> consumer_instance::committed(
    std::vector<topic_partition> parts) {
    touch();
    api::offset_fetch_request req;
    req.group_id = group_;
    std::map<topic_name, std::vector<partition_id>> by_topic;
    for (const auto& tp : parts) {
        by_topic[tp.topic].push_back(tp.partition);
    }
    std::vector<api::topic_partition_list> topics;
    for (auto& [t, ps] : by_topic) {
        topics.push_back(api::topic_partition_list{t, std::move(ps)});
    }
    req.topics = std::move(topics);
    std::vector<api::offset_fetch_request> reqs;
    reqs.push_back(std::move(req));
    auto res = co_await rc_.groups.fetch_offsets(std::move(reqs));
    if (!res.empty() && res[0].error) {
        co_return from_backend(res[0].error);
    }
    std::map<topic_partition, const api::fetched_offset*> found;
    if (!res.empty()) {
        for (const auto& t : res[0].topics) {
            for (const auto& p : t.partitions) {
                if (!p.error && p.committed.value >= 0) {
                    found[{t.topic, p.partition}] = &p;
                }
            }
        }
    }
    json::writer w;
    w.start_object();
    w.key("offsets");
    w.start_array();
    for (const auto& tp : parts) {
        auto it = found.find(tp);
        if (it == found.end()) {
            continue;
        }
        w.start_object();
        w.field("topic", tp.topic.value);
        w.field("partition", tp.partition.value);
        w.field("offset", it->second->committed.value);
        w.field("metadata", it->second->metadata.value_or(""));
        w.end_object();
    }
    w.end_array();
    w.end_object();
    co_return w.str();
}

boost::asio::awaitable<void> consumer_instance::save() {
    if (persist_) {
        co_await persist_(to_stored());
    }
}

stored_instance consumer_instance::to_stored() const {
    std::lock_guard lock(mu_);
    stored_instance s;
    s.group = group_;
    s.name = name_;
    s.config = config_;
    if (member_) {
        s.topics = member_->subscribed_topics();
        s.pattern = member_->subscribed_pattern();
        if (s.pattern) {
            s.pattern_principal = pattern_principal_;
            s.pattern_host = pattern_host_;
        }
    }
    s.assigned = manual_;
    s.positions = restored_;
    for (const auto& [tp, off] : positions_) {
        s.positions[tp] = off;
    }
    return s;
}

void consumer_instance::restore(const stored_instance& s) {
    std::lock_guard lock(mu_);
    if (!s.assigned.empty()) {
        manual_ = s.assigned;
        positions_ = s.positions;
        return;
    }
    restored_ = s.positions;
    if (s.pattern) {
        ensure_member();
        pattern_principal_ = s.pattern_principal.empty() ? "User:ANONYMOUS" : s.pattern_principal;
        pattern_host_ = s.pattern_host;
        member_->subscribe_pattern(*s.pattern, describe_filter(pattern_principal_, pattern_host_));
    } else if (!s.topics.empty()) {
        ensure_member();
        member_->subscribe(s.topics);
    }
}

}  // namespace sluice::gateway::rest
