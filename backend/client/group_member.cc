#include "backend/client/group_member.h"

#include <algorithm>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <re2/re2.h>

#include "backend/api/logger.h"
#include "backend/api/sluice_topics.h"
#include "protocol/kafka/classic_assignor.h"
#include "protocol/kafka/consumer_protocol.h"

namespace sluice::backend::client {
namespace asio = boost::asio;
namespace api = backend::api;
namespace kafka = protocol::kafka;

namespace {

spdlog::logger& member_log() {
    static spdlog::logger& l = named_logger("client");
    return l;
}

constexpr auto retry_backoff = std::chrono::milliseconds(200);

std::vector<std::byte> to_vector(const protocol::byte_buffer& b) {
    const auto v = b.view();
    return {v.begin(), v.end()};
}

}  // namespace

group_member::group_member(api::groups& groups, api::topics& topics, asio::any_io_executor ex,
                           options opts)
    : groups_(groups),
      topics_(topics),
      strand_(asio::make_strand(ex)),
      timer_(strand_),
      opts_(std::move(opts)) {}

group_member::~group_member() = default;

std::chrono::milliseconds group_member::heartbeat_interval() const {
    return std::min(std::chrono::milliseconds(opts_.session_timeout_ms / 3),
                    std::chrono::milliseconds(3000));
}

void group_member::start() {
    auto self = shared_from_this();
    asio::co_spawn(strand_, run(self), [self](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                member_log().error("group {}: member failed: {}", self->opts_.group.value,
                                 ex.what());
            }
            self->done_ = true;
            self->notify_change();
        }
    });
}

void group_member::notify_change() {
    if (changed_) {
        changed_();
    }
}

void group_member::poke() {
    asio::post(strand_, [self = shared_from_this()] {
        self->poked_ = true;
        self->timer_.cancel();
    });
}

void group_member::subscribe(std::vector<topic_name> topics) {
    std::sort(topics.begin(), topics.end());
    topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
    {
        std::lock_guard lock(mu_);
        sub_topics_ = std::move(topics);
        sub_pattern_.reset();
        pattern_.reset();
        pattern_filter_.reset();
        ++sub_version_;
    }
    poke();
}

bool group_member::subscribe_pattern(const std::string& pattern, topic_filter filter) {
    RE2::Options o;
    o.set_log_errors(false);
    auto re = std::make_shared<re2::RE2>(pattern, o);
    if (!re->ok()) {
        return false;
    }
    {
        std::lock_guard lock(mu_);
        sub_topics_.clear();
        sub_pattern_ = pattern;
        pattern_ = std::move(re);
        pattern_filter_ =
            filter ? std::make_shared<const topic_filter>(std::move(filter)) : nullptr;
        ++sub_version_;
    }
    poke();
    return true;
}

void group_member::unsubscribe() {
    {
        std::lock_guard lock(mu_);
        sub_topics_.clear();
        sub_pattern_.reset();
        pattern_.reset();
        pattern_filter_.reset();
        ++sub_version_;
    }
    poke();
}

void group_member::stop(bool leave) {
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return;
        }
        stopping_ = true;
        leave_on_stop_ = leave;
    }
    poke();
}

group_member::state group_member::snapshot() const {
    std::lock_guard lock(mu_);
    return state_;
}

std::vector<topic_name> group_member::subscribed_topics() const {
    std::lock_guard lock(mu_);
    return sub_topics_;
}

std::optional<std::string> group_member::subscribed_pattern() const {
    std::lock_guard lock(mu_);
    return sub_pattern_;
}

void group_member::set_state(state s) {
    {
        std::lock_guard lock(mu_);
        state_ = std::move(s);
    }
    notify_change();
}

asio::awaitable<void> group_member::sleep(std::chrono::milliseconds d) {
    if (poked_) {
        poked_ = false;
        co_return;
    }
    timer_.expires_after(d);
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    poked_ = false;
}

asio::awaitable<std::vector<topic_name>> group_member::resolve_topics() {
    std::shared_ptr<re2::RE2> pattern;
    std::shared_ptr<const topic_filter> filter;
    std::vector<topic_name> topics;
    {
        std::lock_guard lock(mu_);
        pattern = pattern_;
        filter = pattern_filter_;
        topics = sub_topics_;
    }
    if (!pattern) {
        co_return topics;
    }
    topics.clear();
    for (const auto& t : co_await topics_.list()) {
        if (!t.internal && !api::is_sluice_owned_topic(t.name.value) &&
            RE2::FullMatch(t.name.value, *pattern) && (!filter || (*filter)(t.name))) {
            topics.push_back(t.name);
        }
    }
    co_return topics;
}

asio::awaitable<std::map<std::string, std::vector<std::byte>>> group_member::assign(
    const api::join_group_result& joined) {
    std::vector<kafka::assignor_member> members;
    std::set<std::string> wanted;
    for (const auto& m : joined.members) {
        kafka::assignor_member am;
        am.member_id = m.member_id;
        auto sub = kafka::decode_subscription(
            protocol::bytes_view(m.metadata.data(), m.metadata.size()));
        if (sub) {
            am.topics = sub->topics;
            wanted.insert(sub->topics.begin(), sub->topics.end());
        }
        members.push_back(std::move(am));
    }
    kafka::partition_counts counts;
    for (const auto& t : wanted) {
        auto d = co_await topics_.describe(topic_name(t));
        if (d && d->partitions > 0) {
            counts[t] = d->partitions;
        }
    }
    leader_counts_ = counts;
    const bool roundrobin = joined.protocol_name && *joined.protocol_name == "roundrobin";
    auto plan = roundrobin ? kafka::assign_roundrobin(members, counts)
                           : kafka::assign_range(members, counts);
    std::map<std::string, std::vector<std::byte>> out;
    for (auto& [member, parts] : plan) {
        kafka::consumer_assignment a;
        a.partitions = std::move(parts);
        out[member] = to_vector(kafka::encode_assignment(a));
    }
    co_return out;
}

asio::awaitable<bool> group_member::join_and_sync() {
    kafka::consumer_subscription sub;
    for (const auto& t : joined_topics_) {
        sub.topics.push_back(t.value);
    }
    const auto metadata = to_vector(kafka::encode_subscription(sub));

    api::join_group_request req;
    req.group_id = opts_.group;
    req.member_id = member_id_;
    req.group_instance_id = opts_.instance_id;
    req.protocol_type = kafka::consumer_protocol_type;
    req.protocols.push_back(api::protocol_metadata{"range", metadata});
    req.protocols.push_back(api::protocol_metadata{"roundrobin", metadata});
    req.session_timeout_ms = opts_.session_timeout_ms;
    req.rebalance_timeout_ms = opts_.session_timeout_ms;
    req.require_known_member_id = true;
    req.client = opts_.client;

    api::join_group_result joined;
    for (int attempt = 0; attempt < 3; ++attempt) {
        api::join_group_request call = req;
        joined = co_await groups_.join_group(std::move(call));
        if (joined.error && api::reason(joined.error) == api::errc::member_id_required) {
            member_id_ = joined.member_id;
            req.member_id = member_id_;
            continue;
        }
        break;
    }
    if (joined.error) {
        if (api::reason(joined.error) == api::errc::unknown_member_id) {
            member_id_.clear();
        }
        member_log().debug("group {}: join failed: {}", opts_.group.value,
                           joined.error.code.message());
        co_return false;
    }
    member_id_ = joined.member_id;
    generation_ = joined.generation_id;
    in_group_ = true;
    {
        state s;
        s.generation = generation_;
        s.member_id = member_id_;
        set_state(std::move(s));
    }

    std::map<std::string, std::vector<std::byte>> assignments;
    if (joined.leader == member_id_) {
        assignments = co_await assign(joined);
    } else {
        leader_counts_.clear();
    }
    api::sync_group_request sreq;
    sreq.group_id = opts_.group;
    sreq.generation_id = generation_;
    sreq.member_id = member_id_;
    sreq.group_instance_id = opts_.instance_id;
    sreq.protocol_type = std::string(kafka::consumer_protocol_type);
    sreq.protocol_name = joined.protocol_name;
    sreq.assignments = std::move(assignments);
    api::sync_group_result synced = co_await groups_.sync_group(std::move(sreq));
    if (synced.error) {
        if (api::reason(synced.error) == api::errc::unknown_member_id) {
            member_id_.clear();
        }
        member_log().debug("group {}: sync failed: {}", opts_.group.value,
                           synced.error.code.message());
        co_return false;
    }
    auto decoded = kafka::decode_assignment(
        protocol::bytes_view(synced.assignment.data(), synced.assignment.size()));
    state s;
    s.stable = true;
    s.generation = generation_;
    s.member_id = member_id_;
    s.topics = joined_topics_;
    if (decoded) {
        for (const auto& [topic, parts] : decoded->partitions) {
            auto& list = s.partitions[topic_name(topic)];
            for (auto p : parts) {
                list.push_back(partition_id(p));
            }
        }
    }
    member_log().debug("group {}: member {} generation {} holds {} topics", opts_.group.value,
                     member_id_, generation_, s.partitions.size());
    set_state(std::move(s));
    co_return true;
}

asio::awaitable<void> group_member::revoke() {
    const state held = snapshot();
    if (revoke_ && held.stable) {
        co_await revoke_(held);
    }
    state s;
    s.generation = held.generation;
    s.member_id = held.member_id;
    set_state(std::move(s));
}

asio::awaitable<void> group_member::leave() {
    if (!in_group_ || (member_id_.empty() && !opts_.instance_id)) {
        in_group_ = false;
        co_return;
    }
    std::vector<api::leave_member> who;
    who.push_back(api::leave_member{member_id_, opts_.instance_id, std::string("sluice")});
    co_await groups_.leave_group(opts_.group, std::move(who));
    in_group_ = false;
    member_id_.clear();
    generation_ = -1;
}

asio::awaitable<void> group_member::run(std::shared_ptr<group_member> self) {
    (void)self;  // keeps the member alive until run() returns
    auto last_metadata = std::chrono::steady_clock::now();
    for (;;) {
        std::uint64_t version = 0;
        bool has_pattern = false;
        {
            std::lock_guard lock(mu_);
            if (stopping_) {
                break;
            }
            version = sub_version_;
            has_pattern = pattern_ != nullptr;
        }
        auto topics = co_await resolve_topics();
        if (topics.empty()) {
            // Nothing to consume: not a member (a pattern is looked at again later).
            if (in_group_) {
                co_await revoke();
                co_await leave();
            }
            state idle;
            idle.stable = true;
            set_state(std::move(idle));
            co_await sleep(has_pattern ? metadata_interval : std::chrono::hours(24));
            continue;
        }
        joined_topics_ = std::move(topics);
        joined_version_ = version;
        const bool joined = co_await join_and_sync();
        if (!joined) {
            co_await sleep(retry_backoff);
            continue;
        }
        last_metadata = std::chrono::steady_clock::now();
        // Stable: heartbeat until something asks for a rejoin.
        for (;;) {
            co_await sleep(heartbeat_interval());
            bool resubscribed = false;
            {
                std::lock_guard lock(mu_);
                if (stopping_) {
                    break;
                }
                resubscribed = sub_version_ != joined_version_;
            }
            if (resubscribed) {
                co_await revoke();
                break;
            }
            if ((has_pattern || !leader_counts_.empty()) &&
                std::chrono::steady_clock::now() - last_metadata >= metadata_interval) {
                last_metadata = std::chrono::steady_clock::now();
                if (has_pattern) {
                    const auto now_topics = co_await resolve_topics();
                    if (now_topics != joined_topics_) {
                        co_await revoke();
                        break;
                    }
                }
                bool grew = false;
                for (const auto& [t, n] : leader_counts_) {
                    auto d = co_await topics_.describe(topic_name(t));
                    grew = grew || (d && d->partitions != n);
                }
                if (grew) {
                    co_await revoke();
                    break;
                }
            }
            api::heartbeat_request hb;
            hb.group_id = opts_.group;
            hb.generation_id = generation_;
            hb.member_id = member_id_;
            hb.group_instance_id = opts_.instance_id;
            const auto beat = co_await groups_.heartbeat(std::move(hb));
            if (beat) {
                continue;
            }
            const auto why = beat.error().reason();
            if (why == api::errc::coordinator_loading ||
                why == api::errc::coordinator_not_available || why == api::errc::not_coordinator) {
                continue;
            }
            co_await revoke();
            if (why == api::errc::unknown_member_id || why == api::errc::fenced_instance_id) {
                member_id_.clear();
            }
            break;  // rebalance_in_progress, illegal_generation, ...: rejoin
        }
    }
    bool leave_now = true;
    {
        std::lock_guard lock(mu_);
        leave_now = leave_on_stop_;
    }
    if (in_group_) {
        co_await revoke();
        if (leave_now) {
            co_await leave();
        }
    }
    set_state(state{});
    done_ = true;
    notify_change();
}

}  // namespace sluice::backend::client
