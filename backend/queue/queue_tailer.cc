// queue_service: reading each queue's topic into its window (the tailer), fitting a queue's
// replayed state to its topic, and rebuilding FIFO deduplication windows at start.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "backend/api/records_memory.h"
#include "backend/logger.h"
#include "backend/queue/queue_service.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
using api::backend_error;
using api::errc;

namespace {

/// Bytes one tailer fetch reads per partition and in all.
constexpr std::int32_t tail_partition_bytes = 1 << 20;
constexpr std::int64_t tail_total_bytes = 8 << 20;
/// How often an idle tailer looks for new partitions of its topic.
constexpr auto describe_interval = std::chrono::seconds(2);

/// Runs `fn` after `pause` (a failed tailer's restart: never a tight loop).
asio::awaitable<void> restart_tailer_after(std::chrono::milliseconds pause,
                                           std::function<void()> fn) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(pause);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    fn();
}

}  // namespace

std::string queue_service::deduplication_key(const queue_config& c, const stored_message& m) {
    if (c.deduplicate_per_group) {
        return m.group_id.value_or("") + '\n' + m.deduplication_id.value_or("");
    }
    return m.deduplication_id.value_or("");
}

void queue_service::spawn_tailer(const handle_ptr& q) {
    std::optional<asio::any_io_executor> ex;
    {
        std::lock_guard lock(registry_mu_);
        ex = executor_;
    }
    {
        std::lock_guard lock(q->mu);
        if (!ex || q->tailing || q->deleted) {
            return;
        }
        q->tailing = true;
    }
    asio::co_spawn(*ex, tail(q), [this, q](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                queue_log().error("queue {}: the tailer failed: {}", q->meta.name, ex.what());
            }
            // A cluster that stayed unreachable past the topics' patience (client_backing.h)
            // throws: the tailer starts again rather than leave the queue unread.
            {
                std::lock_guard lock(q->mu);
                q->tailing = false;
            }
            if (!stopping_) {
                asio::co_spawn(*executor_, restart_tailer_after(settings_.tail_wait,
                                                                [this, q] { spawn_tailer(q); }),
                               asio::detached);
            }
        }
    });
}

api::awaitable<api::backend_error> queue_service::fit_to_topic(handle_ptr q, bool start_latest) {
    auto desc = co_await topics_.describe(topic_name(q->meta.name));
    if (!desc || desc->internal) {
        co_return backend_error{make_error_code(errc::queue_does_not_exist),
                              "The queue's topic no longer exists."};
    }
    std::optional<state_log::position> pos;
    if (desc->id != q->meta.topic_id) {
        // The topic was deleted and created again (by a Kafka client): its offsets start over,
        // so the queue's old state names nothing. A new incarnation starts at the log start.
        queue_log().warn("queue {}: its topic was re-created; the queue starts over", q->meta.name);
        std::lock_guard lock(q->mu);
        change_list changes;
        q->state.erase_all(changes);
        (void)append_locked(*q, changes);
        q->meta.queue_id = uuid::random();
        q->meta.topic_id = desc->id;
        q->meta.modified_ms = now();
        q->state = queue_state(desc->partitions, q->state.config(), settings_.limits);
        std::vector<encoded_record> recs{encode(q->meta)};
        auto p = append_locked(*q, {}, std::move(recs));
        if (!p) {
            co_return backend_error{make_error_code(errc::storage_error), p.error().message()};
        }
    }
    std::vector<api::offset_query> queries;
    for (std::int32_t p = 0; p < desc->partitions; ++p) {
        queries.push_back({topic_name(q->meta.name), partition_id(p), {api::offset_spec::kind::earliest, -1}});
        queries.push_back({topic_name(q->meta.name), partition_id(p), {api::offset_spec::kind::latest, -1}});
    }
    auto found = co_await records_.list_offsets(std::move(queries), api::isolation::read_committed);
    std::lock_guard lock(q->mu);
    q->state.set_partitions(desc->partitions);
    change_list changes;
    for (std::int32_t p = 0; p < desc->partitions; ++p) {
        const auto& start = found[static_cast<std::size_t>(2 * p)];
        const auto& end = found[static_cast<std::size_t>(2 * p + 1)];
        if (start.error || end.error) {
            co_return backend_error{make_error_code(errc::storage_error),
                                  fmt::format("The queue's topic cannot be read: {}",
                                              (start.error ? start.error : end.error).code.message())};
        }
        if (start_latest) {
            q->state.start_at(p, end.off.value);
        }
        q->state.clamp(p, start.off.value, end.off.value, changes);
    }
    auto p = append_locked(*q, changes);
    if (!p) {
        co_return backend_error{make_error_code(errc::storage_error), p.error().message()};
    }
    co_return backend_error{};
}

api::awaitable<void> queue_service::rebuild_deduplication(handle_ptr q) {
    std::int32_t partitions = 0;
    queue_config config;
    {
        std::lock_guard lock(q->mu);
        partitions = q->state.partitions();
        config = q->state.config();
    }
    const std::int64_t since = now() - settings_.deduplication_window_ms;
    std::vector<api::offset_query> queries;
    for (std::int32_t p = 0; p < partitions; ++p) {
        queries.push_back({topic_name(q->meta.name), partition_id(p), {api::offset_spec::kind::timestamp, since}});
    }
    auto found = co_await records_.list_offsets(std::move(queries), api::isolation::read_committed);
    std::size_t rebuilt = 0;
    for (std::int32_t p = 0; p < partitions; ++p) {
        std::int64_t pos = found[static_cast<std::size_t>(p)].off.value;
        while (pos >= 0) {
            api::fetch_request req;
            req.topics.push_back({topic_name(q->meta.name), {}, {{partition_id(p), offset(pos), tail_partition_bytes}}});
            req.isolation = api::isolation::read_committed;
            auto got = co_await records_.fetch(std::move(req));
            const auto& part = got.topics.at(0).partitions.at(0);
            if (part.error || part.records.size() == 0) {
                break;
            }
            auto bytes = api::read_records_into_memory(part.records);
            if (!bytes) {
                break;
            }
            std::lock_guard lock(q->mu);
            const std::int64_t end = decode_fetched(
                bytes->view(), part.aborted, [&](std::int64_t off, stored_message m) {
                    if (!m.deduplication_id || off < pos) {
                        return;
                    }
                    auto key = deduplication_key(config, m);
                    const std::int64_t expires = m.sent_ms + settings_.deduplication_window_ms;
                    q->dedup[key] = dedup_entry{{p, off}, expires, false};
                    q->dedup_expiry.emplace_back(expires, std::move(key));
                    ++rebuilt;
                });
            if (end <= pos) {
                break;
            }
            pos = end;
        }
    }
    if (rebuilt > 0) {
        queue_log().info("queue {}: {} deduplication ids of the last {} s restored", q->meta.name,
                         rebuilt, settings_.deduplication_window_ms / 1000);
    }
}

api::awaitable<void> queue_service::tail(handle_ptr q) {
    const auto ex = co_await asio::this_coro::executor;
    const std::string topic = q->meta.name;
    auto last_describe = std::chrono::steady_clock::now();
    for (;;) {
        std::vector<std::int64_t> positions;
        std::shared_ptr<wakeup> parked;
        {
            std::lock_guard lock(q->mu);
            if (q->deleted || stopping_) {
                q->tailing = false;
                co_return;
            }
            if (!q->state.wants_more()) {
                parked = std::make_shared<wakeup>(ex);
                q->tailer.park(parked);
            } else {
                for (std::int32_t p = 0; p < q->state.partitions(); ++p) {
                    positions.push_back(q->state.fetch_position(p));
                }
            }
        }
        if (parked) {
            co_await parked->wait_until(std::chrono::steady_clock::now() + settings_.tail_wait);
            continue;
        }
        api::fetch_request req;
        api::fetch_topic ft;
        ft.topic = topic_name(topic);
        for (std::size_t p = 0; p < positions.size(); ++p) {
            ft.partitions.push_back({partition_id(static_cast<std::int32_t>(p)), offset(positions[p]),
                                     tail_partition_bytes});
        }
        req.topics.push_back(std::move(ft));
        req.min_bytes = 1;
        req.max_wait = settings_.tail_wait;
        req.max_bytes = tail_total_bytes;
        req.isolation = api::isolation::read_committed;
        auto got = co_await records_.fetch(std::move(req));

        // Decode outside the queue's lock; apply under it.
        struct decoded {
            std::int32_t partition;
            std::vector<std::pair<std::int64_t, std::shared_ptr<const stored_message>>> messages;
            std::int64_t end = -1;
            std::int64_t high_watermark = 0;
            std::error_code error;
            std::int64_t log_start = 0;
        };
        std::vector<decoded> parts;
        bool any = false;
        bool topic_gone = false;
        const uuid fetched_id = got.topics.empty() ? uuid{} : got.topics[0].id;
        for (const auto& fp : got.topics.empty() ? std::vector<api::fetched_partition>{}
                                                 : got.topics[0].partitions) {
            decoded d;
            d.partition = fp.partition.value;
            d.high_watermark = fp.last_stable_offset.value;
            d.log_start = fp.log_start_offset.value;
            d.error = fp.error.code;
            if (fp.error) {
                topic_gone = topic_gone || api::reason(fp.error) == errc::unknown_topic_or_partition;
            } else if (fp.records.size() > 0) {
                auto bytes = api::read_records_into_memory(fp.records);
                if (bytes) {
                    std::size_t bad = 0;
                    d.end = decode_fetched(bytes->view(), fp.aborted,
                                           [&](std::int64_t off, stored_message m) {
                                               d.messages.emplace_back(
                                                   off, std::make_shared<const stored_message>(std::move(m)));
                                           },
                                           &bad);
                    if (bad > 0) {
                        queue_log().warn("queue {}: {} batches of partition {} do not decode; "
                                         "their records are skipped",
                                         topic, bad, d.partition);
                    }
                    any = any || d.end >= 0;
                } else {
                    d.error = bytes.error();
                }
            }
            parts.push_back(std::move(d));
        }
        if (topic_gone || (!fetched_id.is_zero() && fetched_id != q->meta.topic_id)) {
            // Deleted (or deleted and re-created) by a Kafka client: fit_to_topic tells which.
            auto err = co_await fit_to_topic(q, false);
            if (err.code) {
                queue_log().info("queue {} ends: {}", topic, err.message);
                std::lock_guard lock(q->mu);
                q->deleted = true;
                q->tailing = false;
                change_list changes;
                q->state.erase_all(changes);
                std::vector<encoded_record> extra{encode(queue_key{topic})};
                (void)append_locked(*q, changes, std::move(extra));
                q->receivers.wake_all();
                std::lock_guard reg(registry_mu_);
                if (auto it = queues_.find(topic); it != queues_.end() && it->second == q) {
                    queues_.erase(it);
                }
                co_return;
            }
            continue;
        }
        std::size_t read = 0;
        {
            std::lock_guard lock(q->mu);
            change_list changes;
            const std::int64_t t = now();
            std::size_t made_available = 0;
            for (auto& d : parts) {
                if (d.error) {
                    if (api::reason(d.error) == errc::offset_out_of_range) {
                        // Retention or DeleteRecords moved the log start past what we had read.
                        queue_log().warn("queue {}: partition {} was read from offset {} but its "
                                         "log now starts at {}; the messages below it are gone",
                                         topic, d.partition,
                                         positions[static_cast<std::size_t>(d.partition)],
                                         d.log_start);
                        q->state.truncate_below(d.partition, d.log_start, changes);
                    }
                    continue;
                }
                for (auto& [off, m] : d.messages) {
                    made_available += q->state.add({d.partition, off}, std::move(m), t) ? 1 : 0;
                    ++read;
                }
                if (d.end >= 0) {
                    q->state.skip_to(d.partition, d.end);
                }
                q->state.set_log_end(d.partition, d.high_watermark);
            }
            (void)append_locked(*q, changes);
            after_change(*q, made_available);
        }
        messages_read_.fetch_add(read, std::memory_order_relaxed);
        if (!any && std::chrono::steady_clock::now() - last_describe > describe_interval) {
            // Idle: has the topic grown partitions?
            last_describe = std::chrono::steady_clock::now();
            auto desc = co_await topics_.describe(topic_name(topic));
            if (desc) {
                std::lock_guard lock(q->mu);
                q->state.set_partitions(desc->partitions);
            }
        }
        const bool errors_only = !any && std::all_of(parts.begin(), parts.end(),
                                                     [](const decoded& d) { return bool(d.error); });
        if (errors_only && !parts.empty()) {
            // A storage error: do not spin on it.
            auto pause = std::make_shared<wakeup>(ex);
            co_await pause->wait_until(std::chrono::steady_clock::now() + settings_.tail_wait);
        }
    }
}

}  // namespace sluice::backend::queue
