// queue_service: sending, receiving (long polls, redeliveries, dead-letter moves), deleting
// and changing the visibility of messages.
#include <algorithm>
#include <set>

#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

#include "backend/api/records_memory.h"
#include "backend/logger.h"
#include "backend/queue/queue_append.h"
#include "backend/queue/queue_errors.h"
#include "backend/queue/queue_service.h"
#include "backend/queue/send_checks.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
using api::backend_error;
using api::errc;

namespace {

/// A steady-clock time point `wall_ms - now_wall` from now.
std::chrono::steady_clock::time_point steady_at(std::int64_t wall_ms, std::int64_t now_wall) {
    const auto ahead = std::chrono::milliseconds(std::max<std::int64_t>(0, wall_ms - now_wall));
    return std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(ahead, std::chrono::hours(24));
}

/// A produce error after which the record is certainly not in the topic (refused before it
/// was stored); any other (a timeout, the cluster gone) may have stored it.
bool definitely_not_stored(errc why) {
    switch (why) {
        case errc::message_too_large:
        case errc::record_list_too_large:
        case errc::corrupt_message:
        case errc::invalid_record:
        case errc::unknown_topic_or_partition:
        case errc::internal_topic:
            return true;
        default:
            return false;
    }
}

/// Bytes one look for an unknown send reads per fetch.
constexpr std::int32_t find_sent_fetch_bytes = 1 << 20;

void keep_latest(std::optional<state_log::position>& pos, const state_log::position& p) {
    if (p.end > 0 && (!pos || p.end > pos->end)) {
        pos = p;
    }
}

}  // namespace

std::optional<receipt> queue_service::verify_handle(const queue_handle& q,
                                                    const std::string& handle) const {
    if (!signer_) {
        return std::nullopt;
    }
    auto r = signer_->verify(handle);
    if (!r || r->queue_id != q.meta.queue_id) {
        return std::nullopt;
    }
    return r;
}

api::received_message queue_service::to_received(const queue_handle& q, const taken_message& t,
                                                 const stored_message& m) const {
    api::received_message r;
    r.message_id = message_id(q.meta.queue_id, t.ref.partition, t.ref.offset);
    r.receipt_handle =
        signer_->issue({q.meta.queue_id, t.ref.partition, t.ref.offset, t.receive_count});
    r.body = m.body;
    r.attributes = m.attributes;
    r.sent_timestamp_ms = m.sent_ms;
    r.receive_count = t.receive_count;
    r.first_receive_timestamp_ms = t.first_receive_ms;
    r.sender_id = settings_.sender_id;
    r.group_id = m.group_id;
    r.trace_header = m.trace_header;
    r.dead_letter_source_arn = m.dead_letter_source_arn;
    if (q.state.config().fifo) {
        r.deduplication_id = m.deduplication_id;
        r.sequence_number = sequence_number(t.ref.partition, t.ref.offset);
    }
    return r;
}

// --- send -----------------------------------------------------------------------------------

api::awaitable<api::backend_result<std::vector<api::sent_message>>> queue_service::send_messages(
    api::queue_name name, std::vector<api::outgoing_message> messages) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    const auto ex = co_await asio::this_coro::executor;
    std::vector<api::sent_message> out(messages.size());
    std::vector<prepared> prep(messages.size());
    std::vector<bool> duplicate(messages.size(), false);
    queue_config config;
    std::int32_t partitions = 1;
    const std::int64_t t = now();
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        config = q->state.config();
        partitions = q->state.partitions();
    }
    for (std::size_t i = 0; i < messages.size(); ++i) {
        prep[i] = prepare(config, messages[i], t);
        out[i].error = prep[i].error;
    }
    // FIFO deduplication: a duplicate within the window answers the original; a concurrent
    // send of the same id (still pending) is waited for, a bounded number of times; an id whose
    // last send's outcome is unknown is looked for in the topic first (lookups).
    struct unknown_send {
        std::size_t index;
        std::int32_t partition;
        std::int64_t from;
        std::int64_t expires_ms;
    };
    std::vector<unknown_send> lookups;
    // For a message whose earlier send was looked for and not found: where that one could
    // have landed (kept should this send fail too).
    std::vector<std::optional<std::int64_t>> earlier_from(messages.size());
    if (config.fifo) {
        for (int round = 0;; ++round) {
            std::shared_ptr<wakeup> parked;
            {
                std::lock_guard lock(q->mu);
                while (!q->dedup_expiry.empty() && q->dedup_expiry.front().first <= t) {
                    auto it = q->dedup.find(q->dedup_expiry.front().second);
                    if (it != q->dedup.end() && !it->second.pending && it->second.expires_ms <= t) {
                        q->dedup.erase(it);
                    }
                    q->dedup_expiry.pop_front();
                }
                std::set<std::string> in_this_call;
                for (std::size_t i = 0; i < messages.size(); ++i) {
                    if (out[i].error.code || duplicate[i] || !out[i].message_id.empty()) {
                        continue;
                    }
                    const auto& key = prep[i].dedup_key;
                    auto it = q->dedup.find(key);
                    if (it != q->dedup.end() && it->second.pending && !in_this_call.contains(key)) {
                        if (round < 20) {
                            parked = std::make_shared<wakeup>(ex);
                            break;
                        }
                        // Still under way after a second (a slow cluster): sending it too
                        // could store it twice.
                        out[i].error = {make_error_code(errc::backend_unavailable),
                                        "A send with this MessageDeduplicationId is in progress: "
                                        "try again."};
                        continue;
                    } else if (it != q->dedup.end() && !it->second.pending &&
                               !it->second.unknown && it->second.expires_ms > t) {
                        duplicate[i] = true;
                        out[i].message_id = message_id(q->meta.queue_id, it->second.ref.partition,
                                                       it->second.ref.offset);
                        out[i].sequence_number =
                            sequence_number(it->second.ref.partition, it->second.ref.offset);
                        continue;
                    }
                    if (in_this_call.contains(key)) {
                        duplicate[i] = true;  // resolved below, once the first one is sent
                        continue;
                    }
                    in_this_call.insert(key);
                }
                if (parked) {
                    q->senders.park(parked);
                } else {
                    for (std::size_t i = 0; i < messages.size(); ++i) {
                        if (!out[i].error.code && !duplicate[i]) {
                            auto& e = q->dedup[prep[i].dedup_key];
                            if (e.unknown && !e.pending && e.expires_ms > t) {
                                lookups.push_back({i, e.ref.partition, e.from, e.expires_ms});
                            }
                            e.pending = true;
                            e.unknown = false;
                        }
                    }
                }
            }
            if (!parked) {
                break;
            }
            co_await parked->wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
        }
    }
    // A send whose produce failed may have stored its record: its id's next send looks for it
    // from where it could have landed, answers it when there, sends only when it is not.
    for (const auto& l : lookups) {
        const std::string& key = prep[l.index].dedup_key;
        const sent_lookup found = co_await find_sent(q, key, l.partition, l.from);
        std::lock_guard lock(q->mu);
        auto& e = q->dedup[key];
        switch (found.what) {
            case sent_lookup::outcome::found:
                duplicate[l.index] = true;
                out[l.index].message_id =
                    message_id(q->meta.queue_id, found.ref.partition, found.ref.offset);
                out[l.index].sequence_number =
                    sequence_number(found.ref.partition, found.ref.offset);
                e = dedup_entry{found.ref, l.expires_ms, false};
                q->dedup_expiry.emplace_back(l.expires_ms, key);
                queue_log().info("queue {}: a send whose outcome was unknown was stored at "
                                 "partition {} offset {}: its retry is answered with it",
                                 q->meta.name, found.ref.partition, found.ref.offset);
                break;
            case sent_lookup::outcome::absent:
                earlier_from[l.index] = l.from;
                break;  // sent below (the entry stays pending)
            case sent_lookup::outcome::unreadable:
                out[l.index].error = {
                    make_error_code(errc::backend_unavailable),
                    "An earlier send with this MessageDeduplicationId failed, and whether it "
                    "was stored cannot be read now: try again."};
                e = dedup_entry{{l.partition, 0}, l.expires_ms, false, true, l.from};
                q->dedup_expiry.emplace_back(l.expires_ms, key);
                break;
        }
        q->senders.wake_all();
    }

    std::vector<append_item> items;
    std::vector<std::size_t> item_of;
    std::vector<std::int64_t> floors;  // where each item's record can land at the earliest
    {
        std::lock_guard lock(q->mu);
        for (std::size_t i = 0; i < messages.size(); ++i) {
            if (out[i].error.code || duplicate[i]) {
                continue;
            }
            append_item it;
            it.body = &messages[i].body;
            it.attributes = &messages[i].attributes;
            it.fields.timestamp_ms = t;
            it.fields.visible_from_ms = prep[i].visible_from_ms;
            it.fields.group_id = &messages[i].group_id;
            it.fields.deduplication_id = &messages[i].deduplication_id;
            it.fields.trace_header = &prep[i].trace;
            it.partition = partition_for(messages[i].group_id, partitions, q->next_partition);
            items.push_back(it);
            item_of.push_back(i);
            floors.push_back(q->state.append_floor(it.partition));
        }
    }
    std::vector<result<std::int64_t>> offsets;
    if (!items.empty()) {
        offsets = co_await append_messages(records_, producer_, name.value, items);
    }
    {
        std::lock_guard lock(q->mu);
        for (std::size_t k = 0; k < items.size(); ++k) {
            const std::size_t i = item_of[k];
            const auto& off = offsets[k];
            if (!off) {
                const auto why = api::reason(off.error());
                out[i].error = not_stored(off.error());
                if (config.fifo) {
                    if (definitely_not_stored(why)) {
                        q->dedup.erase(prep[i].dedup_key);
                    } else {
                        // The record may be in the topic (a timeout, a cluster gone while the
                        // write was in flight): the id is kept as unknown for its window.
                        const std::int64_t expires = t + settings_.deduplication_window_ms;
                        const std::int64_t from =
                            std::min(floors[k], earlier_from[i].value_or(floors[k]));
                        q->dedup[prep[i].dedup_key] =
                            dedup_entry{{items[k].partition, 0}, expires, false, true, from};
                        q->dedup_expiry.emplace_back(expires, prep[i].dedup_key);
                    }
                }
                continue;
            }
            const message_ref ref{items[k].partition, *off};
            out[i].message_id = message_id(q->meta.queue_id, ref.partition, ref.offset);
            if (config.fifo) {
                out[i].sequence_number = sequence_number(ref.partition, ref.offset);
                const std::int64_t expires = t + settings_.deduplication_window_ms;
                q->dedup[prep[i].dedup_key] = dedup_entry{ref, expires, false};
                q->dedup_expiry.emplace_back(expires, prep[i].dedup_key);
            }
        }
        // Duplicates within this call take the id their first copy got.
        for (std::size_t i = 0; i < messages.size(); ++i) {
            if (duplicate[i] && out[i].message_id.empty()) {
                auto it = q->dedup.find(prep[i].dedup_key);
                if (it != q->dedup.end() && !it->second.pending && !it->second.unknown) {
                    out[i].message_id =
                        message_id(q->meta.queue_id, it->second.ref.partition, it->second.ref.offset);
                    out[i].sequence_number =
                        sequence_number(it->second.ref.partition, it->second.ref.offset);
                } else {
                    out[i].error = {make_error_code(errc::storage_error),
                                    "The message could not be stored."};
                }
            }
        }
        if (config.fifo) {
            q->senders.wake_all();  // concurrent sends of the same ids may go on
        }
    }
    co_return out;
}

api::awaitable<queue_service::sent_lookup> queue_service::find_sent(handle_ptr q, std::string key,
                                                                   std::int32_t partition,
                                                                   std::int64_t from) {
    sent_lookup out;  // unreadable until the read reached the end
    queue_config config;
    {
        std::lock_guard lock(q->mu);
        config = q->state.config();
    }
    const topic_name topic(q->meta.name);
    std::vector<api::offset_query> query{
        {topic, partition_id(partition), {api::offset_spec::kind::latest, -1}}};
    auto ends = co_await records_.list_offsets(std::move(query), api::isolation::read_committed);
    if (ends.size() != 1 || ends[0].error) {
        co_return out;
    }
    const std::int64_t end = ends[0].off.value;
    std::int64_t pos = from;
    while (pos < end) {
        api::fetch_request req;
        req.topics.push_back(
            {topic, {}, {{partition_id(partition), offset(pos), find_sent_fetch_bytes}}});
        req.isolation = api::isolation::read_committed;
        auto got = co_await records_.fetch(std::move(req));
        if (got.topics.empty() || got.topics[0].partitions.empty()) {
            co_return out;
        }
        const auto& part = got.topics[0].partitions[0];
        if (part.error) {
            if (api::reason(part.error) == errc::offset_out_of_range &&
                part.log_start_offset.value > pos) {
                pos = part.log_start_offset.value;  // below the log start: gone (retention)
                continue;
            }
            co_return out;
        }
        if (part.records.size() == 0) {
            co_return out;  // nothing came back in time below the end
        }
        auto bytes = api::read_records_into_memory(part.records);
        if (!bytes) {
            co_return out;
        }
        std::optional<std::int64_t> hit;
        const std::int64_t next =
            decode_fetched(bytes->view(), part.aborted, [&](std::int64_t off, stored_message m) {
                if (!hit && off >= pos && m.deduplication_id &&
                    deduplication_key(config, m) == key) {
                    hit = off;
                }
            });
        if (hit) {
            out.what = sent_lookup::outcome::found;
            out.ref = {partition, *hit};
            co_return out;
        }
        if (next <= pos) {
            co_return out;
        }
        pos = next;
    }
    out.what = sent_lookup::outcome::absent;
    co_return out;
}

// --- receive --------------------------------------------------------------------------------

api::awaitable<queue_service::read_outcome> queue_service::read_messages(
    handle_ptr q, std::vector<message_ref> refs) {
    read_outcome out;
    std::sort(refs.begin(), refs.end());
    const std::set<message_ref> wanted(refs.begin(), refs.end());
    for (const auto& ref : refs) {
        if (out.found.contains(ref) || out.gone.contains(ref)) {
            continue;
        }
        api::fetch_request req;
        api::fetch_topic ft;
        ft.topic = topic_name(q->meta.name);
        ft.partitions.push_back({partition_id(ref.partition), offset(ref.offset), 1});
        req.topics.push_back(std::move(ft));
        req.isolation = api::isolation::read_committed;
        auto got = co_await records_.fetch(std::move(req));
        if (got.topics.empty() || got.topics[0].partitions.empty()) {
            continue;
        }
        const auto& part = got.topics[0].partitions[0];
        if (part.error) {
            // Only a log that starts past it says the record is gone; any other error (the
            // cluster restarting, a timeout) says nothing about it.
            if (api::reason(part.error) == errc::offset_out_of_range) {
                out.gone.insert(ref);
            }
            continue;
        }
        if (part.log_start_offset.value > ref.offset) {
            out.gone.insert(ref);  // retention or DeleteRecords
            continue;
        }
        if (part.records.size() == 0) {
            continue;  // nothing came back in time: not read, not gone
        }
        auto bytes = api::read_records_into_memory(part.records);
        if (!bytes) {
            continue;
        }
        const std::int64_t end =
            decode_fetched(bytes->view(), part.aborted, [&](std::int64_t off, stored_message m) {
                const message_ref r{ref.partition, off};
                if (wanted.contains(r)) {
                    out.found[r] = std::make_shared<const stored_message>(std::move(m));
                }
            });
        if (end > ref.offset && !out.found.contains(ref)) {
            out.gone.insert(ref);  // the log went past it and holds no message there
        }
    }
    co_return out;
}

api::awaitable<void> queue_service::dead_letter(handle_ptr q, std::vector<taken_message> moves,
                                                std::optional<state_log::position>& pos) {
    std::string dlq_name;
    {
        std::lock_guard lock(q->mu);
        if (!q->state.config().redrive) {
            co_return;
        }
        dlq_name = q->state.config().redrive->dead_letter_queue;
    }
    handle_ptr dlq = find(dlq_name);
    if (!dlq) {
        queue_log().warn("queue {}: {} messages wait for their dead-letter queue {}, which does "
                         "not exist",
                         q->meta.name, moves.size(), dlq_name);
        co_return;
    }
    std::int32_t partitions = 1;
    bool fifo = false;
    {
        std::lock_guard lock(dlq->mu);
        partitions = dlq->state.partitions();
        fifo = dlq->state.config().fifo;
    }
    const std::optional<std::string> source = settings_.arns.arn(q->meta.name);
    std::vector<append_item> items;
    for (const auto& m : moves) {
        append_item it;
        it.body = &m.body->body;
        it.attributes = &m.body->attributes;
        it.fields.timestamp_ms = m.body->sent_ms;  // retention counts from the first send
        it.fields.group_id = &m.body->group_id;
        it.fields.deduplication_id = fifo ? &m.body->deduplication_id : nullptr;
        it.fields.trace_header = &m.body->trace_header;
        it.fields.dead_letter_source_arn = &source;
        std::uint32_t rr = 0;
        it.partition = partition_for(m.body->group_id, partitions, rr);
        items.push_back(it);
    }
    auto offsets = co_await append_messages(records_, producer_, dlq_name, items);
    std::lock_guard lock(q->mu);
    change_list changes;
    std::size_t moved = 0;
    for (std::size_t k = 0; k < moves.size(); ++k) {
        if (offsets[k]) {
            q->state.dead_lettered(moves[k].ref, changes);
            ++moved;
        }
    }
    if (auto p = append_locked(*q, changes)) {
        keep_latest(pos, *p);
    }
    queue_log().debug("queue {}: {} messages moved to the dead-letter queue {}", q->meta.name,
                      moved, dlq_name);
}

api::awaitable<api::backend_result<std::vector<api::received_message>>>
queue_service::receive_messages(api::receive_request req) {
    if (req.max_messages < 1 || req.max_messages > 10) {
        co_return std::unexpected(invalid(fmt::format(
            "Value {} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and "
            "10, if provided.",
            req.max_messages)));
    }
    if (req.visibility_timeout &&
        (req.visibility_timeout->count() < 0 || req.visibility_timeout->count() > max_visibility_timeout_s)) {
        co_return std::unexpected(invalid(fmt::format(
            "Value {} for parameter VisibilityTimeout is invalid. Reason: must be between 0 and "
            "43200.",
            req.visibility_timeout->count())));
    }
    if (req.wait && (req.wait->count() < 0 || req.wait->count() > max_wait_s)) {
        co_return std::unexpected(invalid(fmt::format(
            "Value {} for parameter WaitTimeSeconds is invalid. Reason: must be >= 0 and <= 20, "
            "if provided.",
            req.wait->count())));
    }
    auto found = co_await find_or_adopt(req.queue.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    const auto ex = co_await asio::this_coro::executor;
    std::int64_t visibility_ms = 0;
    std::chrono::steady_clock::time_point deadline;
    {
        std::lock_guard lock(q->mu);
        const auto& c = q->state.config();
        visibility_ms = (req.visibility_timeout ? req.visibility_timeout->count() : c.visibility_timeout_s) * 1000;
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::seconds(req.wait ? req.wait->count() : c.receive_wait_s);
    }
    select_result sel;
    std::optional<state_log::position> pos;
    // Answered before its records are stored: covered by the stored receive leases.
    bool leased = false;
    change_list leases;
    for (;;) {
        std::shared_ptr<wakeup> parked;
        std::chrono::steady_clock::time_point wake_at = deadline;
        {
            std::lock_guard lock(q->mu);
            if (q->deleted) {
                co_return std::unexpected(no_queue());
            }
            change_list changes;
            const std::int64_t t = now();
            sel = q->state.select(req.max_messages, visibility_ms, t, req.attempt_id, changes);
            if (sel.over_limit) {
                co_return std::unexpected(backend_error{
                    make_error_code(errc::over_limit),
                    fmt::format("The queue has {} messages in flight, the most it may have.",
                                settings_.limits.max_in_flight)});
            }
            auto p = append_locked(*q, changes);
            if (!p) {
                co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                                      p.error().message()});
            }
            keep_latest(pos, *p);
            after_change(*q, 0);
            const auto& cfg = q->state.config();
            if (!sel.messages.empty() && settings_.leased_receives && !cfg.fifo && !cfg.redrive) {
                leased = q->state.covered(sel.messages, t + visibility_ms, settings_.lease_ahead,
                                          settings_.lease_slack_ms, leases);
                if (auto lp = append_locked(*q, leases); !lp) {
                    leased = false;
                    leases.clear();
                } else {
                    keep_latest(pos, *lp);
                }
            }
            if (sel.messages.empty() && !stopping_ && std::chrono::steady_clock::now() < deadline) {
                parked = std::make_shared<wakeup>(ex);
                q->receivers.prune();
                q->receivers.park(parked);
                const std::int64_t due = q->state.next_due();
                q->armed_due = due;
                if (due != std::numeric_limits<std::int64_t>::max()) {
                    wake_at = std::min(deadline, steady_at(due, t));
                }
            }
        }
        if (!sel.messages.empty() || !parked) {
            break;
        }
        {
            std::lock_guard lock(q->mu);
            ++q->waiting;
        }
        co_await parked->wait_until(wake_at);
        {
            std::lock_guard lock(q->mu);
            --q->waiting;
        }
    }

    // Redelivered messages are read from the topic again; dead-letter moves go first.
    std::vector<message_ref> missing;
    for (const auto& m : sel.messages) {
        if (!m.body) {
            missing.push_back(m.ref);
        }
    }
    // Taken, not to be answered: their records are gone for good (dropped here).
    std::set<message_ref> dropped;
    if (!missing.empty()) {
        auto loaded = co_await read_messages(q, missing);
        std::lock_guard lock(q->mu);
        change_list changes;
        for (auto& m : sel.messages) {
            if (m.body) {
                continue;
            }
            if (auto it = loaded.found.find(m.ref); it != loaded.found.end()) {
                m.body = it->second;
            } else if (loaded.gone.contains(m.ref)) {
                q->state.drop(m.ref, changes);  // its record is gone (retention)
                dropped.insert(m.ref);
            }
            // Not readable now (the cluster did not answer in time): given back below, never
            // dropped. A dead-letter move not readable now stays held and comes back after
            // the hold.
        }
        if (auto p = append_locked(*q, changes)) {
            keep_latest(pos, *p);
        }
    }
    std::vector<taken_message> moves;
    for (auto& m : sel.messages) {
        if (m.body && m.dead_letter) {
            moves.push_back(m);
        }
    }
    if (!moves.empty()) {
        co_await dead_letter(q, std::move(moves), pos);
    }
    if (!leased) {
        if (auto f = co_await flush(pos); !f) {
            // No client gets these messages: they are given back at once, not left in flight
            // for the receive's visibility timeout (a FIFO group would stay locked that long).
            // The records saying they were received may still be stored later; the ones
            // giving them back follow them in the log.
            give_back_unanswered(*q, sel.messages, dropped);
            co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                                  fmt::format("The receive could not be stored: {}",
                                                              f.error().message())});
        }
        if (!leases.empty()) {
            std::lock_guard lock(q->mu);
            q->state.lease_stored(leases);
        }
    }
    // The answer holds what is still in flight under this receive now: a read or a write of
    // the state that outlasted the visibility timeout (a cluster coming back) has let the
    // message be taken again, and one not read is given back. FIFO: nothing may go past a
    // message of the receive that is not answered (its group's order), so then none is.
    std::vector<api::received_message> out;
    {
        std::lock_guard lock(q->mu);
        change_list changes;
        const std::int64_t t = now();
        const bool fifo = q->state.config().fifo;
        std::size_t withheld = 0;
        for (auto& m : sel.messages) {
            if (m.dead_letter || dropped.contains(m.ref)) {
                continue;
            }
            if (!m.body || !q->state.in_flight_for(m.ref, m.receive_count, visibility_ms, t)) {
                (void)q->state.give_back(m.ref, m.receive_count, t, changes);
                m.body = nullptr;
                ++withheld;
            }
        }
        if (withheld > 0 && fifo) {
            for (auto& m : sel.messages) {
                if (m.body && !m.dead_letter) {
                    (void)q->state.give_back(m.ref, m.receive_count, t, changes);
                    m.body = nullptr;
                    ++withheld;
                }
            }
        }
        if (withheld > 0) {
            queue_log().warn("queue {}: {} received messages could not be read from the topic, "
                             "or saw their visibility timeout end, before the answer; they stay "
                             "in the queue",
                             q->meta.name, withheld);
            (void)append_locked(*q, changes);  // no wait: a lost record means the timeout
            after_change(*q, withheld);
        }
        for (auto& m : sel.messages) {
            if (m.body && !m.dead_letter) {
                out.push_back(to_received(*q, m, *m.body));
            }
        }
    }
    co_return out;
}

void queue_service::give_back_unanswered(queue_handle& q, const std::vector<taken_message>& taken,
                                         const std::set<message_ref>& dropped) {
    std::lock_guard lock(q.mu);
    change_list changes;
    const std::int64_t t = now();
    std::size_t given = 0;
    for (const auto& m : taken) {
        if (!m.dead_letter && !dropped.contains(m.ref) &&
            q.state.give_back(m.ref, m.receive_count, t, changes)) {
            ++given;
        }
    }
    if (given > 0) {
        queue_log().warn("queue {}: a receive's state could not be stored; its {} messages are "
                         "visible again",
                         q.meta.name, given);
        (void)append_locked(q, changes);
        after_change(q, given);
    }
}

// --- delete and visibility ---------------------------------------------------------------------

api::awaitable<api::backend_result<std::vector<api::backend_error>>> queue_service::delete_messages(
    api::queue_name name, std::vector<std::string> receipt_handles) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    std::vector<backend_error> out(receipt_handles.size());
    std::optional<state_log::position> pos;
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        change_list changes;
        const std::int64_t t = now();
        for (std::size_t i = 0; i < receipt_handles.size(); ++i) {
            auto r = verify_handle(*q, receipt_handles[i]);
            if (!r) {
                out[i] = {make_error_code(errc::receipt_handle_invalid),
                          fmt::format("The input receipt handle \"{}\" is not a valid receipt handle.",
                                      receipt_handles[i])};
                continue;
            }
            switch (q->state.remove({r->partition, r->offset}, r->receive_count, t, changes)) {
                case handle_outcome::done:
                case handle_outcome::stale:
                    break;
                case handle_outcome::expired:
                    out[i] = {make_error_code(errc::receipt_handle_invalid),
                              "The receipt handle has expired."};
                    break;
                case handle_outcome::not_inflight:
                case handle_outcome::gone:
                case handle_outcome::too_long:
                    break;
            }
        }
        auto p = append_locked(*q, changes);
        if (!p) {
            co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                                  p.error().message()});
        }
        keep_latest(pos, *p);
        after_change(*q, 0);
    }
    if (auto f = co_await flush(pos); !f) {
        co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                              fmt::format("The deletion could not be stored: {}",
                                                          f.error().message())});
    }
    co_return out;
}

api::awaitable<api::backend_result<std::vector<api::backend_error>>> queue_service::change_visibility(
    api::queue_name name, std::vector<api::visibility_change> changes_in) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    std::vector<backend_error> out(changes_in.size());
    std::optional<state_log::position> pos;
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        change_list changes;
        const std::int64_t t = now();
        std::size_t made_available = 0;
        for (std::size_t i = 0; i < changes_in.size(); ++i) {
            const auto& c = changes_in[i];
            if (c.timeout.count() < 0 || c.timeout.count() > max_visibility_timeout_s) {
                out[i] = invalid(fmt::format(
                    "Value {} for parameter VisibilityTimeout is invalid. Reason: must be between "
                    "0 and 43200.",
                    c.timeout.count()));
                continue;
            }
            auto r = verify_handle(*q, c.receipt_handle);
            if (!r) {
                out[i] = {make_error_code(errc::receipt_handle_invalid),
                          fmt::format("The input receipt handle \"{}\" is not a valid receipt handle.",
                                      c.receipt_handle)};
                continue;
            }
            const auto outcome = q->state.change_visibility({r->partition, r->offset},
                                                            r->receive_count,
                                                            c.timeout.count() * 1000, t, changes);
            switch (outcome) {
                case handle_outcome::done:
                    made_available += c.timeout.count() == 0 ? 1 : 0;
                    break;
                case handle_outcome::stale:
                case handle_outcome::not_inflight:
                case handle_outcome::expired:
                    out[i] = {make_error_code(errc::message_not_inflight),
                              fmt::format("Value {} for parameter ReceiptHandle is invalid. "
                                          "Reason: Message does not exist or is not available for "
                                          "visibility timeout change.",
                                          c.receipt_handle)};
                    break;
                case handle_outcome::gone:
                    out[i] = {make_error_code(errc::receipt_handle_invalid),
                              "The message of this receipt handle was deleted."};
                    break;
                case handle_outcome::too_long:
                    out[i] = invalid(fmt::format(
                        "Value {} for parameter VisibilityTimeout is invalid. Reason: Total "
                        "VisibilityTimeout for the message is beyond the limit [43200 seconds]",
                        c.timeout.count()));
                    break;
            }
        }
        auto p = append_locked(*q, changes);
        if (!p) {
            co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                                  p.error().message()});
        }
        keep_latest(pos, *p);
        after_change(*q, made_available);
    }
    if (auto f = co_await flush(pos); !f) {
        co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                              fmt::format("The change could not be stored: {}",
                                                          f.error().message())});
    }
    co_return out;
}

}  // namespace sluice::backend::queue
