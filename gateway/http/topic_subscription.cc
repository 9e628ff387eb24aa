#include "gateway/http/topic_subscription.h"

#include <algorithm>

namespace sluice::gateway {
namespace api = backend::api;
using clock = std::chrono::steady_clock;

namespace {

rest::error subscription_topic_gone(const topic_name& t) {
    return rest::error{rest::code::topic_not_found,
                       std::string(rest::topic_not_found_message) + " (" + t.value + ")"};
}

}  // namespace

boost::asio::awaitable<std::variant<std::unique_ptr<topic_subscription>, rest::error>>
topic_subscription::open(services svc, spec s, boost::asio::any_io_executor consumer_executor) {
    if (s.topics.empty()) {
        co_return rest::error{rest::code::bad_request, "topics must name at least one topic"};
    }
    std::vector<api::topic_partition> all;
    for (const auto& t : s.topics) {
        auto d = co_await svc.client.admin().describe_topic(t);
        if (!d) {
            if (d.error().reason() != api::errc::unknown_topic_or_partition) {
                co_return rest::from_backend(d.error());
            }
            co_return subscription_topic_gone(t);
        }
        for (const auto& p : d->partitions) {
            all.push_back(api::topic_partition{t, p.partition});
        }
    }
    api::consumer_options o;
    o.group = s.group;
    o.session_timeout_ms = svc.session_timeout_ms;
    // Where nothing is committed the subscription starts at `from` itself (an offset or a
    // time as well as earliest or latest).
    o.reset = api::offset_reset::none;
    o.client = s.client;
    auto consumer = svc.client.open_consumer(std::move(o), consumer_executor);
    std::unique_ptr<topic_subscription> sub(
        new topic_subscription(std::move(s), consumer, svc.client));
    consumer->on_change([changed = sub->changed_] { changed->notify(); });
    if (sub->spec_.group) {
        consumer->subscribe(sub->spec_.topics);
    } else {
        consumer->assign(all);
        auto e = co_await sub->start_at(all, true);
        if (e) {
            sub->close();
            co_return *e;
        }
    }
    co_return std::move(sub);
}

topic_subscription::~topic_subscription() { close(); }

void topic_subscription::close() { consumer_->close(true); }

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::start_at(
    const std::vector<api::topic_partition>& parts, bool use_resume) {
    std::vector<std::pair<api::topic_partition, offset>> to;
    std::vector<api::topic_partition> others;
    for (const auto& tp : parts) {
        if (auto it = spec_.resume.find({tp.topic, tp.partition});
            use_resume && it != spec_.resume.end()) {
            to.emplace_back(tp, offset(it->second));
        } else {
            others.push_back(tp);
        }
    }
    consumer_->seek(std::move(to));
    if (!others.empty()) {
        auto e = co_await start_from(std::move(others));
        if (e) {
            co_return e;
        }
    }
    for (const auto& [tp, off] : consumer_->positions()) {
        positions_[{tp.topic, tp.partition}] = off.value;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::start_from(
    std::vector<api::topic_partition> parts) {
    // "from" for the rest: earliest, latest, an offset (within the log) or a time.
    using kind = api::offset_spec::kind;
    api::offset_spec first{kind::latest, -1};
    switch (spec_.from.what) {
        case start_position::kind::earliest: first.what = kind::earliest; break;
        case start_position::kind::latest: break;
        case start_position::kind::offset: first.what = kind::earliest; break;
        case start_position::kind::timestamp:
            first = api::offset_spec{kind::timestamp, spec_.from.value};
            break;
    }
    auto done = co_await consumer_->seek_to(parts, first);
    if (!done) {
        co_return rest::from_backend(done.error(), rest::subject::partition);
    }
    if (spec_.from.what == start_position::kind::offset) {
        const auto earliest = consumer_->positions();
        done = co_await consumer_->seek_to(parts, api::offset_spec{kind::latest, -1});
        if (!done) {
            co_return rest::from_backend(done.error(), rest::subject::partition);
        }
        const auto latest = consumer_->positions();
        std::vector<std::pair<api::topic_partition, offset>> clamped;
        for (const auto& tp : parts) {
            const auto lo = earliest.contains(tp) ? earliest.at(tp).value : 0;
            const auto hi = latest.contains(tp) ? latest.at(tp).value : lo;
            clamped.emplace_back(tp, offset(std::clamp(spec_.from.value, lo, std::max(lo, hi))));
        }
        consumer_->seek(std::move(clamped));
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::poll(
    const stream_sink& sink, api::poll_limits limits) {
    const auto deadline = clock::now() + limits.max_wait;
    if (spec_.group) {
        const auto seen = changed_->version();
        const auto s = consumer_->assignment();
        if (s.stable && s.generation != held_generation_) {
            // A topic this member read and holds nothing of now may have been deleted (the
            // group then hands out the partitions of the others only): the subscription ends
            // with 40401 naming it, as one without a group does.
            if (auto gone = co_await topic_deleted_from(s.partitions)) {
                co_return gone;
            }
        }
        if (!s.stable || s.partitions.empty()) {
            if (s.stable) {
                held_generation_ = s.generation;  // looked at (positions kept for a return)
            }
            co_await changed_->wait(seen, deadline);
            co_return std::nullopt;
        }
        if (s.generation != held_generation_) {
            // A new assignment: partitions this member no longer holds are forgotten; those
            // it still holds continue where they were; new ones start at the group's commits,
            // else at `from`.
            std::erase_if(positions_, [&](const auto& kv) {
                return !std::binary_search(s.partitions.begin(), s.partitions.end(),
                                           api::topic_partition{kv.first.first, kv.first.second});
            });
            held_generation_ = s.generation;
            std::vector<std::pair<api::topic_partition, offset>> kept;
            std::vector<api::topic_partition> fresh;
            for (const auto& tp : s.partitions) {
                if (auto it = positions_.find({tp.topic, tp.partition}); it != positions_.end()) {
                    kept.emplace_back(tp, offset(it->second));
                } else if (auto r = spec_.resume.find({tp.topic, tp.partition});
                           r != spec_.resume.end()) {
                    kept.emplace_back(tp, offset(r->second));
                } else {
                    fresh.push_back(tp);
                }
            }
            consumer_->seek(std::move(kept));
            if (!fresh.empty()) {
                auto committed = co_await consumer_->committed(fresh);
                std::vector<std::pair<api::topic_partition, offset>> at;
                if (committed) {
                    for (const auto& c : *committed) {
                        if (c.next.value >= 0) {
                            at.emplace_back(c.tp, c.next);
                        }
                    }
                }
                std::erase_if(fresh, [&](const auto& tp) {
                    return std::any_of(at.begin(), at.end(),
                                       [&](const auto& a) { return a.first == tp; });
                });
                consumer_->seek(std::move(at));
                if (!fresh.empty()) {
                    auto e = co_await start_at(fresh, false);
                    if (e) {
                        co_return e;
                    }
                }
            }
            for (const auto& [tp, off] : consumer_->positions()) {
                positions_[{tp.topic, tp.partition}] = off.value;
            }
        }
    }
    limits.max_wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline - clock::now(), clock::duration::zero()));
    auto out = co_await consumer_->poll(limits, sink);
    if (!out) {
        co_return co_await failure(out.error(), spec_.topics);
    }
    for (const auto& pp : *out) {
        const partition_key k{pp.tp.topic, pp.tp.partition};
        if (pp.error) {
            if (pp.error.reason() == api::errc::offset_out_of_range) {
                const auto known = consumer_->positions();
                auto it = known.find(pp.tp);
                if (it == known.end()) {
                    // Nothing committed (a commit that went away): start at `from`.
                    std::vector<api::topic_partition> one{pp.tp};
                    auto e = co_await start_at(one, false);
                    if (e) {
                        co_return e;
                    }
                    continue;
                }
                // Retention or a truncation moved the log: continue from what is there.
                const auto start = std::max<std::int64_t>(pp.log_start.value, 0);
                const auto to = it->second.value < start
                                    ? start
                                    : std::max<std::int64_t>(pp.high_watermark.value, 0);
                consumer_->seek({{pp.tp, offset(to)}});
                positions_[k] = to;
                continue;
            }
            std::vector<topic_name> its{pp.tp.topic};
            co_return co_await failure(pp.error, std::move(its));
        }
        positions_[k] = pp.next.value;
    }
    co_return std::nullopt;
}

boost::asio::awaitable<std::optional<rest::error>> topic_subscription::topic_deleted_from(
    const std::vector<api::topic_partition>& assigned) {
    std::vector<topic_name> lost;
    for (const auto& [k, pos] : positions_) {
        const bool kept = std::any_of(assigned.begin(), assigned.end(),
                                      [&](const auto& tp) { return tp.topic == k.first; });
        if (!kept && (lost.empty() || lost.back() != k.first)) {
            lost.push_back(k.first);
        }
    }
    for (const auto& t : lost) {
        auto d = co_await client_->admin().describe_topic(t);
        if (!d && d.error().reason() == api::errc::unknown_topic_or_partition) {
            co_return subscription_topic_gone(t);
        }
    }
    co_return std::nullopt;
}

boost::asio::awaitable<rest::error> topic_subscription::failure(const api::backend_error& e,
                                                                std::vector<topic_name> topics) {
    const auto why = e.reason();
    if (why != api::errc::unknown_topic_or_partition && why != api::errc::unknown_topic_id &&
        why != api::errc::not_leader) {
        co_return rest::from_backend(e, rest::subject::partition);  // not about a topic's end
    }
    for (const auto& t : topics) {
        auto d = co_await client_->admin().describe_topic(t);
        if (!d && d.error().reason() == api::errc::unknown_topic_or_partition) {
            co_return subscription_topic_gone(t);
        }
    }
    co_return rest::from_backend(e, rest::subject::partition);
}

boost::asio::awaitable<std::variant<std::map<partition_key, std::int64_t>, rest::error>>
topic_subscription::commit() {
    if (!spec_.group) {
        co_return rest::error{rest::code::illegal_state,
                              "Illegal state: commit needs a subscription with a group"};
    }
    const auto s = consumer_->assignment();
    std::map<partition_key, std::int64_t> offsets;
    for (const auto& [tp, off] : consumer_->positions()) {
        offsets[{tp.topic, tp.partition}] = off.value;
    }
    if (offsets.empty() || !s.stable) {
        co_return std::map<partition_key, std::int64_t>{};
    }
    auto res = co_await consumer_->commit(std::nullopt);
    if (!res) {
        co_return rest::from_backend(res.error(), rest::subject::partition);
    }
    std::map<partition_key, std::int64_t> out;
    for (const auto& c : *res) {
        out[{c.tp.topic, c.tp.partition}] = c.next.value;
    }
    co_return out;
}

}  // namespace sluice::gateway
