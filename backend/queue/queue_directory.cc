#include "backend/queue/queue_directory.h"

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "backend/api/errc.h"
#include "backend/logger.h"
#include "backend/queue/queue_append.h"
#include "backend/queue/queue_errors.h"
#include "backend/queue/receipt.h"
#include "backend/queue/send_checks.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
using api::backend_error;
using api::errc;

namespace {

asio::awaitable<void> directory_pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

queue_directory::queue_directory(api::client& client, std::string state_topic, arn_scheme arns)
    : client_(client), topic_(std::move(state_topic)), arns_(std::move(arns)) {}

queue_directory::~queue_directory() { stop(); }

void queue_directory::start(asio::any_io_executor ex) {
    {
        std::lock_guard lock(mu_);
        if (started_) {
            return;
        }
        started_ = true;
    }
    asio::co_spawn(ex, follow(), [this](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                queue_log().error("{}: following the queues failed: {}", topic_, ex.what());
            }
        }
        std::lock_guard lock(mu_);
        done_ = true;
    });
}

void queue_directory::stop() {
    stopping_.store(true);
    std::shared_ptr<api::consumer> c;
    {
        std::lock_guard lock(mu_);
        if (!started_) {
            return;
        }
    }
    // The follower sees stopping_ after its poll (at most its wait).
    const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (done_) {
                c = std::exchange(consumer_, nullptr);
                break;
            }
        }
        if (std::chrono::steady_clock::now() >= by) {
            queue_log().warn("{}: the queue directory's follower did not end in time", topic_);
            std::lock_guard lock(mu_);
            c = std::exchange(consumer_, nullptr);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (c) {
        c->close(false);
        const auto close_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!c->closed() && std::chrono::steady_clock::now() < close_by) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
}

asio::awaitable<void> queue_directory::follow() {
    // Every partition of the state topic (a fleet's units of ownership each write their
    // queues' records to their own), as many as the cluster says when the follower starts.
    std::vector<api::topic_partition> parts;
    while (parts.empty()) {
        if (stopping_.load()) {
            co_return;
        }
        auto found = co_await client_.admin().describe_topic(topic_name(topic_));
        if (found) {
            for (std::size_t i = 0; i < found->partitions.size(); ++i) {
                parts.push_back({topic_name(topic_), partition_id(static_cast<std::int32_t>(i))});
            }
        }
        if (parts.empty()) {  // not created yet (the fleet creates it), or no cluster
            co_await directory_pause(std::chrono::milliseconds(500));
        }
    }
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    o.isolation = api::isolation::read_committed;
    o.client.client_id = "sluice-queue-directory";
    auto c = client_.open_consumer(std::move(o), co_await asio::this_coro::executor);
    {
        std::lock_guard lock(mu_);
        consumer_ = c;
    }
    std::vector<std::pair<api::topic_partition, offset>> from;
    for (const auto& tp : parts) {
        from.emplace_back(tp, offset(0));  // below the log start: reset to the earliest
    }
    c->assign(parts);
    c->seek(std::move(from));
    queue_log().info("{}: following the queues in its {} partition{} (a gateway that does not "
                     "own them sends to standard queues itself)",
                     topic_, parts.size(), parts.size() == 1 ? "" : "s");
    while (!stopping_.load()) {
        api::poll_limits limits;
        limits.max_wait = std::chrono::milliseconds(500);
        auto polled = co_await c->poll(
            limits, [this](const topic_name&, partition_id, const protocol::kafka::record_view& r) {
                read_.fetch_add(1, std::memory_order_relaxed);
                if (r.key) {
                    apply(*r.key, r.value);
                }
                return true;
            });
        if (!polled) {
            queue_log().debug("{}: the queue directory's read failed ({}); trying again",
                              topic_, polled.error().code.message());
            co_await directory_pause(std::chrono::milliseconds(500));
        }
    }
}

void queue_directory::apply(protocol::bytes_view key, std::optional<protocol::bytes_view> value) {
    if (!names_a_queue(key)) {
        return;  // messages, cursors, leases, tasks: the owner's
    }
    auto decoded = decode(key, value);
    if (!decoded) {
        queue_log().warn("{}: a queue record that does not decode was skipped", topic_);
        return;
    }
    std::lock_guard lock(mu_);
    if (const auto* q = std::get_if<queue_record>(&*decoded)) {
        entry e{*q, config_from_stored(is_fifo_name(q->name), q->attributes, arns_)};
        auto it = queues_.find(q->name);
        const bool fresh = it == queues_.end() || it->second.meta.queue_id != q->queue_id;
        if (fresh) {
            queue_log().info("{}: queue {} known here ({}: its sends {})", topic_, q->name,
                             e.config.fifo ? "FIFO" : "standard",
                             e.config.fifo ? "go through the owner" : "are produced here");
        }
        queues_.insert_or_assign(q->name, std::move(e));
    } else if (const auto* k = std::get_if<queue_key>(&*decoded)) {
        queues_.erase(k->name);
    } else if (const auto* d = std::get_if<deleted_queue_record>(&*decoded)) {
        queues_.erase(d->name);
    }
}

std::optional<queue_directory::entry> queue_directory::find(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = queues_.find(name);
    if (it == queues_.end()) {
        return std::nullopt;
    }
    return it->second;
}

bool queue_directory::sends_here(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = queues_.find(name);
    return it != queues_.end() && !it->second.config.fifo;
}

api::awaitable<api::backend_result<std::vector<api::sent_message>>> queue_directory::send_messages(
    api::producer& producer, std::string name, std::vector<api::outgoing_message> messages,
    std::int64_t now_ms) {
    auto q = find(name);
    if (!q) {
        co_return std::unexpected(no_queue());
    }
    if (q->config.fifo) {
        co_return std::unexpected(backend_error{
            make_error_code(errc::backend_unavailable),
            "A FIFO queue's sends go through the gateway that owns the queues: try again."});
    }
    auto partitions = co_await producer.partitions(topic_name(name));
    if (!partitions) {
        if (api::reason(partitions.error().code) == errc::unknown_topic_or_partition) {
            co_return std::unexpected(no_queue());
        }
        co_return std::unexpected(partitions.error());
    }
    std::vector<api::sent_message> out(messages.size());
    std::vector<prepared> prep(messages.size());
    std::vector<append_item> items;
    std::vector<std::size_t> item_of;
    std::uint32_t rr = round_robin_.fetch_add(static_cast<std::uint32_t>(messages.size()),
                                              std::memory_order_relaxed);
    for (std::size_t i = 0; i < messages.size(); ++i) {
        prep[i] = prepare(q->config, messages[i], now_ms);
        if (prep[i].error.code) {
            out[i].error = prep[i].error;
            continue;
        }
        append_item it;
        it.body = &messages[i].body;
        it.attributes = &messages[i].attributes;
        it.fields.timestamp_ms = now_ms;
        it.fields.visible_from_ms = prep[i].visible_from_ms;
        it.fields.group_id = &messages[i].group_id;
        it.fields.deduplication_id = &messages[i].deduplication_id;
        it.fields.trace_header = &prep[i].trace;
        it.partition = partition_for(messages[i].group_id, *partitions, rr);
        items.push_back(it);
        item_of.push_back(i);
    }
    if (items.empty()) {
        co_return out;
    }
    auto offsets = co_await send_messages_through(producer, name, items);
    for (std::size_t k = 0; k < items.size(); ++k) {
        const std::size_t i = item_of[k];
        const auto& off = offsets[k];
        if (!off) {
            out[i].error = not_stored(off.error());
            continue;
        }
        out[i].message_id = message_id(q->meta.queue_id, items[k].partition, *off);
    }
    co_return out;
}

}  // namespace sluice::backend::queue
