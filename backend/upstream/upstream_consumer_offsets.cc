// upstream_consumer: positions (resolution at assignment, seek, seek_to) and commits.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/upstream/upstream_consumer_impl.h"

namespace sluice::backend::upstream {
namespace asio = boost::asio;

namespace {

/// librdkafka's errors of a consumer's group calls in api terms; the local ones librdkafka
/// raises when the member is not (or no longer) part of a generation first.
api::backend_error offsets_error_of(rd_kafka_resp_err_t err, const char* message = nullptr) {
    switch (err) {
    case RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST:
        return api::backend_error(api::make_error_code(api::errc::illegal_generation),
                                  message ? message : rd_kafka_err2str(err));
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
        return api::backend_error(api::make_error_code(api::errc::coordinator_not_available),
                                  message ? message : rd_kafka_err2str(err));
    case RD_KAFKA_RESP_ERR__DESTROY:
        return api::backend_error(api::make_error_code(api::errc::backend_unavailable),
                                  "the consumer is closed");
    default:
        return to_backend_error(err, message);
    }
}

std::int64_t offsets_timestamp_of(const api::offset_spec& spec) {
    using kind = api::offset_spec::kind;
    switch (spec.what) {
    case kind::earliest:
    case kind::earliest_local:
        return RD_KAFKA_OFFSET_BEGINNING;
    case kind::latest:
        return RD_KAFKA_OFFSET_END;
    case kind::max_timestamp:
        return -3;  // KIP-734
    case kind::timestamp:
        return spec.timestamp_ms;
    case kind::latest_tiered:
        return -5;  // KIP-1005; clusters without tiered storage answer -1
    }
    return RD_KAFKA_OFFSET_END;
}

}  // namespace

void upstream_consumer::release_buffer_locked(partition_state& ps) {
    ps.buffered.clear();
    ps.buffered_bytes = 0;
}

void upstream_consumer::hold_and_resolve_locked(const std::vector<api::topic_partition>& parts) {
    std::map<api::topic_partition, partition_state> next;
    std::vector<api::topic_partition> unknown;
    for (const auto& tp : parts) {
        partition_state ps;
        if (auto it = held_.find(tp); it != held_.end()) {
            // Kept across a new manual assignment: its position stays.
            ps.position = it->second.position;
            ps.paused = it->second.paused;
            ps.epoch = it->second.epoch + 1;
        }
        if (auto it = pending_seeks_.find(tp); it != pending_seeks_.end()) {
            ps.position = it->second;
            pending_seeks_.erase(it);
        }
        if (!ps.position) {
            ps.resolving = true;
            unknown.push_back(tp);
        }
        next.emplace(tp, std::move(ps));
    }
    for (auto& [tp, ps] : held_) {
        release_buffer_locked(ps);
    }
    held_ = std::move(next);
    reset_cache_locked();
    const std::uint64_t seq = ++rebalance_seq_;
    if (unknown.empty()) {
        assign_held_locked(true);
        return;
    }
    notify_change_locked();
    asio::co_spawn(ex_, resolve_then_assign(shared_from_this(), seq, std::move(unknown)),
                   asio::detached);
}

api::awaitable<void> upstream_consumer::resolve_then_assign(
    std::shared_ptr<upstream_consumer> self, std::uint64_t seq,
    std::vector<api::topic_partition> parts) {
    std::vector<resolved_position> found;
    if (auto l = self->take_lease()) {
        upstream_consumer* c = self.get();
        auto job = [c, parts] { return c->resolve_blocking(parts); };
        found = co_await consumer_offload(self->pool_, std::move(job));
    } else {
        co_return;
    }
    std::lock_guard lock(self->mu_);
    if (seq != self->rebalance_seq_ || self->closing_ || self->destroy_started_) {
        co_return;  // a newer assignment (or a close) took over
    }
    for (auto& r : found) {
        auto it = self->held_.find(r.tp);
        if (it == self->held_.end()) {
            continue;
        }
        partition_state& ps = it->second;
        ps.resolving = false;
        if (ps.position) {
            continue;  // sought meanwhile
        }
        if (r.error) {
            // Told once by the next poll; librdkafka resolves it itself (the offset stays
            // INVALID in the assignment), e.g. once a topic that is missing appears.
            upstream_log().warn("upstream consumer: position of {}-{}: {}", r.tp.topic.value,
                                r.tp.partition.value, r.error.text());
            ps.error = r.error;
        } else if (r.offset >= 0) {
            ps.position = r.offset;
        } else {
            ps.error = api::backend_error(api::make_error_code(api::errc::offset_out_of_range),
                                          "no committed offset and the reset policy is none");
            ps.sticky = true;
            ps.reported = false;
        }
    }
    self->assign_held_locked(true);
}

std::vector<upstream_consumer::resolved_position> upstream_consumer::resolve_blocking(
    const std::vector<api::topic_partition>& parts) {
    std::vector<resolved_position> out;
    std::vector<api::topic_partition> rest;
    if (copts_.group) {
        partition_list_ptr l;
        const rd_kafka_resp_err_t err = ask_in_slices(
            opts_.request_timeout,
            [&](int ms) {
                l = make_partition_list(parts);
                return rd_kafka_committed(rk_.get(), l.get(), ms);
            },
            [this] { return abandoning_.load(); });
        for (int i = 0; i < l->cnt; ++i) {
            const auto& e = l->elems[i];
            api::topic_partition tp{topic_name(e.topic), partition_id(e.partition)};
            if (err || e.err) {
                out.push_back({tp, -1, offsets_error_of(err ? err : e.err)});
            } else if (e.offset >= 0) {
                out.push_back({tp, e.offset, {}});
            } else {
                rest.push_back(tp);
            }
        }
    } else {
        rest = parts;
    }
    if (rest.empty()) {
        return out;
    }
    if (copts_.reset == api::offset_reset::none) {
        for (auto& tp : rest) {
            out.push_back({tp, -1, {}});
        }
        return out;
    }
    auto found = list_offsets_blocking(rest, copts_.reset == api::offset_reset::earliest
                                                 ? RD_KAFKA_OFFSET_BEGINNING
                                                 : RD_KAFKA_OFFSET_END);
    for (auto& r : found) {
        if (!r.error && r.offset < 0) {
            r.error = api::backend_error(api::make_error_code(api::errc::unknown),
                                         "the cluster gave no offset");
        }
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<upstream_consumer::resolved_position> upstream_consumer::list_offsets_blocking(
    const std::vector<api::topic_partition>& parts, std::int64_t ts) {
    // Asked in slices, given up between two once the consumer is closing: its close (and
    // with it the gateway's stop) waits one slice, not the request timeout.
    partition_list_ptr l;
    const rd_kafka_resp_err_t err = ask_in_slices(
        opts_.request_timeout,
        [&](int ms) {
            l = make_partition_list(parts);
            for (int i = 0; i < l->cnt; ++i) {
                l->elems[i].offset = ts;
            }
            return rd_kafka_offsets_for_times(rk_.get(), l.get(), ms);
        },
        [this] { return abandoning_.load(); });
    std::vector<resolved_position> out;
    for (int i = 0; i < l->cnt; ++i) {
        const auto& e = l->elems[i];
        api::topic_partition tp{topic_name(e.topic), partition_id(e.partition)};
        if (err || e.err) {
            out.push_back({tp, -1, offsets_error_of(err ? err : e.err)});
        } else {
            out.push_back({tp, e.offset, {}});
        }
    }
    return out;
}

void upstream_consumer::assign_held_locked(bool notify) {
    if (!rk_ || destroy_started_) {
        return;
    }
    partition_list_ptr l(rd_kafka_topic_partition_list_new(static_cast<int>(held_.size())));
    partition_list_ptr paused(rd_kafka_topic_partition_list_new(0));
    for (auto& [tp, ps] : held_) {
        release_buffer_locked(ps);
        ++ps.epoch;
        ps.seeking = false;
        ps.resolving = false;
        if (ps.sticky && !ps.position) {
            // Reset none and nothing committed: not fetched until the owner seeks.
            ps.in_rdkafka = false;
            continue;
        }
        auto* e = rd_kafka_topic_partition_list_add(l.get(), tp.topic.value.c_str(),
                                                    tp.partition.value);
        e->offset = ps.position.value_or(RD_KAFKA_OFFSET_INVALID);
        ps.in_rdkafka = true;
        if (ps.paused) {
            // An application pause outlives an assignment in librdkafka.
            rd_kafka_topic_partition_list_add(paused.get(), tp.topic.value.c_str(),
                                              tp.partition.value);
            ps.paused = false;
        }
    }
    if (paused->cnt > 0) {
        rd_kafka_resume_partitions(rk_.get(), paused.get());
    }
    if (rd_kafka_resp_err_t err = rd_kafka_assign(rk_.get(), l.get())) {
        upstream_log().warn("upstream consumer: assign: {}", rd_kafka_err2str(err));
    }
    for (const auto& [tp, ps] : held_) {
        if (ps.in_rdkafka) {
            keep_fetch_queue_locked(tp);
        }
    }
    stable_ = true;
    if (notify) {
        notify_change_locked();
    }
    wake_poll();
}

// --- positions -------------------------------------------------------------------------------

void upstream_consumer::seek(std::vector<std::pair<api::topic_partition, offset>> to) {
    std::lock_guard lock(mu_);
    if (closing_) {
        return;
    }
    std::vector<seek_item> seeks;
    std::vector<api::topic_partition> restart;
    for (const auto& [tp, off] : to) {
        auto it = held_.find(tp);
        if (it == held_.end()) {
            pending_seeks_[tp] = off.value;  // applied when it is assigned
            continue;
        }
        partition_state& ps = it->second;
        ps.position = off.value;
        ps.resolving = false;
        release_buffer_locked(ps);
        ps.error = {};
        ++ps.epoch;
        if (ps.sticky) {
            ps.sticky = false;
            ps.seeking = false;
            restart.push_back(tp);
        } else if (ps.in_rdkafka) {
            ps.seeking = true;
            seeks.emplace_back(tp, ps.epoch);
        }
        // Otherwise its position is being resolved: the assignment takes this one.
    }
    if (!restart.empty() && !revoking_) {
        restart_locked(restart);
    }
    if (!seeks.empty()) {
        asio::co_spawn(ex_, confirm_seeks(shared_from_this(), std::move(seeks)), asio::detached);
    }
    wake_poll();
}

api::awaitable<void> upstream_consumer::confirm_seeks(std::shared_ptr<upstream_consumer> self,
                                                      std::vector<seek_item> items) {
    // rd_kafka_seek answers _STATE while a partition's fetcher has not started yet (its
    // assignment waits for an earlier one to stop): tried again shortly, a few times, then
    // the partitions are restarted by an assignment.
    constexpr int attempts = 50;
    constexpr std::chrono::milliseconds pause{20};
    asio::steady_timer timer(self->ex_);
    for (int i = 0; i < attempts && !items.empty(); ++i) {
        if (i > 0) {
            timer.expires_after(pause);
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        auto l = self->take_lease();
        if (!l) {
            co_return;
        }
        upstream_consumer* c = self.get();
        auto job = [c, items] { return c->seek_blocking(items); };
        items = co_await consumer_offload(self->pool_, std::move(job));
    }
    if (items.empty()) {
        co_return;
    }
    std::lock_guard lock(self->mu_);
    std::vector<api::topic_partition> restart;
    for (const auto& [tp, epoch] : items) {
        auto it = self->held_.find(tp);
        if (it != self->held_.end() && it->second.epoch == epoch) {
            it->second.seeking = false;
            restart.push_back(tp);
        }
    }
    if (!restart.empty() && !self->revoking_ && !self->closing_) {
        upstream_log().warn("upstream consumer: seek not taken by librdkafka; reassigning");
        self->restart_locked(restart);
    }
}

std::vector<upstream_consumer::seek_item> upstream_consumer::seek_blocking(
    const std::vector<seek_item>& items) {
    // Under the lock: no drain runs between dropping what the buffer holds and the seek (after
    // which librdkafka hands out nothing fetched before it).
    std::lock_guard lock(mu_);
    std::vector<seek_item> again;
    if (!rk_ || destroy_started_ || closing_) {
        return again;
    }
    partition_list_ptr l(rd_kafka_topic_partition_list_new(static_cast<int>(items.size())));
    for (const auto& [tp, epoch] : items) {
        auto it = held_.find(tp);
        if (it == held_.end() || it->second.epoch != epoch || !it->second.in_rdkafka ||
            !it->second.position) {
            continue;  // superseded
        }
        release_buffer_locked(it->second);
        auto* e = rd_kafka_topic_partition_list_add(l.get(), tp.topic.value.c_str(),
                                                    tp.partition.value);
        e->offset = *it->second.position;
    }
    if (l->cnt == 0) {
        return again;
    }
    if (rd_kafka_error_t* e = rd_kafka_seek_partitions(
            rk_.get(), l.get(), static_cast<int>(opts_.request_timeout.count()))) {
        upstream_log().warn("upstream consumer: seek: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    partition_list_ptr resume;
    for (int i = 0; i < l->cnt; ++i) {
        const auto& e = l->elems[i];
        api::topic_partition tp{topic_name(e.topic), partition_id(e.partition)};
        auto it = held_.find(tp);
        if (it == held_.end()) {
            continue;
        }
        if (e.err == RD_KAFKA_RESP_ERR__STATE || e.err == RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS) {
            again.emplace_back(tp, it->second.epoch);
            continue;
        }
        if (e.err) {
            upstream_log().warn("upstream consumer: seek {}-{}: {}", e.topic, e.partition,
                                rd_kafka_err2str(e.err));
        }
        it->second.seeking = false;
        if (it->second.paused) {
            // Its buffer is empty now: fetching goes on from the sought offset.
            if (!resume) {
                resume.reset(rd_kafka_topic_partition_list_new(1));
            }
            rd_kafka_topic_partition_list_add(resume.get(), e.topic, e.partition);
            it->second.paused = false;
        }
    }
    if (resume) {
        rd_kafka_resume_partitions(rk_.get(), resume.get());
    }
    wake_poll();
    return again;
}

void upstream_consumer::restart_locked(const std::vector<api::topic_partition>& parts) {
    if (!rk_ || destroy_started_) {
        return;
    }
    if (!group_assigned_) {
        // Without group management (or before it ever joined) librdkafka takes incremental
        // changes: only these partitions restart.
        partition_list_ptr l = make_partition_list(parts);
        std::vector<api::topic_partition> stopped;
        for (const auto& tp : parts) {
            if (auto it = held_.find(tp); it != held_.end() && it->second.in_rdkafka) {
                stopped.push_back(tp);
            }
        }
        rd_kafka_error_t* err = nullptr;
        if (!stopped.empty()) {
            partition_list_ptr gone = make_partition_list(stopped);
            err = rd_kafka_incremental_unassign(rk_.get(), gone.get());
        }
        if (!err) {
            for (int i = 0; i < l->cnt; ++i) {
                auto& e = l->elems[i];
                auto it = held_.find({topic_name(e.topic), partition_id(e.partition)});
                e.offset = it != held_.end() && it->second.position ? *it->second.position
                                                                     : RD_KAFKA_OFFSET_INVALID;
            }
            err = rd_kafka_incremental_assign(rk_.get(), l.get());
        }
        if (!err) {
            for (const auto& tp : parts) {
                if (auto it = held_.find(tp); it != held_.end()) {
                    release_buffer_locked(it->second);
                    it->second.in_rdkafka = true;
                    it->second.seeking = false;
                    ++it->second.epoch;
                    keep_fetch_queue_locked(tp);
                }
            }
            return;
        }
        // An eager group's member takes whole assignments only.
        rd_kafka_error_destroy(err);
    }
    assign_held_locked(false);
}

api::awaitable<api::backend_result<void>> upstream_consumer::seek_to(
    std::vector<api::topic_partition> parts, api::offset_spec spec) {
    if (parts.empty()) {
        co_return api::backend_result<void>{};
    }
    const std::int64_t ts = offsets_timestamp_of(spec);
    std::vector<resolved_position> found;
    {
        auto l = take_lease();
        if (!l) {
            co_return api::backend_failure(api::make_error_code(api::errc::backend_unavailable),
                                           "the consumer is closed");
        }
        auto job = [this, parts, ts] {
            auto first = list_offsets_blocking(parts, ts);
            if (ts >= 0 || ts == -3) {
                // No record at or after the timestamp: the end of the log (as Kafka's
                // consumers do with an empty offsetsForTimes answer).
                std::vector<api::topic_partition> past;
                for (const auto& r : first) {
                    if (!r.error && r.offset < 0) {
                        past.push_back(r.tp);
                    }
                }
                if (!past.empty()) {
                    auto ends = list_offsets_blocking(past, RD_KAFKA_OFFSET_END);
                    for (auto& e : ends) {
                        for (auto& r : first) {
                            if (r.tp == e.tp) {
                                r = e;
                            }
                        }
                    }
                }
            }
            return first;
        };
        found = co_await consumer_offload(pool_, std::move(job));
    }
    std::vector<std::pair<api::topic_partition, offset>> to;
    for (const auto& r : found) {
        if (r.error) {
            co_return api::backend_failure(r.error);
        }
        to.emplace_back(r.tp, offset(std::max<std::int64_t>(r.offset, 0)));
    }
    seek(std::move(to));
    co_return api::backend_result<void>{};
}

std::map<api::topic_partition, offset> upstream_consumer::positions() const {
    std::lock_guard lock(mu_);
    std::map<api::topic_partition, offset> out;
    for (const auto& [tp, ps] : held_) {
        if (ps.position) {
            out.emplace(tp, offset(*ps.position));
        }
    }
    return out;
}

// --- commits ---------------------------------------------------------------------------------

api::awaitable<api::backend_result<std::vector<api::offset_commit>>> upstream_consumer::commit(
    std::optional<std::vector<api::offset_commit>> offsets) {
    if (!copts_.group) {
        co_return api::backend_failure(api::make_error_code(api::errc::invalid_request),
                                       "a consumer without a group cannot commit");
    }
    std::vector<api::offset_commit> what;
    if (offsets) {
        what = std::move(*offsets);
    } else {
        std::lock_guard lock(mu_);
        for (const auto& [tp, ps] : held_) {
            if (ps.position) {
                what.push_back({tp, offset(*ps.position), std::nullopt});
            }
        }
    }
    if (what.empty()) {
        co_return what;
    }
    auto l = take_lease();
    if (!l) {
        co_return api::backend_failure(api::make_error_code(api::errc::backend_unavailable),
                                       "the consumer is closed");
    }
    partition_list_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(what.size())));
    for (const auto& c : what) {
        auto* e = rd_kafka_topic_partition_list_add(list.get(), c.tp.topic.value.c_str(),
                                                    c.tp.partition.value);
        e->offset = c.next.value;
        if (c.metadata) {
            // librdkafka frees it with the list.
            e->metadata = std::malloc(c.metadata->size() + 1);
            std::memcpy(e->metadata, c.metadata->data(), c.metadata->size());
            e->metadata_size = c.metadata->size();
        }
    }
    rd_kafka_t* rk = rk_.get();
    const int timeout = static_cast<int>(opts_.request_timeout.count());
    rd_kafka_topic_partition_list_t* to_commit = list.get();
    auto job = [rk, to_commit, timeout] {
        // Asynchronous commit onto a queue of its own, awaited with the deadline: a
        // synchronous rd_kafka_commit has none.
        rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
        api::backend_error out;
        if (rd_kafka_resp_err_t e = rd_kafka_commit_queue(rk, to_commit, q, nullptr, nullptr)) {
            out = offsets_error_of(e);
        } else if (rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout)) {
            if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_OFFSET_COMMIT) {
                if (rd_kafka_resp_err_t e = rd_kafka_event_error(ev)) {
                    out = offsets_error_of(e, rd_kafka_event_error_string(ev));
                } else if (const auto* parts = rd_kafka_event_topic_partition_list(ev)) {
                    for (int i = 0; i < parts->cnt && !out; ++i) {
                        if (parts->elems[i].err) {
                            out = offsets_error_of(parts->elems[i].err);
                        }
                    }
                }
            }
            rd_kafka_event_destroy(ev);
        } else {
            out = api::backend_error(api::make_error_code(api::errc::request_timed_out),
                                     "the commit was not answered in time");
        }
        rd_kafka_queue_destroy(q);
        return out;
    };
    api::backend_error err = co_await consumer_offload(pool_, std::move(job));
    if (err) {
        co_return api::backend_failure(std::move(err));
    }
    co_return what;
}

api::awaitable<api::backend_result<std::vector<api::committed_offset>>>
upstream_consumer::committed(std::vector<api::topic_partition> parts) {
    if (!copts_.group) {
        co_return api::backend_failure(api::make_error_code(api::errc::invalid_request),
                                       "a consumer without a group has no commits");
    }
    if (parts.empty()) {
        std::lock_guard lock(mu_);
        for (const auto& [tp, ps] : held_) {
            parts.push_back(tp);
        }
    }
    std::vector<api::committed_offset> out;
    if (parts.empty()) {
        co_return out;
    }
    auto l = take_lease();
    if (!l) {
        co_return api::backend_failure(api::make_error_code(api::errc::backend_unavailable),
                                       "the consumer is closed");
    }
    partition_list_ptr list = make_partition_list(parts);
    rd_kafka_t* rk = rk_.get();
    const auto timeout = opts_.request_timeout;
    rd_kafka_topic_partition_list_t* to_read = list.get();
    auto job = [this, rk, to_read, timeout] {
        return ask_in_slices(
            timeout, [&](int ms) { return rd_kafka_committed(rk, to_read, ms); },
            [this] { return abandoning_.load(); });
    };
    rd_kafka_resp_err_t err = co_await consumer_offload(pool_, std::move(job));
    if (err) {
        co_return api::backend_failure(offsets_error_of(err));
    }
    for (int i = 0; i < list->cnt; ++i) {
        const auto& e = list->elems[i];
        if (e.err) {
            co_return api::backend_failure(offsets_error_of(e.err));
        }
        api::committed_offset c;
        c.tp = {topic_name(e.topic), partition_id(e.partition)};
        c.next = offset(e.offset >= 0 ? e.offset : -1);
        if (e.metadata && e.metadata_size > 0) {
            c.metadata.emplace(static_cast<const char*>(e.metadata), e.metadata_size);
        }
        out.push_back(std::move(c));
    }
    co_return out;
}

}  // namespace sluice::backend::upstream
