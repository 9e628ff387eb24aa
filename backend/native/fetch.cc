// The native read paths: fetch (parked without polling until min_bytes are available or
// max_wait passes; read_committed stops at the last stable offset and lists the aborted
// transactions in what it returns), offsets by position and time, and delete records.
#include <algorithm>
#include <chrono>
#include <vector>

#include <boost/asio/this_coro.hpp>

#include "backend/api/records_memory.h"
#include "backend/log/data_waiter.h"
#include "backend/log/errc.h"
#include "backend/native/blocking.h"
#include "backend/native/native_records.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::native {
namespace kafka = protocol::kafka;
namespace blog = backend::log;
namespace bp = backend::producer;

namespace {

struct fetch_target {
    api::fetched_partition* out;
    std::shared_ptr<blog::partition_log> log;
    offset fetch_offset;
    std::int32_t max_bytes;
    /// read_committed: the partition's producer state (last stable offset, aborted index).
    std::shared_ptr<bp::partition_producer_state> txn;
    /// Records in the batches of the last read (for the traffic counters).
    std::uint64_t record_count = 0;
};

/// The offset after the last batch of `records` (-1 when they cannot be read).
std::int64_t end_of(const kafka::records& records) {
    auto bytes = api::read_records_into_memory(records);
    if (!bytes) {
        return -1;
    }
    std::int64_t end = -1;
    kafka::batch_cursor cursor(bytes->view());
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        if (auto h = kafka::read_batch_header(b)) {
            end = h->last_offset() + 1;
        }
    }
    return end;
}

/// compat: Kafka's collectAbortedTransactions: the aborted transactions whose marker is at or
/// after the fetch offset and whose data starts before the end of what is returned.
void add_aborted(api::fetched_partition& pout, const bp::partition_producer_state& st,
                 offset fetch_offset, offset lso, const kafka::records& records) {
    auto aborted = st.aborted_between(fetch_offset.value, lso.value);
    if (aborted.empty()) {
        return;
    }
    std::int64_t upper = lso.value;
    if (records.size() > 0) {
        if (std::int64_t end = end_of(records); end >= 0) {
            upper = std::min(upper, end);
        }
    }
    for (const auto& a : aborted) {
        if (a.first_offset < upper) {
            pout.aborted.push_back({producer_id(a.producer_id), offset(a.first_offset)});
        }
    }
}

/// The index finds the first batch whose max timestamp reaches `target`; Kafka answers with the
/// first record in it that does, so look inside that batch. On any read problem the batch's
/// own answer stands.
void refine_to_record(blog::partition_log& log, std::int64_t target, offset& found,
                      std::int64_t& found_ts) {
    blog::read_options opts;
    opts.min_one_batch = true;
    auto got = log.read(found, 1, opts);
    if (!got) {
        return;
    }
    auto bytes = api::read_records_into_memory(got->records);
    if (!bytes) {
        return;
    }
    kafka::batch_cursor cursor(bytes->view());
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        auto it = kafka::record_iterator::open(b, kafka::default_max_decompressed_bytes);
        if (!it) {
            return;
        }
        kafka::record_view r;
        while (it->next(r)) {
            if (r.offset >= found.value && r.timestamp >= target) {
                found = offset(r.offset);
                found_ts = r.timestamp;
                return;
            }
        }
    }
}

/// Counts a parked fetch for as long as it lives.
class parked_count {
public:
    explicit parked_count(std::atomic<std::int64_t>& n) : n_(n) {
        n_.fetch_add(1, std::memory_order_relaxed);
    }
    ~parked_count() { n_.fetch_sub(1, std::memory_order_relaxed); }
    parked_count(const parked_count&) = delete;
    parked_count& operator=(const parked_count&) = delete;

private:
    std::atomic<std::int64_t>& n_;
};

}  // namespace

api::awaitable<result<std::shared_ptr<bp::partition_producer_state>>> native_records::state_of(
    std::shared_ptr<blog::partition_log> log) {
    auto t = co_await states_.wait_turn(std::move(log), pool_);
    if (!t) {
        co_return fail(t.error());
    }
    co_return t->shared_state();  // the turn ends here: readers keep no place in the order
}

api::awaitable<api::fetch_result> native_records::fetch(api::fetch_request req) {
    api::fetch_result resp;
    std::vector<fetch_target> targets;
    bool has_errors = false;
    const bool read_committed = req.isolation == api::isolation::read_committed;
    resp.topics.reserve(req.topics.size());
    for (auto& topic : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.topic = topic.topic;
        tout.id = topic.id;
        const bool by_id = !topic.id.is_zero();
        std::optional<blog::topic_info> info =
            by_id ? log_.find_topic(topic.id) : log_.find_topic(topic.topic.value);
        if (info) {
            tout.topic = topic_name(info->name);
            tout.id = info->id;
        }
        tout.partitions.reserve(topic.partitions.size());
        for (auto& part : topic.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition = part.partition;
            std::shared_ptr<blog::partition_log> log;
            if (info) {
                log = log_.partition(info->name, part.partition);
            }
            if (!log) {
                pout.error = by_id && !info
                                 ? make_error_code(api::errc::unknown_topic_id)
                                 : make_error_code(blog::errc::unknown_topic_or_partition);
                has_errors = true;
                continue;
            }
            std::shared_ptr<bp::partition_producer_state> txn;
            if (read_committed) {
                auto st = co_await state_of(log);
                if (!st) {
                    pout.error = st.error();
                    has_errors = true;
                    continue;
                }
                txn = std::move(*st);
            }
            targets.push_back({&pout, std::move(log), part.fetch_offset,
                               std::max<std::int32_t>(part.max_bytes, 0), std::move(txn)});
        }
    }

    const std::int64_t response_limit = std::max<std::int64_t>(req.max_bytes, 0);
    const std::int64_t min_bytes = std::max(req.min_bytes, 0);
    auto max_wait = req.max_wait;
    const auto deadline = std::chrono::steady_clock::now() + max_wait;
    const auto ex = co_await boost::asio::this_coro::executor;
    std::optional<parked_count> parked;

    for (;;) {
        // Register before reading so that an append between the read and the wait is not lost.
        auto waiter = std::make_shared<blog::timer_waiter>(ex);
        const bool may_wait = !has_errors && max_wait.count() > 0 &&
                              std::chrono::steady_clock::now() < deadline;
        if (may_wait) {
            for (auto& t : targets) {
                t.log->add_waiter(waiter);
            }
        }
        std::int64_t total = 0;
        bool errors = has_errors;
        // Whether the response limit, not the data, ended this read: a fuller response cannot
        // come by waiting, so min_bytes above what the limit lets through must not park it.
        bool cut_by_limit = false;
        std::vector<std::size_t> limited;  // targets whose room the response limit narrowed
        // When the response limit cuts the list short, the partitions left out must not always
        // be the same ones: the caller rotates the first one.
        const std::size_t first = targets.empty() ? 0 : req.first_partition % targets.size();
        for (std::size_t i = 0; i < targets.size(); ++i) {
            auto& t = targets[(first + i) % targets.size()];
            auto& pout = *t.out;
            pout.error = {};
            pout.records = kafka::records::empty();
            pout.aborted.clear();
            pout.high_watermark = t.log->high_watermark();
            pout.last_stable_offset = pout.high_watermark;
            pout.log_start_offset = t.log->log_start_offset();
            const std::int64_t room = std::min<std::int64_t>(t.max_bytes, response_limit - total);
            if (room <= 0 && total > 0) {
                cut_by_limit = cut_by_limit ||
                               (t.max_bytes > 0 && t.fetch_offset < t.log->high_watermark());
                continue;
            }
            if (room < t.max_bytes) {
                limited.push_back((first + i) % targets.size());
            }
            blog::read_options ropts;
            ropts.min_one_batch = total == 0;
            offset lso = pout.high_watermark;
            if (t.txn) {
                lso = t.txn->last_stable_offset(pout.high_watermark);
                ropts.max_offset = lso;
                pout.last_stable_offset = lso;
            }
            auto got = t.log->read(t.fetch_offset,
                                   static_cast<std::size_t>(std::max<std::int64_t>(room, 0)), ropts);
            for (int attempt = 1; got && t.txn; ++attempt) {
                // The aborted transactions must describe the segments the records came from:
                // a compaction may remove an aborted transaction's data, its marker and its
                // entry (forget_removed) between the read and the list. Read again then.
                pout.aborted.clear();
                t.txn->forget_removed(*t.log);
                add_aborted(pout, *t.txn, t.fetch_offset,
                            std::min(lso, got->high_watermark), got->records);
                if (t.log->compaction_generation() == got->compaction_generation) {
                    break;
                }
                if (attempt == 4) {
                    // Compactions keep overtaking the read: answer nothing for now (the client
                    // fetches again) rather than records and a list that may not match.
                    got->records = kafka::records::empty();
                    got->record_count = 0;
                    pout.aborted.clear();
                    break;
                }
                got = t.log->read(t.fetch_offset,
                                  static_cast<std::size_t>(std::max<std::int64_t>(room, 0)),
                                  ropts);
            }
            if (!got) {
                pout.aborted.clear();
                pout.error = got.error();
                errors = true;
                continue;
            }
            pout.high_watermark = got->high_watermark;
            pout.last_stable_offset =
                t.txn ? std::min(lso, got->high_watermark) : got->high_watermark;
            pout.log_start_offset = got->log_start_offset;
            total += static_cast<std::int64_t>(got->records.size());
            t.record_count = got->record_count;
            pout.records = std::move(got->records);
        }
        if (!errors && total < min_bytes && may_wait && !cut_by_limit) {
            // A partition the limit narrowed has more behind what it gave when a read with the
            // partition's own limit returns more (file regions: nothing is copied). Only asked
            // before parking, and only when the response limit was below a partition's.
            for (const auto idx : limited) {
                auto& t = targets[idx];
                blog::read_options probe;
                probe.min_one_batch = false;
                if (t.txn) {
                    probe.max_offset = t.out->last_stable_offset;
                }
                auto more = t.log->read(t.fetch_offset, static_cast<std::size_t>(t.max_bytes), probe);
                if (more && more->records.size() > t.out->records.size()) {
                    cut_by_limit = true;
                    break;
                }
            }
        }
        if (errors || total >= min_bytes || !may_wait || cut_by_limit) {
            break;
        }
        if (!parked) {
            parked.emplace(parked_);
        }
        co_await waiter->wait_until(deadline);
        if (std::chrono::steady_clock::now() >= deadline) {
            // One last read below picks up anything that arrived just before the deadline.
            has_errors = false;
            max_wait = std::chrono::milliseconds(0);
        }
    }
    parked.reset();

    for (auto& t : targets) {
        if (t.out->records.size() > 0) {
            auto& c = traffic_.of(t.log->topic(), t.log->partition());
            c.bytes_out.fetch_add(t.out->records.size(), std::memory_order_relaxed);
            c.records_out.fetch_add(t.record_count, std::memory_order_relaxed);
        }
    }
    co_return resp;
}

api::awaitable<std::vector<api::found_offset>> native_records::list_offsets(
    std::vector<api::offset_query> queries, api::isolation isolation) {
    std::vector<api::found_offset> out;
    out.reserve(queries.size());
    using kind = api::offset_spec::kind;
    for (const auto& q : queries) {
        auto& a = out.emplace_back();
        auto log = log_.partition(q.topic.value, q.partition);
        if (!log) {
            a.error = make_error_code(blog::errc::unknown_topic_or_partition);
            continue;
        }
        switch (q.spec.what) {
            case kind::latest:
                // read_committed readers see up to the last stable offset; without open
                // transactions that is the high watermark.
                a.off = log->high_watermark();
                if (isolation == api::isolation::read_committed) {
                    auto st = co_await state_of(log);
                    if (!st) {
                        a.error = st.error();
                        continue;
                    }
                    a.off = (*st)->last_stable_offset(a.off);
                }
                break;
            case kind::earliest:
            case kind::earliest_local:
                a.off = log->log_start_offset();
                break;
            case kind::latest_tiered:
                // No tiered storage: nothing has been uploaded.
                a.off = offset(-1);
                break;
            case kind::max_timestamp: {
                const auto m = log->max_timestamp();
                a.off = m.off;
                a.timestamp = m.timestamp;
                break;
            }
            case kind::timestamp: {
                auto hit = log->lookup_timestamp(q.spec.timestamp_ms);
                if (!hit) {
                    a.error = hit.error();
                    continue;
                }
                a.off = hit->off;
                a.timestamp = hit->timestamp;
                if (a.off.value >= 0) {
                    refine_to_record(*log, q.spec.timestamp_ms, a.off, a.timestamp);
                }
                break;
            }
        }
        a.leader_epoch = a.off.value >= 0 ? 0 : -1;
    }
    co_return out;
}

api::awaitable<std::vector<api::backend_result<offset>>> native_records::delete_records(
    std::vector<api::delete_records_request> reqs) {
    std::vector<api::backend_result<offset>> out;
    out.reserve(reqs.size());
    for (const auto& r : reqs) {
        auto log = log_.partition(r.topic.value, r.partition);
        if (!log) {
            out.push_back(fail(blog::errc::unknown_topic_or_partition));
            continue;
        }
        const offset target = r.before.value == -1 ? log->high_watermark() : r.before;
        if (target.value < 0 || target > log->high_watermark()) {
            out.push_back(fail(blog::errc::offset_out_of_range));
            continue;
        }
        // Persisting the new log start writes and syncs a file.
        out.push_back(co_await run_blocking(pool_, [&] { return log->delete_records(target); }));
    }
    co_return out;
}

}  // namespace sluice::backend::native
