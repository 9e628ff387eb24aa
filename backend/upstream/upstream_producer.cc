#include "backend/upstream/upstream_producer.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct send_call;

/// What a record's opaque points at: its call and its place in the call.
struct send_slot {
    send_call* call = nullptr;
    std::size_t index = 0;
};

/// One send() in flight. Kept alive by the coroutine while it waits and by `self` while
/// librdkafka still holds records of it (their reports may come after the call answered).
struct send_call : std::enable_shared_from_this<send_call> {
    send_call(asio::any_io_executor ex, std::size_t n, upstream_producer& owner)
        : executor(std::move(ex)), timer(executor), results(n), slots(n), owner(owner) {
        for (std::size_t i = 0; i < n; ++i) {
            slots[i] = send_slot{this, i};
        }
    }

    asio::any_io_executor executor;
    asio::steady_timer timer;  // the deadline; cancelled when the last report arrives
    std::mutex mu;
    std::vector<api::delivery> results;
    std::vector<send_slot> slots;
    std::vector<bool> done;         // by index, under mu: answered (report, refusal or timeout)
    std::size_t waiting = 0;        // records queued whose report has not arrived, under mu
    std::size_t in_librdkafka = 0;  // records librdkafka holds, under mu
    bool answered = false;          // the call answered; later reports are ignored
    std::shared_ptr<send_call> self;
    upstream_producer& owner;

    void delivered(std::size_t index, const rd_kafka_message_t* msg) {
        std::shared_ptr<send_call> release;
        bool wake = false;
        {
            std::lock_guard lock(mu);
            if (!answered && !done[index]) {
                auto& d = results[index];
                if (msg->err) {
                    d.error = to_backend_error(msg->err, rd_kafka_message_errstr(msg));
                    d.partition = msg->partition;
                } else {
                    rd_kafka_timestamp_type_t type;
                    d.partition = msg->partition;
                    d.offset = msg->offset;
                    d.timestamp = rd_kafka_message_timestamp(msg, &type);
                }
                done[index] = true;
                wake = --waiting == 0;
            }
            if (--in_librdkafka == 0) {
                release = std::move(self);
            }
        }
        if (wake) {
            asio::post(executor, [c = shared_from_this()] { c->timer.cancel(); });
        }
    }
};

/// Whether a call's records can go in with one rd_kafka_produce_batch: all for one partition
/// (asked, the call's sticky one, or all keyed: librdkafka's partitioner), none with headers
/// or a timestamp of its own (produce_batch takes neither: the records get "now").
template <typename Target>
bool batchable(const std::vector<api::outgoing_record>& records, Target target) {
    const std::int32_t first = target(records.front());
    return std::all_of(records.begin(), records.end(), [&](const api::outgoing_record& r) {
        return r.headers.empty() && r.timestamp < 0 && target(r) == first;
    });
}

/// Hands `records` to librdkafka with one rd_kafka_produce_batch (one lock of the partition's
/// queue and one wake-up of its broker thread instead of one per record), each record's
/// opaque its slot of `call`. Returns where the caller goes on handing records over one by
/// one: after the last record librdkafka took. A full local queue refuses the record and every
/// one after it (librdkafka 2.0.2's produce_batch), so those wait and are retried in order
/// there; a record refused for itself (too large) before a taken one answers its error, as it
/// would one by one.
std::size_t produce_batch(send_call& call, rd_kafka_topic_t* rkt, std::int32_t partition,
                          const std::vector<api::outgoing_record>& records) {
    const std::size_t n = records.size();
    std::vector<rd_kafka_message_t> msgs(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& r = records[i];
        auto& m = msgs[i];
        if (r.value) {
            m.payload = const_cast<char*>(r.value->data());  // RD_KAFKA_MSG_F_COPY: only read
            m.len = r.value->size();
        }
        if (r.key) {
            m.key = const_cast<char*>(r.key->data());
            m.key_len = r.key->size();
        }
        m._private = &call.slots[i];
    }
    {
        std::lock_guard lock(call.mu);
        call.in_librdkafka += n;
        call.waiting += n;
        if (!call.self) {
            call.self = call.shared_from_this();
        }
    }
    const int taken = rd_kafka_produce_batch(rkt, partition, RD_KAFKA_MSG_F_COPY, msgs.data(),
                                             static_cast<int>(n));
    if (taken == static_cast<int>(n)) {
        return n;
    }
    // Which were refused: the records before the first refusal are in; a refused record
    // before a taken one cannot be retried in order.
    std::size_t first_refused = n;
    std::size_t last_taken = 0;
    bool any_taken_after = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (msgs[i].err && first_refused == n) {
            first_refused = i;
        } else if (!msgs[i].err && first_refused != n) {
            any_taken_after = true;
            last_taken = i;
        }
    }
    const std::size_t retry_from = any_taken_after ? last_taken + 1 : first_refused;
    std::lock_guard lock(call.mu);
    for (std::size_t i = first_refused; i < n; ++i) {
        if (!msgs[i].err) {
            continue;
        }
        --call.in_librdkafka;
        --call.waiting;
        if (i < retry_from) {
            call.results[i].error = to_backend_error(msgs[i].err, rd_kafka_err2str(msgs[i].err));
            call.results[i].partition = records[i].partition.value_or(-1);
            call.done[i] = true;
        }
    }
    return retry_from;
}

}  // namespace

upstream_producer::upstream_producer(rd_kafka_t* rk, blocking_pool& pool,
                                     upstream_monitor& monitor, milliseconds request_timeout,
                                     milliseconds metadata_max_age)
    : rk_(rk),
      pool_(pool),
      monitor_(monitor),
      request_timeout_(request_timeout),
      metadata_max_age_(metadata_max_age) {}

void upstream_producer::on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void*) {
    auto* slot = static_cast<send_slot*>(msg->_private);
    if (!slot) {
        return;
    }
    if (msg->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        msg->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
        msg->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        slot->call->owner.forget(rd_kafka_topic_name(msg->rkt));
    }
    slot->call->delivered(slot->index, msg);
}

void upstream_producer::forget(const std::string& topic) {
    std::lock_guard lock(cache_mu_);
    cache_.erase(topic);
}

api::awaitable<api::backend_result<std::int32_t>> upstream_producer::partition_count(
    const topic_name& topic, bool refresh, milliseconds timeout) {
    const auto now = steady_clock::now();
    if (!refresh) {
        std::lock_guard lock(cache_mu_);
        auto it = cache_.find(topic.value);
        if (it != cache_.end() && now - it->second.fetched < metadata_max_age_) {
            co_return it->second.partitions;
        }
    }
    auto blocking_job = [rk = rk_, name = topic.value, timeout] {
        return fetch_metadata(rk, metadata_scope::one, name, timeout);
    };
    auto fetched = co_await run_blocking(pool_, std::move(blocking_job));
    if (fetched.err) {
        co_return api::backend_failure(to_backend_error(fetched.err));
    }
    const rd_kafka_metadata_t& md = *fetched.md;
    for (int i = 0; i < md.topic_cnt; ++i) {
        const auto& t = md.topics[i];
        if (topic.value != t.topic) {
            continue;
        }
        if (t.err) {
            auto e = to_backend_error(t.err);
            if (e.reason() == api::errc::unknown_topic_or_partition) {
                e.message = fmt::format("topic '{}' does not exist", topic.value);
            }
            co_return api::backend_failure(std::move(e));
        }
        std::lock_guard lock(cache_mu_);
        cache_[topic.value] = cached_topic{t.partition_cnt, steady_clock::now()};
        co_return t.partition_cnt;
    }
    co_return api::backend_failure(api::make_error_code(api::errc::unknown_topic_or_partition),
                                   fmt::format("topic '{}' does not exist", topic.value));
}

api::awaitable<api::backend_result<std::int32_t>> upstream_producer::partitions(topic_name topic) {
    auto r = co_await partition_count(topic, false, request_timeout_);
    if (!r) {
        monitor_.count_error(r.error());
    }
    co_return r;
}

api::awaitable<api::backend_result<std::vector<api::delivery>>> upstream_producer::send(
    topic_name topic, std::vector<api::outgoing_record> records, api::send_options opts) {
    auto ex = co_await asio::this_coro::executor;
    const auto deadline = steady_clock::now() + opts.timeout;
    auto fail = [this](api::backend_error e) {
        monitor_.count_error(e);
        return api::backend_failure(std::move(e));
    };

    auto count = co_await partition_count(topic, false, std::min(opts.timeout, request_timeout_));
    if (!count) {
        co_return fail(count.error());
    }
    // A partition beyond the cached count may be new: ask once more before refusing.
    auto highest = std::max_element(records.begin(), records.end(), [](auto& a, auto& b) {
        return a.partition.value_or(-1) < b.partition.value_or(-1);
    });
    if (highest != records.end() && highest->partition.value_or(-1) >= *count) {
        count = co_await partition_count(topic, true, std::min(opts.timeout, request_timeout_));
        if (!count) {
            co_return fail(count.error());
        }
    }
    for (const auto& r : records) {
        if (r.partition && (*r.partition < 0 || *r.partition >= *count)) {
            co_return fail(
                api::backend_error(api::make_error_code(api::errc::unknown_topic_or_partition),
                                   fmt::format("topic '{}' has no partition {} (it has {})",
                                               topic.value, *r.partition, *count)));
        }
    }
    if (records.empty()) {
        co_return std::vector<api::delivery>{};
    }

    auto call = std::make_shared<send_call>(ex, records.size(), *this);
    call->done.assign(records.size(), false);
    const std::int32_t sticky = static_cast<std::int32_t>(
        round_robin_.fetch_add(1, std::memory_order_relaxed) % static_cast<std::uint32_t>(*count));
    topic_handle_ptr rkt(rd_kafka_topic_new(rk_, topic.value.c_str(), nullptr));
    if (!rkt) {
        co_return fail(to_backend_error(rd_kafka_last_error()));
    }

    auto target = [sticky](const api::outgoing_record& r) {
        return r.partition ? *r.partition : (r.key ? RD_KAFKA_PARTITION_UA : sticky);
    };
    // The records handed over one by one start here: after those a batch took.
    std::size_t next = 0;
    if (batchable(records, target)) {
        next = produce_batch(*call, rkt.get(), target(records.front()), records);
    }

    std::vector<rd_kafka_vu_t> vus;
    for (std::size_t i = next; i < records.size(); ++i) {
        auto& r = records[i];
        const std::int32_t partition = target(r);
        vus.clear();
        auto add = [&vus](rd_kafka_vtype_t t) -> rd_kafka_vu_t& {
            vus.push_back(rd_kafka_vu_t{});
            vus.back().vtype = t;
            return vus.back();
        };
        add(RD_KAFKA_VTYPE_RKT).u.rkt = rkt.get();
        add(RD_KAFKA_VTYPE_PARTITION).u.i32 = partition;
        add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
        if (r.key) {
            auto& k = add(RD_KAFKA_VTYPE_KEY).u.mem;
            k.ptr = r.key->data();
            k.size = r.key->size();
        }
        if (r.value) {
            auto& v = add(RD_KAFKA_VTYPE_VALUE).u.mem;
            v.ptr = r.value->data();
            v.size = r.value->size();
        }
        for (const auto& [name, value] : r.headers) {
            auto& h = add(RD_KAFKA_VTYPE_HEADER).u.header;
            h.name = name.c_str();
            h.val = value ? value->data() : nullptr;
            h.size = value ? static_cast<ssize_t>(value->size()) : -1;
        }
        add(RD_KAFKA_VTYPE_TIMESTAMP).u.i64 = r.timestamp < 0 ? 0 : r.timestamp;
        add(RD_KAFKA_VTYPE_OPAQUE).u.ptr = &call->slots[i];

        for (;;) {
            {
                std::lock_guard lock(call->mu);
                ++call->in_librdkafka;
                ++call->waiting;
                if (!call->self) {
                    call->self = call;
                }
            }
            rd_kafka_error_t* error = rd_kafka_produceva(rk_, vus.data(), vus.size());
            if (!error) {
                break;
            }
            const auto code = rd_kafka_error_code(error);
            std::string text = rd_kafka_error_string(error);
            rd_kafka_error_destroy(error);
            {
                std::lock_guard lock(call->mu);
                --call->in_librdkafka;
                --call->waiting;
                if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL || steady_clock::now() >= deadline) {
                    call->results[i].error = to_backend_error(code, text.c_str());
                    call->results[i].partition = r.partition.value_or(-1);
                    call->done[i] = true;
                    break;
                }
            }
            // The local queue is full: wait for deliveries to make room, then retry.
            asio::steady_timer pause(ex, milliseconds(5));
            boost::system::error_code ignored;
            co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        }
    }

    bool all_reported = false;
    {
        std::lock_guard lock(call->mu);
        if (call->in_librdkafka == 0) {
            call->self.reset();  // nothing queued: no report will come (our own ref remains)
        }
        all_reported = call->waiting == 0;
        if (opts.acks == api::acks::none) {
            call->answered = true;  // fire and forget: the reports are ignored
        }
    }
    if (opts.acks == api::acks::none) {
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (!call->done[i]) {
                call->results[i].partition = records[i].partition.value_or(-1);
            }
        }
        co_return std::move(call->results);
    }
    // Wait for the last report or the deadline. A report that found nothing else outstanding
    // while the queue-full loop above was still handing records over posted a cancel that may
    // end this wait early: look again after every wake.
    while (!all_reported && steady_clock::now() < deadline) {
        call->timer.expires_at(deadline);
        boost::system::error_code woken;  // operation_aborted: a report said "the last one"
        co_await call->timer.async_wait(asio::redirect_error(asio::use_awaitable, woken));
        std::lock_guard lock(call->mu);
        all_reported = call->waiting == 0;
    }

    std::vector<api::delivery> out;
    {
        std::lock_guard lock(call->mu);
        call->answered = true;
        for (std::size_t i = 0; i < records.size(); ++i) {
            if (!call->done[i]) {
                call->results[i].error = api::backend_error(
                    api::make_error_code(api::errc::request_timed_out),
                    fmt::format("not acknowledged within {} ms", opts.timeout.count()));
            }
        }
        out = std::move(call->results);
    }
    for (const auto& d : out) {
        monitor_.count_error(d.error);
    }
    co_return out;
}

}  // namespace sluice::backend::upstream
