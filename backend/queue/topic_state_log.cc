#include "backend/queue/topic_state_log.h"

#include <algorithm>
#include <future>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "backend/api/errc.h"
#include "backend/logger.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;

namespace {

std::string bytes_as_string(const std::vector<std::byte>& b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

asio::awaitable<void> state_log_pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

bool state_log_retryable(const api::backend_error& e) {
    const auto r = api::reason(e.code);
    return r == api::errc::backend_unavailable || r == api::errc::request_timed_out ||
           r == api::errc::not_leader || r == api::errc::coordinator_not_available;
}

}  // namespace

topic_state_log::topic_state_log(api::client& client, topic_state_log_options opts)
    : client_(client), opts_(std::move(opts)), work_(io_.get_executor()) {
    thread_ = std::thread([this] { io_.run(); });
    asio::co_spawn(io_, write_loop(), [](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                queue_log().error("queue state writer failed: {}", ex.what());
            }
        }
    });
}

topic_state_log::~topic_state_log() {
    std::shared_ptr<wakeup> w;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        w = writer_parked_;
    }
    if (w) {
        w->wake();
    }
    // The writer sends what is queued: every answered call's records are stored already, so
    // this is the tail of unanswered ones (bounded: shutdown must end).
    const auto deadline = std::chrono::steady_clock::now() +
                          std::min<std::chrono::milliseconds>(opts_.flush_timeout,
                                                              std::chrono::seconds(5));
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (writer_done_) {
                break;
            }
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            queue_log().warn("{}: queue state not stored by shutdown", opts_.topic);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    work_.reset();
    io_.stop();
    thread_.join();
}

template <typename T>
T topic_state_log::run_on_thread(asio::awaitable<T> a) {
    std::promise<T> done;
    auto got = done.get_future();
    asio::co_spawn(io_, std::move(a), [&done](std::exception_ptr e, T value) {
        if (e) {
            done.set_exception(e);
        } else {
            done.set_value(std::move(value));
        }
    });
    return got.get();
}

void topic_state_log::open() {
    run_on_thread([](topic_state_log* self) -> asio::awaitable<bool> {
        co_await self->ensure_topic();
        co_return true;
    }(this));
}

asio::awaitable<void> topic_state_log::ensure_topic() {
    const auto deadline = std::chrono::steady_clock::now() + opts_.start_deadline;
    const topic_name name(opts_.topic);
    for (;;) {
        auto found = co_await client_.admin().describe_topic(name);
        if (found) {
            const auto count = static_cast<std::int32_t>(found->partitions.size());
            if (opts_.partition < 0 || opts_.partition >= count) {
                throw std::runtime_error(fmt::format(
                    "{}: the queue state topic has {} partition{}; partition {} is not one of "
                    "them",
                    opts_.topic, count, count == 1 ? "" : "s", opts_.partition));
            }
            partition_count_ = count;
            co_return;
        }
        api::backend_error err = found.error();
        if (api::reason(err.code) == api::errc::unknown_topic_or_partition) {
            api::new_topic spec;
            spec.name = name;
            spec.partitions = std::max(opts_.partitions_when_created, opts_.partition + 1);
            spec.configs["cleanup.policy"] = "compact";
            const std::int32_t partitions = spec.partitions;
            auto made = co_await client_.admin().create_topic(std::move(spec));
            if (made) {
                queue_log().info("{}: created (compacted, {} partition{})", opts_.topic,
                                 partitions, partitions == 1 ? "" : "s");
                continue;  // describe it again
            }
            if (api::reason(made.error().code) == api::errc::topic_already_exists) {
                continue;  // describe it again
            }
            err = made.error();
        }
        if (!state_log_retryable(err) || std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(fmt::format("{}: the queue state topic cannot be opened: {}",
                                                 opts_.topic,
                                                 err.message.empty() ? err.code.message()
                                                                     : err.message));
        }
        queue_log().warn("{}: the cluster cannot be reached ({}); trying again", opts_.topic,
                         err.code.message());
        co_await state_log_pause(std::chrono::milliseconds(500));
    }
}

result<state_log::position> topic_state_log::append(std::span<const encoded_record> records) {
    std::shared_ptr<wakeup> w;
    position p;
    {
        std::lock_guard lock(mu_);
        for (const auto& r : records) {
            api::outgoing_record o;
            o.key = bytes_as_string(r.key);
            if (r.value) {
                o.value = bytes_as_string(*r.value);
            }
            o.partition = opts_.partition;
            pending_.push_back(std::move(o));
        }
        appended_ += static_cast<std::int64_t>(records.size());
        p.end = appended_;
        w = std::exchange(writer_parked_, nullptr);
    }
    if (w) {
        w->wake();
    }
    return p;
}

asio::awaitable<void> topic_state_log::write_loop() {
    const auto ex = co_await asio::this_coro::executor;
    const topic_name name(opts_.topic);
    for (;;) {
        std::vector<api::outgoing_record> batch;
        std::int64_t upto = 0;
        std::shared_ptr<wakeup> parked;
        {
            std::lock_guard lock(mu_);
            if (pending_.empty()) {
                if (stopping_) {
                    writer_done_ = true;
                    co_return;
                }
                parked = std::make_shared<wakeup>(ex);
                writer_parked_ = parked;
            } else {
                batch.swap(pending_);
                upto = appended_;
            }
        }
        if (parked) {
            co_await parked->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(1));
            continue;
        }
        const auto sent_at = std::chrono::steady_clock::now();
        for (;;) {
            api::backend_error err = co_await send_batch(name, batch);
            if (!err) {
                break;
            }
            if (opts_.txn && api::reason(err.code) == api::errc::producer_fenced) {
                queue_log().error("{}: the queue state was not stored: a newer owner of the "
                                  "queues fenced this gateway's writes ({}); {} records dropped",
                                  opts_.topic, err.message.empty() ? err.code.message()
                                                                   : err.message,
                                  batch.size());
                std::function<void()> fenced_cb;
                {
                    std::lock_guard lock(mu_);
                    fenced_ = true;
                    writer_done_ = true;
                    pending_.clear();
                    flushes_.wake_all();
                    fenced_cb = opts_.on_fenced;
                }
                if (fenced_cb) {
                    fenced_cb();
                }
                co_return;
            }
            queue_log().warn("{}: {} queue state records not stored ({}); trying again",
                             opts_.topic, batch.size(),
                             err.message.empty() ? err.code.message() : err.message);
            {
                std::lock_guard lock(mu_);
                if (stopping_) {
                    writer_done_ = true;  // shutting down: unanswered calls' records go
                    co_return;
                }
            }
            co_await state_log_pause(std::chrono::milliseconds(500));
        }
        std::lock_guard lock(mu_);
        stored_ = upto;
        flushes_.prune();
        queue_log().debug("{}: {} records stored in {} ms ({} calls waited; {} records queued "
                          "meanwhile)",
                          opts_.topic, batch.size(),
                          std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - sent_at)
                              .count(),
                          flushes_.size(), pending_.size());
        flushes_.wake_all();
    }
}

asio::awaitable<api::backend_error> topic_state_log::send_batch(
    const topic_name& name, const std::vector<api::outgoing_record>& batch) {
    auto copy = batch;
    if (opts_.txn) {
        auto done = co_await opts_.txn->send_committed(name, std::move(copy), opts_.flush_timeout);
        co_return done ? api::backend_error{} : done.error();
    }
    api::send_options so;
    so.timeout = opts_.flush_timeout;
    auto sent = co_await client_.producer().send(name, std::move(copy), so);
    if (!sent) {
        co_return sent.error();
    }
    for (const auto& d : *sent) {
        if (d.error) {
            co_return d.error;
        }
    }
    co_return api::backend_error{};
}

asio::awaitable<result<void>> topic_state_log::flush(position p) {
    const auto ex = co_await asio::this_coro::executor;
    const auto deadline = std::chrono::steady_clock::now() + opts_.flush_timeout;
    {
        // A position past the end (the service flushes "everything" so): what is appended now.
        std::lock_guard lock(mu_);
        p.end = std::min(p.end, appended_);
    }
    for (;;) {
        std::shared_ptr<wakeup> w;
        {
            std::lock_guard lock(mu_);
            if (stored_ >= p.end) {
                co_return result<void>{};
            }
            if (fenced_) {
                co_return fail(api::errc::producer_fenced);
            }
            w = std::make_shared<wakeup>(ex);
            flushes_.prune();
            flushes_.park(w);
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            co_return fail(api::errc::request_timed_out);
        }
        co_await w->wait_until(deadline);
    }
}

result<void> topic_state_log::replay(
    const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn) {
    return run_on_thread(read_all(fn));
}

asio::awaitable<result<void>> topic_state_log::read_all(
    const std::function<void(protocol::bytes_view, std::optional<protocol::bytes_view>)>& fn) {
    const auto deadline = std::chrono::steady_clock::now() + opts_.start_deadline;
    const api::topic_partition tp{topic_name(opts_.topic), partition_id(opts_.partition)};
    std::int64_t start = -1;
    std::int64_t end = -1;
    for (;;) {
        std::vector<api::offset_query> q{
            {tp.topic, tp.partition, {api::offset_spec::kind::earliest, -1}},
            {tp.topic, tp.partition, {api::offset_spec::kind::latest, -1}}};
        // Under transactions: up to the last stable offset (what is committed).
        auto found = co_await client_.admin().list_offsets(
            std::move(q),
            opts_.txn ? api::isolation::read_committed : api::isolation::read_uncommitted);
        if (found.size() == 2 && !found[0].error && !found[1].error) {
            start = found[0].off.value;
            end = found[1].off.value;
            break;
        }
        const api::backend_error err = found.size() == 2
                                           ? (found[0].error ? found[0].error : found[1].error)
                                           : api::backend_error(api::errc::unknown);
        if (!state_log_retryable(err) || std::chrono::steady_clock::now() >= deadline) {
            queue_log().error("{}: its offsets cannot be read: {}", opts_.topic,
                              err.code.message());
            co_return fail(err.code ? err.code : make_error_code(api::errc::unknown));
        }
        co_await state_log_pause(std::chrono::milliseconds(500));
    }
    if (end <= start) {
        queue_log().info("{}: empty", opts_.topic);
        co_return result<void>{};
    }
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    o.client.client_id = "sluice-queue-state";
    if (opts_.txn) {
        o.isolation = api::isolation::read_committed;
    }
    auto c = client_.open_consumer(std::move(o), co_await asio::this_coro::executor);
    c->assign({tp});
    c->seek({{tp, offset(start)}});
    std::int64_t next = start;
    std::size_t count = 0;
    result<void> outcome;
    // Read committed, the last offsets below the end may be transaction markers (and aborted
    // records), which no poll hands out and which leave the position where it is: polls that
    // bring nothing for a while (everything below the end is fetchable at once) end the replay.
    int empty_polls = 0;
    constexpr int txn_tail_polls = 4;
    while (next < end) {
        if (opts_.txn && empty_polls >= txn_tail_polls) {
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            queue_log().error("{}: replay stopped at offset {} of {} (deadline)", opts_.topic,
                              next, end);
            outcome = fail(api::errc::request_timed_out);
            break;
        }
        api::poll_limits limits;
        limits.max_wait = std::chrono::milliseconds(500);
        auto polled = co_await c->poll(
            limits, [&](const topic_name&, partition_id, const protocol::kafka::record_view& r) {
                if (r.offset >= end) {
                    return false;
                }
                if (r.key) {
                    fn(*r.key, r.value);
                    ++count;
                }
                next = r.offset + 1;
                return true;
            });
        if (!polled) {
            if (!state_log_retryable(polled.error())) {
                outcome = fail(polled.error().code);
                break;
            }
            continue;
        }
        const std::int64_t before = next;
        for (const auto& pp : *polled) {
            if (pp.error) {
                queue_log().warn("{}: reading failed: {}", opts_.topic,
                                 pp.error.code.message());
            }
            next = std::max(next, pp.next.value);
        }
        empty_polls = next == before ? empty_polls + 1 : 0;
    }
    c->close(false);
    const auto close_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!c->closed() && std::chrono::steady_clock::now() < close_by) {
        co_await state_log_pause(std::chrono::milliseconds(5));
    }
    if (outcome) {
        queue_log().info("{}: {} records replayed (offsets {} to {})", opts_.topic, count, start,
                         end);
    }
    co_return outcome;
}

}  // namespace sluice::backend::queue
