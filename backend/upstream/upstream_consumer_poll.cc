// upstream_consumer: draining librdkafka's consumer queue into the partition buffers, and
// poll() handing the buffers to the sink.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/upstream/upstream_consumer_impl.h"
#include "protocol/core/varint.h"

namespace sluice::backend::upstream {
namespace asio = boost::asio;

namespace {

/// A partition whose buffer holds more than this is paused until a poll takes it below half
/// (only by the keep-alive's drain, while nobody polls).
constexpr std::int64_t poll_buffer_cap = 2 * 1024 * 1024;
/// What a poll's drain moves out of librdkafka's queue at most (all partitions together); the
/// rest waits in librdkafka's queue, whose own limits (queued.max.messages.kbytes,
/// queued.min.messages) stop its fetcher. Pausing instead costs up to a second per resume:
/// librdkafka 2.0.2's broker thread notices a resumed partition only at its next idle wake-up,
/// and refetches what it had queued.
constexpr std::int64_t poll_drain_cap = 4 * 1024 * 1024;
/// Messages taken from librdkafka per rd_kafka_consume_batch_queue call.
constexpr std::size_t poll_drain_batch = 512;

std::int64_t poll_size_of(const rd_kafka_message_t* m) {
    return static_cast<std::int64_t>(m->len + m->key_len) + 64;
}

void poll_put_varint(std::vector<std::byte>& out, std::int32_t v) {
    std::byte tmp[10];
    const std::size_t n = protocol::put_uvarint(tmp, protocol::zigzag32(v));
    out.insert(out.end(), tmp, tmp + n);
}

/// The record as the sink sees it; headers are encoded as Kafka record headers into
/// `scratch` (valid until the next call).
protocol::kafka::record_view poll_view_of(const rd_kafka_message_t* m,
                                          std::vector<std::byte>& scratch) {
    protocol::kafka::record_view r;
    r.offset = m->offset;
    rd_kafka_timestamp_type_t type;
    r.timestamp = rd_kafka_message_timestamp(m, &type);
    if (m->key) {
        r.key = protocol::bytes_view(static_cast<const std::byte*>(m->key), m->key_len);
    }
    if (m->payload) {
        r.value = protocol::bytes_view(static_cast<const std::byte*>(m->payload), m->len);
    }
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR && hdrs) {
        scratch.clear();
        const std::size_t count = rd_kafka_header_cnt(hdrs);
        for (std::size_t i = 0; i < count; ++i) {
            const char* name = nullptr;
            const void* value = nullptr;
            std::size_t size = 0;
            if (rd_kafka_header_get_all(hdrs, i, &name, &value, &size) !=
                RD_KAFKA_RESP_ERR_NO_ERROR) {
                break;
            }
            const std::size_t nlen = std::strlen(name);
            poll_put_varint(scratch, static_cast<std::int32_t>(nlen));
            const auto* nb = reinterpret_cast<const std::byte*>(name);
            scratch.insert(scratch.end(), nb, nb + nlen);
            if (value) {
                poll_put_varint(scratch, static_cast<std::int32_t>(size));
                const auto* vb = static_cast<const std::byte*>(value);
                scratch.insert(scratch.end(), vb, vb + size);
            } else {
                poll_put_varint(scratch, -1);
            }
        }
        r.headers = protocol::kafka::header_range(
            protocol::bytes_view(scratch.data(), scratch.size()),
            static_cast<std::uint32_t>(count));
    }
    return r;
}

}  // namespace

void upstream_consumer::reset_cache_locked() {
    last_rkt_ = nullptr;
    last_partition_ = -1;
    last_state_ = nullptr;
}

upstream_consumer::partition_state* upstream_consumer::find_locked(rd_kafka_topic_t* rkt,
                                                                   std::int32_t partition) {
    if (rkt == last_rkt_ && partition == last_partition_) {
        return last_state_;
    }
    auto it = held_.find({topic_name(rd_kafka_topic_name(rkt)), partition_id(partition)});
    if (it == held_.end()) {
        return nullptr;
    }
    last_rkt_ = rkt;
    last_partition_ = partition;
    last_state_ = &it->second;
    return last_state_;
}

void upstream_consumer::drain_wake_pipe() {
    char buf[64];
    while (::read(wake_.native_handle(), buf, sizeof buf) > 0) {
    }
}

void upstream_consumer::drain_locked(drain_mode mode) {
    // Closing: rd_kafka_consumer_close forwards the consumer queue to a queue of its own and
    // waits there for the group's TERMINATE reply; a consume on the consumer queue follows the
    // forward and would eat that reply, leaving the close (and the shutdown) waiting forever.
    if (!queue_ || destroy_started_ || closing_) {
        return;
    }
    last_drain_ = clock::now();
    std::int64_t buffered = 0;
    if (mode == drain_mode::bounded) {
        for (const auto& [tp, ps] : held_) {
            buffered += ps.buffered_bytes;
        }
    }
    // The cache lives for one drain: the messages that filled it hold their topic handles.
    reset_cache_locked();
    rd_kafka_message_t* batch[poll_drain_batch];
    while (mode == drain_mode::all || buffered < poll_drain_cap) {
        const ssize_t n = rd_kafka_consume_batch_queue(queue_, 0, batch, poll_drain_batch);
        if (n <= 0) {
            break;
        }
        for (ssize_t i = 0; i < n; ++i) {
            if (!batch[i]->err) {
                buffered += poll_size_of(batch[i]);
            }
            accept_locked(message_ptr(batch[i]));
        }
        if (static_cast<std::size_t>(n) < poll_drain_batch) {
            break;
        }
    }
    reset_cache_locked();
    if (mode == drain_mode::all) {
        pause_full_locked();
    }
}

void upstream_consumer::accept_locked(message_ptr m) {
    if (m->err) {
        if (m->rkt) {
            partition_state* ps = find_locked(m->rkt, m->partition);
            if (!ps) {
                return;
            }
            switch (m->err) {
            case RD_KAFKA_RESP_ERR__PARTITION_EOF:
                return;
            case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
            case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
                // auto.offset.reset=error: librdkafka stopped fetching; a seek restarts it.
                ps->error = api::backend_error(api::make_error_code(api::errc::offset_out_of_range),
                                               rd_kafka_message_errstr(m.get()));
                ps->sticky = true;
                ps->reported = false;
                return;
            default:
                if (!ps->sticky) {
                    ps->error = to_backend_error(m->err, rd_kafka_message_errstr(m.get()));
                }
                return;
            }
        }
        switch (m->err) {
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR__FATAL:
        case RD_KAFKA_RESP_ERR__AUTHENTICATION:
            call_error_ = to_backend_error(m->err, rd_kafka_message_errstr(m.get()));
            break;
        default:
            // Transient (a broker down, a transport error): librdkafka retries on its own.
            upstream_log().debug("upstream consumer: {}", rd_kafka_message_errstr(m.get()));
            break;
        }
        return;
    }
    partition_state* ps = find_locked(m->rkt, m->partition);
    if (!ps) {
        return;  // no longer held
    }
    ps->buffered_bytes += poll_size_of(m.get());
    ps->buffered.push_back(std::move(m));
}

void upstream_consumer::pause_full_locked() {
    partition_list_ptr l;
    for (auto& [tp, ps] : held_) {
        if (ps.buffered_bytes > poll_buffer_cap && !ps.paused && ps.in_rdkafka) {
            if (!l) {
                l.reset(rd_kafka_topic_partition_list_new(4));
            }
            rd_kafka_topic_partition_list_add(l.get(), tp.topic.value.c_str(),
                                              tp.partition.value);
            ps.paused = true;
        }
    }
    if (l) {
        rd_kafka_pause_partitions(rk_.get(), l.get());
    }
}

bool upstream_consumer::ready_locked(std::int32_t min_bytes) const {
    if (revoking_) {
        return false;
    }
    std::int64_t bytes = 0;
    for (const auto& [tp, ps] : held_) {
        if (ps.seeking) {
            continue;
        }
        if (ps.error && !(ps.sticky && ps.reported)) {
            return true;
        }
        bytes += ps.buffered_bytes;
    }
    return bytes > 0 && bytes >= min_bytes;
}

bool upstream_consumer::resolving_locked() const {
    if (revoking_) {
        return false;
    }
    for (const auto& [tp, ps] : held_) {
        if (ps.resolving) {
            return true;
        }
    }
    return false;
}

api::awaitable<api::backend_result<std::vector<api::polled_partition>>> upstream_consumer::poll(
    api::poll_limits limits, const api::message_sink& sink) {
    using result_t = api::backend_result<std::vector<api::polled_partition>>;
    auto self = shared_from_this();
    {
        std::lock_guard lock(mu_);
        if (closing_ || destroy_started_) {
            co_return result_t{};
        }
        poll_active_ = true;
    }
    // Declared first, destroyed last: every message taken below is gone by then.
    struct active_guard {
        upstream_consumer* c;
        ~active_guard() {
            std::lock_guard lock(c->mu_);
            c->poll_active_ = false;
            c->maybe_destroy_locked();
        }
    } guard{this};

    // Park: the librdkafka queue's io event, a seek or an assignment, a close and the
    // max_wait timer all write a byte to the wake pipe.
    // Positions are resolved first: past max_wait the poll still waits (up to the request
    // timeout) for held partitions whose position is being looked up.
    const auto start = clock::now();
    const auto deadline = start + std::max(limits.max_wait, std::chrono::milliseconds(0));
    const auto hard_deadline = std::max(deadline, start + opts_.request_timeout);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::optional<clock::time_point> armed;
    for (;;) {
        drain_wake_pipe();
        bool ready = false;
        bool resolving = false;
        {
            std::lock_guard lock(mu_);
            drain_locked(drain_mode::bounded);
            ready = closing_ || destroy_started_ || static_cast<bool>(call_error_) ||
                    ready_locked(limits.min_bytes);
            resolving = !ready && resolving_locked();
        }
        const auto now = clock::now();
        if (ready || (now >= deadline && (!resolving || now >= hard_deadline))) {
            break;
        }
        const auto wake_at = now < deadline ? deadline : hard_deadline;
        if (armed != wake_at) {
            armed = wake_at;
            timer.expires_at(wake_at);  // cancels the previous wait (no byte written)
            timer.async_wait([self](const boost::system::error_code& ec) {
                if (!ec) {
                    self->wake_poll();
                }
            });
        }
        boost::system::error_code ec;
        co_await wake_.async_wait(asio::posix::descriptor_base::wait_read,
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            break;
        }
    }
    timer.cancel();

    struct taken {
        api::topic_partition tp;
        std::uint64_t epoch = 0;
        std::vector<message_ptr> msgs;
        std::size_t handed = 0;
    };
    std::vector<taken> out;
    std::vector<api::polled_partition> result;
    {
        std::lock_guard lock(mu_);
        if (call_error_) {
            co_return api::backend_failure(std::exchange(call_error_, {}));
        }
        if (closing_ || destroy_started_ || revoking_ || held_.empty()) {
            co_return result_t{};
        }
        // Start one partition further each poll, so that a full budget does not always go
        // to the same partitions.
        const std::size_t n = held_.size();
        auto it = held_.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rotate_++ % n));
        std::int64_t budget = limits.max_bytes;
        bool first = true;
        out.reserve(n);
        result.reserve(n);
        for (std::size_t i = 0; i < n; ++i, ++it) {
            if (it == held_.end()) {
                it = held_.begin();
            }
            partition_state& ps = it->second;
            if ((!ps.position && !ps.error && ps.buffered.empty()) || ps.seeking) {
                continue;  // its position is still being resolved, or a seek confirmed
            }
            taken t{it->first, ps.epoch, {}, 0};
            std::int64_t pbytes = 0;
            while (!ps.buffered.empty()) {
                const std::int64_t sz = poll_size_of(ps.buffered.front().get());
                // The first record goes whatever its size (else it would never go).
                if (!first && (sz > budget || pbytes + sz > limits.partition_max_bytes)) {
                    break;
                }
                first = false;
                budget -= sz;
                pbytes += sz;
                ps.buffered_bytes -= sz;
                t.msgs.push_back(std::move(ps.buffered.front()));
                ps.buffered.pop_front();
            }
            api::polled_partition p;
            p.tp = it->first;
            p.error = ps.error;
            if (ps.sticky) {
                ps.reported = true;
            } else {
                ps.error = {};
            }
            result.push_back(std::move(p));
            out.push_back(std::move(t));
        }
    }

    // The sink runs without the lock.
    std::vector<std::byte> scratch;
    bool stopped = false;
    for (auto& t : out) {
        for (; !stopped && t.handed < t.msgs.size(); ++t.handed) {
            const auto view = poll_view_of(t.msgs[t.handed].get(), scratch);
            if (!sink(t.tp.topic, t.tp.partition, view)) {
                stopped = true;
                break;
            }
        }
    }

    std::lock_guard lock(mu_);
    partition_list_ptr resume;
    for (std::size_t i = 0; i < out.size(); ++i) {
        taken& t = out[i];
        auto it = held_.find(t.tp);
        if (it == held_.end() || it->second.epoch != t.epoch) {
            continue;  // sought or reassigned meanwhile: the messages are stale
        }
        partition_state& ps = it->second;
        if (t.handed > 0) {
            ps.position = t.msgs[t.handed - 1]->offset + 1;
        }
        // What the sink did not take is read again first next time.
        for (std::size_t j = t.msgs.size(); j > t.handed; --j) {
            ps.buffered_bytes += poll_size_of(t.msgs[j - 1].get());
            ps.buffered.push_front(std::move(t.msgs[j - 1]));
        }
        if (ps.paused && ps.buffered_bytes < poll_buffer_cap / 2 && rk_ && !destroy_started_) {
            if (!resume) {
                resume.reset(rd_kafka_topic_partition_list_new(4));
            }
            rd_kafka_topic_partition_list_add(resume.get(), t.tp.topic.value.c_str(),
                                              t.tp.partition.value);
            ps.paused = false;
        }
        api::polled_partition& p = result[i];
        p.next = offset(ps.position.value_or(-1));
        if (rk_ && !destroy_started_) {
            std::int64_t low = -1;
            std::int64_t high = -1;
            if (rd_kafka_get_watermark_offsets(rk_.get(), t.tp.topic.value.c_str(),
                                               t.tp.partition.value, &low,
                                               &high) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                p.high_watermark = offset(high >= 0 ? high : -1);
                p.log_start = offset(low >= 0 ? low : -1);
            }
        }
    }
    if (resume) {
        rd_kafka_resume_partitions(rk_.get(), resume.get());
    }
    // The budget went round starting elsewhere; the outcomes come in partition order.
    std::sort(result.begin(), result.end(),
              [](const auto& a, const auto& b) { return a.tp < b.tp; });
    co_return result;
}

}  // namespace sluice::backend::upstream
