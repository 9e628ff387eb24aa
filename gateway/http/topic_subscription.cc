#include "gateway/http/topic_subscription.h"

#include <algorithm>

namespace sluice::gateway {
namespace api = backend::api;
using clock = std::chrono::steady_clock;

boost::asio::awaitable<std::variant<std::unique_ptr<topic_subscription>, rest::error>>
topic_subscription::open(services svc, spec s, boost::asio::any_io_executor member_executor) {
    if (s.topics.empty()) {
        co_return rest::error{rest::code::bad_request, "topics must name at least one topic"};
    }
    std::vector<partition_key> all;
    for (const auto& t : s.topics) {
        auto d = co_await svc.topics.describe(t);
        if (!d) {
            co_return rest::error{rest::code::topic_not_found,
                                  std::string(rest::topic_not_found_message) + " (" + t.value +
                                      ")"};
        }
        for (std::int32_t p = 0; p < d->partitions; ++p) {
            all.emplace_back(t, partition_id(p));
        }
    }
    std::unique_ptr<topic_subscription> sub(new topic_subscription(svc, std::move(s)));
    if (sub->spec_.group) {
        group_member::options o;
        o.group = *sub->spec_.group;
        o.session_timeout_ms = svc.session_timeout_ms;
        o.client = sub->spec_.client;
        sub->member_ =
            std::make_shared<group_member>(svc.groups, svc.topics, member_executor, std::move(o));
        sub->member_->subscribe(sub->spec_.topics);
        sub->member_->start();
    } else {
        sub->held_ = all;
        auto e = co_await sub->resolve(all, false);
        if (e) {
            co_return *e;
        }
    }
    co_return std::move(sub);
}

topic_subscription::~topic_subscription() { close(); }

void topic_subscription::close() {
    if (member_) {
        member_->stop(true);
    }
}

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::resolve(
    const std::vector<partition_key>& parts, bool use_commits) {
    std::vector<partition_key> missing;
    for (const auto& k : parts) {
        if (positions_.contains(k)) {
            continue;
        }
        if (auto it = spec_.resume.find(k); it != spec_.resume.end()) {
            positions_[k] = it->second;
            continue;
        }
        missing.push_back(k);
    }
    if (missing.empty()) {
        co_return std::nullopt;
    }
    if (use_commits) {
        api::offset_fetch_request req;
        req.group_id = *spec_.group;
        std::map<topic_name, std::vector<partition_id>> by_topic;
        for (const auto& [t, p] : missing) {
            by_topic[t].push_back(p);
        }
        std::vector<api::topic_partition_list> topics;
        for (auto& [t, ps] : by_topic) {
            topics.push_back(api::topic_partition_list{t, std::move(ps)});
        }
        req.topics = std::move(topics);
        std::vector<api::offset_fetch_request> reqs;
        reqs.push_back(std::move(req));
        auto res = co_await svc_.groups.fetch_offsets(std::move(reqs));
        if (!res.empty() && !res[0].error) {
            for (const auto& t : res[0].topics) {
                for (const auto& p : t.partitions) {
                    if (!p.error && p.committed.value >= 0) {
                        positions_[{t.topic, p.partition}] = p.committed.value;
                    }
                }
            }
        }
        std::erase_if(missing, [&](const auto& k) { return positions_.contains(k); });
        if (missing.empty()) {
            co_return std::nullopt;
        }
    }
    // "from" for the rest: earliest, latest, an offset (within the log) or a time.
    std::vector<api::offset_query> queries;
    for (const auto& [t, p] : missing) {
        queries.push_back({t, p, api::offset_spec{api::offset_spec::kind::earliest, -1}});
        queries.push_back({t, p, api::offset_spec{api::offset_spec::kind::latest, -1}});
        if (spec_.from.what == start_position::kind::timestamp) {
            queries.push_back(
                {t, p, api::offset_spec{api::offset_spec::kind::timestamp, spec_.from.value}});
        }
    }
    const std::size_t per = spec_.from.what == start_position::kind::timestamp ? 3 : 2;
    auto found = co_await svc_.records.list_offsets(std::move(queries),
                                                    api::isolation::read_uncommitted);
    for (std::size_t i = 0; i < missing.size() && per * i + per - 1 < found.size(); ++i) {
        for (std::size_t k = 0; k < per; ++k) {
            if (found[per * i + k].error) {
                co_return rest::from_backend(found[per * i + k].error, rest::subject::partition);
            }
        }
        const std::int64_t earliest = found[per * i].off.value;
        const std::int64_t latest = found[per * i + 1].off.value;
        std::int64_t at = latest;
        switch (spec_.from.what) {
            case start_position::kind::earliest: at = earliest; break;
            case start_position::kind::latest: at = latest; break;
            case start_position::kind::offset:
                at = std::clamp(spec_.from.value, earliest, latest);
                break;
            case start_position::kind::timestamp:
                at = found[per * i + 2].off.value >= 0 ? found[per * i + 2].off.value : latest;
                break;
        }
        positions_[missing[i]] = at;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::poll(
    const stream_sink& sink, read_limits limits) {
    const auto deadline = clock::now() + limits.max_wait;
    if (member_) {
        const auto seen = member_->changed().version();
        const auto s = member_->snapshot();
        if (!s.stable || s.partitions.empty()) {
            held_.clear();
            co_await member_->changed().wait(seen, deadline);
            co_return std::nullopt;
        }
        if (s.generation != held_generation_) {
            // A new assignment: partitions this member no longer holds are forgotten; new
            // ones start at the group's commits.
            held_.clear();
            for (const auto& [t, parts] : s.partitions) {
                for (auto p : parts) {
                    held_.emplace_back(t, p);
                }
            }
            std::erase_if(positions_, [&](const auto& kv) {
                return std::find(held_.begin(), held_.end(), kv.first) == held_.end();
            });
            held_generation_ = s.generation;
            auto e = co_await resolve(held_, true);
            if (e) {
                co_return e;
            }
        }
    }
    if (held_.empty()) {
        co_return std::nullopt;
    }
    std::vector<read_position> pos;
    pos.reserve(held_.size());
    for (const auto& k : held_) {
        pos.push_back({k.first, k.second, offset(positions_[k])});
    }
    limits.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline - clock::now(), clock::duration::zero()));
    auto inner = [&](std::size_t i, const protocol::kafka::record_view& r) {
        return sink(pos[i].topic, pos[i].partition, r);
    };
    auto out = co_await read_records(svc_.records, pos, limits, inner);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const partition_key k{pos[i].topic, pos[i].partition};
        if (out[i].error) {
            if (api::reason(out[i].error) == api::errc::offset_out_of_range) {
                // Retention or a truncation moved the log: continue from what is there.
                const auto start = std::max<std::int64_t>(out[i].log_start.value, 0);
                positions_[k] = pos[i].next.value < start
                                    ? start
                                    : std::max<std::int64_t>(out[i].high_watermark.value, 0);
                continue;
            }
            co_return rest::from_backend(out[i].error, rest::subject::partition);
        }
        positions_[k] = out[i].next.value;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::variant<std::map<partition_key, std::int64_t>, rest::error>>
topic_subscription::commit() {
    if (!member_) {
        co_return rest::error{rest::code::illegal_state,
                              "Illegal state: commit needs a subscription with a group"};
    }
    const auto s = member_->snapshot();
    std::map<partition_key, std::int64_t> offsets;
    for (const auto& k : held_) {
        if (auto it = positions_.find(k); it != positions_.end()) {
            offsets[k] = it->second;
        }
    }
    if (offsets.empty() || !s.stable) {
        co_return std::map<partition_key, std::int64_t>{};
    }
    api::offset_commit_request req;
    req.group_id = *spec_.group;
    req.generation_id_or_member_epoch = s.generation;
    req.member_id = s.member_id;
    std::map<topic_name, std::vector<api::commit_partition>> by_topic;
    for (const auto& [k, off] : offsets) {
        api::commit_partition cp;
        cp.partition = k.second;
        cp.committed = offset(off);
        by_topic[k.first].push_back(std::move(cp));
    }
    for (auto& [t, parts] : by_topic) {
        req.topics.push_back(api::commit_topic{t, std::move(parts)});
    }
    auto res = co_await svc_.groups.commit_offsets(std::move(req));
    for (const auto& t : res.topics) {
        for (const auto& p : t.partitions) {
            if (p.error) {
                co_return rest::from_backend(p.error, rest::subject::partition);
            }
        }
    }
    co_return offsets;
}

}  // namespace sluice::gateway
