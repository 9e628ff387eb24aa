#include "gateway/http/rest/consumer_instance.h"

#include <algorithm>
#include <set>

namespace sluice::gateway::rest {
namespace api = backend::api;
namespace kafka = protocol::kafka;
using clock = std::chrono::steady_clock;

std::string rest_instance_id(const std::string& name) { return "sluice-rest/" + name; }

namespace {

/// The consumer's revoke hook: commits what the instance consumed (a named coroutine, so that
/// nothing it needs lives in a lambda's captures).
boost::asio::awaitable<void> instance_revoke(
    std::weak_ptr<consumer_instance> weak, api::assignment_state held,
    boost::asio::awaitable<void> (consumer_instance::*fn)(const api::assignment_state&)) {
    if (auto self = weak.lock()) {
        co_await ((*self).*fn)(held);
    }
}

error illegal_state(const topic_partition& tp) {
    return {code::illegal_state, "Illegal state: No current assignment for partition " +
                                     tp.topic.value + "-" + std::to_string(tp.partition.value)};
}

std::string_view view_of(protocol::bytes_view b) { return protocol::as_chars(b); }

api::offset_reset reset_of(offset_reset r) {
    switch (r) {
        case offset_reset::earliest: return api::offset_reset::earliest;
        case offset_reset::latest: return api::offset_reset::latest;
        case offset_reset::none: return api::offset_reset::none;
    }
    return api::offset_reset::latest;
}

bool holds(const std::vector<topic_partition>& parts, const topic_partition& tp) {
    return std::find(parts.begin(), parts.end(), tp) != parts.end();
}

}  // namespace

consumer_instance::consumer_instance(rest_context& rc, boost::asio::any_io_executor ex,
                                     sluice::group_id group, std::string name,
                                     instance_config config)
    : rc_(rc),
      group_(std::move(group)),
      name_(std::move(name)),
      config_(config),
      last_used_(clock::now()) {
    api::consumer_options o;
    o.group = group_;
    o.instance_id = rest_instance_id(name_);
    o.session_timeout_ms = rc_.settings.member_session_timeout_ms;
    o.reset = reset_of(config_.auto_offset_reset);
    o.client = api::client_info{"sluice-rest", ""};
    consumer_ = rc_.client->open_consumer(std::move(o), std::move(ex));
    consumer_->on_change([changed = changed_] { changed->notify(); });
}

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
    {
        std::lock_guard lock(mu_);
        stopped_ = true;
    }
    consumer_->close(leave);
}

bool consumer_instance::done() const {
    std::lock_guard lock(mu_);
    return !subscribed_ || consumer_->closed();
}

std::optional<error> consumer_instance::subscribe(std::vector<topic_name> topics) {
    std::lock_guard lock(mu_);
    if (!manual_.empty()) {
        return error{code::illegal_state,
                     "Illegal state: Subscription to topics, partitions and pattern are "
                     "mutually exclusive"};
    }
    if (consumer_->subscribed_pattern()) {
        return error{code::consumer_already_subscribed, std::string(already_subscribed_message)};
    }
    if (!subscribed_) {
        subscribed_ = true;
        std::weak_ptr<consumer_instance> weak = weak_from_this();
        consumer_->on_revoke([weak](const api::assignment_state& held) {
            return instance_revoke(weak, held, &consumer_instance::commit_held);
        });
    }
    consumer_->subscribe(std::move(topics));
    return std::nullopt;
}

api::topic_filter consumer_instance::describe_filter(std::string principal,
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
    if (!consumer_->subscribed_topics().empty()) {
        return error{code::consumer_already_subscribed, std::string(already_subscribed_message)};
    }
    if (!subscribed_) {
        subscribed_ = true;
        std::weak_ptr<consumer_instance> weak = weak_from_this();
        consumer_->on_revoke([weak](const api::assignment_state& held) {
            return instance_revoke(weak, held, &consumer_instance::commit_held);
        });
    }
    if (!consumer_->subscribe_pattern(pattern, describe_filter(principal, host))) {
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
    if (subscribed_ || !manual_.empty()) {
        consumer_->unsubscribe();
    }
    manual_.clear();
}

std::vector<std::string> consumer_instance::subscription() const {
    std::vector<std::string> out;
    if (consumer_->subscribed_pattern()) {
        for (const auto& t : consumer_->assignment().topics) {
            out.push_back(t.value);
        }
    } else {
        for (const auto& t : consumer_->subscribed_topics()) {
            out.push_back(t.value);
        }
    }
    return out;
}

std::optional<error> consumer_instance::assign(std::vector<topic_partition> partitions) {
    std::lock_guard lock(mu_);
    if (!consumer_->subscribed_topics().empty() || consumer_->subscribed_pattern()) {
        return error{code::illegal_state,
                     "Illegal state: Subscription to topics, partitions and pattern are "
                     "mutually exclusive"};
    }
    std::sort(partitions.begin(), partitions.end());
    partitions.erase(std::unique(partitions.begin(), partitions.end()), partitions.end());
    manual_ = partitions;
    consumer_->assign(std::move(partitions));
    return std::nullopt;
}

consumer_instance::held_partitions consumer_instance::held() const {
    bool member = false;
    {
        std::lock_guard lock(mu_);
        member = subscribed_ && manual_.empty();
    }
    held_partitions h;
    h.member = member;
    if (!member) {
        std::lock_guard lock(mu_);
        h.parts = manual_;
        return h;
    }
    auto s = consumer_->assignment();
    h.stable = s.stable;
    h.parts = std::move(s.partitions);
    return h;
}

std::vector<topic_partition> consumer_instance::assignment() const {
    auto h = held();
    return h.stable ? h.parts : std::vector<topic_partition>{};
}

std::optional<error> consumer_instance::seek(
    const std::vector<std::pair<topic_partition, std::int64_t>>& to) {
    const auto h = held();
    std::vector<std::pair<topic_partition, offset>> at;
    for (const auto& [tp, off] : to) {
        if (!holds(h.parts, tp)) {
            return illegal_state(tp);
        }
        at.emplace_back(tp, offset(std::max<std::int64_t>(off, 0)));
    }
    for (const auto& [tp, off] : at) {
        forget_restored(tp);
    }
    consumer_->seek(std::move(at));
    return std::nullopt;
}

void consumer_instance::forget_restored(const topic_partition& tp) {
    std::lock_guard lock(mu_);
    restored_.erase(tp);
}

boost::asio::awaitable<std::optional<error>> consumer_instance::seek_to(
    std::vector<topic_partition> parts, seek_kind kind) {
    const auto h = held();
    for (const auto& tp : parts) {
        if (!holds(h.parts, tp)) {
            co_return illegal_state(tp);
        }
        forget_restored(tp);
    }
    auto done = co_await consumer_->seek_to(
        std::move(parts), api::offset_spec{kind == seek_kind::beginning
                                               ? api::offset_spec::kind::earliest
                                               : api::offset_spec::kind::latest,
                                           -1});
    if (!done) {
        co_return from_backend(done.error(), subject::partition);
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<error>> consumer_instance::seek_to_time(
    std::vector<std::pair<topic_partition, std::int64_t>> times) {
    const auto h = held();
    for (const auto& [tp, ts] : times) {
        if (!holds(h.parts, tp)) {
            co_return illegal_state(tp);
        }
        forget_restored(tp);
    }
    for (const auto& [tp, ts] : times) {
        // No record at or after the time: the end of the partition.
        std::vector<topic_partition> one{tp};
        const api::offset_spec at{api::offset_spec::kind::timestamp, ts};
        auto done = co_await consumer_->seek_to(std::move(one), at);
        if (!done) {
            co_return from_backend(done.error(), subject::partition);
        }
    }
    co_return std::nullopt;
}

void consumer_instance::apply_restored(const held_partitions& h) {
    std::vector<std::pair<topic_partition, offset>> at;
    {
        std::lock_guard lock(mu_);
        if (restored_.empty() || !h.member || !h.stable || h.parts.empty()) {
            return;
        }
        // Over the position the consumer resolved itself (the group's commit, else
        // auto.offset.reset): the stored one is where the instance had read to. A seek of
        // the client's since the restart removed its partitions from restored_.
        for (const auto& tp : h.parts) {
            auto it = restored_.find(tp);
            if (it != restored_.end()) {
                at.emplace_back(tp, offset(it->second));
            }
        }
        restored_.clear();  // only the first assignment after a restart uses them
    }
    consumer_->seek(std::move(at));
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
    bool advanced = false;
    for (;;) {
        const auto h = held();
        if (h.member && (!h.stable || h.parts.empty())) {
            // Rebalancing, or nothing assigned yet: wait for the next assignment.
            const auto seen = changed_->version();
            const auto again = held();
            if (!again.stable || again.parts.empty()) {
                const bool changed = co_await changed_->wait(seen, deadline);
                if (!changed) {
                    break;
                }
            }
            continue;
        }
        if (h.parts.empty()) {
            break;
        }
        apply_restored(h);
        const auto before = consumer_->positions();
        api::poll_limits limits;
        limits.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(deadline - clock::now(), clock::duration::zero()));
        limits.min_bytes = config_.fetch_min_bytes.value_or(
            rc_.settings.fetch_min_bytes > 0 ? rc_.settings.fetch_min_bytes : 1);
        limits.max_bytes = budget;
        limits.partition_max_bytes =
            static_cast<std::int32_t>(std::min<std::int64_t>(budget, 64 * 1024 * 1024));
        const bool json_format = config_.format == media::json;
        api::message_sink sink = [&](const topic_name& topic, partition_id partition,
                                     const kafka::record_view& r) {
            if (json_format) {
                const bool key_ok = !r.key || json::is_json(view_of(*r.key));
                const bool value_ok = !r.value || json::is_json(view_of(*r.value));
                if (!key_ok || !value_ok) {
                    if (count == 0) {
                        conversion = error{code::json_conversion,
                                           "Conversion of JSON to Object failed: the record at " +
                                               topic.value + "-" +
                                               std::to_string(partition.value) +
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
            w.field("topic", topic.value);
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
            w.field("partition", partition.value);
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
        auto outcome = co_await consumer_->poll(limits, sink);
        if (conversion) {
            co_return *conversion;
        }
        if (!outcome) {
            co_return from_backend(outcome.error(), subject::partition);
        }
        const auto after = consumer_->positions();
        for (const auto& pp : *outcome) {
            if (!pp.error || pp.error.reason() != api::errc::offset_out_of_range) {
                continue;
            }
            auto it = after.find(pp.tp);
            if (it == after.end()) {
                co_return error{code::kafka_error,
                                "Kafka error: Undefined offset with no reset policy for "
                                "partition: " +
                                    pp.tp.topic.value + "-" +
                                    std::to_string(pp.tp.partition.value)};
            }
            // compat: the Kafka consumer resets an out-of-range position by
            // auto.offset.reset (none: as earliest here), not to the committed offset.
            consumer_->seek({{pp.tp, offset(std::max<std::int64_t>(pp.log_start.value, 0))}});
            advanced = true;
        }
        advanced = advanced || after != before;
        if (count > 0 || clock::now() >= deadline) {
            break;
        }
    }
    w.end_array();
    if (advanced) {
        co_await save();
        if (config_.auto_commit && count > 0) {
            co_await consumer_->commit(std::nullopt);
        }
    }
    co_return w.str();
}

boost::asio::awaitable<void> consumer_instance::commit_held(const api::assignment_state&) {
    if (config_.auto_commit) {
        co_await consumer_->commit(std::nullopt);
    }
}

boost::asio::awaitable<std::variant<std::string, error>> consumer_instance::commit(
    std::optional<std::vector<commit_entry>> entries) {
    touch();
    std::optional<std::vector<api::offset_commit>> what;
    if (entries) {
        what.emplace();
        for (const auto& e : *entries) {
            // compat: KafkaConsumerState.commitOffsets commits the offset after the one named.
            what->push_back(api::offset_commit{e.tp, offset(e.offset + 1), e.metadata});
        }
    }
    auto done = co_await consumer_->commit(std::move(what));
    if (!done) {
        co_return from_backend(done.error(), subject::partition);
    }
    std::map<topic_partition, std::int64_t> offsets;
    for (const auto& c : *done) {
        offsets[c.tp] = c.next.value;
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
    std::map<topic_partition, api::committed_offset> found;
    if (!parts.empty()) {
        auto res = co_await consumer_->committed(parts);
        if (!res) {
            co_return from_backend(res.error());
        }
        for (auto& c : *res) {
            if (c.next.value >= 0) {
                found[c.tp] = std::move(c);
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
        w.field("offset", it->second.next.value);
        w.field("metadata", it->second.metadata.value_or(""));
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
    stored_instance s;
    s.group = group_;
    s.name = name_;
    s.config = config_;
    s.topics = consumer_->subscribed_topics();
    s.pattern = consumer_->subscribed_pattern();
    const auto positions = consumer_->positions();
    std::lock_guard lock(mu_);
    if (s.pattern) {
        s.pattern_principal = pattern_principal_;
        s.pattern_host = pattern_host_;
    }
    s.assigned = manual_;
    s.positions = restored_;
    for (const auto& [tp, off] : positions) {
        s.positions[tp] = off.value;
    }
    return s;
}

void consumer_instance::restore(const stored_instance& s) {
    if (!s.assigned.empty()) {
        {
            std::lock_guard lock(mu_);
            manual_ = s.assigned;
        }
        consumer_->assign(s.assigned);
        std::vector<std::pair<topic_partition, offset>> at;
        for (const auto& [tp, off] : s.positions) {
            at.emplace_back(tp, offset(off));
        }
        consumer_->seek(std::move(at));
        return;
    }
    {
        std::lock_guard lock(mu_);
        restored_ = s.positions;
    }
    if (s.pattern) {
        const std::string principal =
            s.pattern_principal.empty() ? "User:ANONYMOUS" : s.pattern_principal;
        subscribe_pattern(*s.pattern, principal, s.pattern_host);
    } else if (!s.topics.empty()) {
        subscribe(s.topics);
    }
}

}  // namespace sluice::gateway::rest
