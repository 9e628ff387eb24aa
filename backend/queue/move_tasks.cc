// queue_service: message move tasks (StartMessageMoveTask, ListMessageMoveTasks,
// CancelMessageMoveTask): moving what a dead-letter queue held when the task started back to
// the queues the messages came from (or to one destination), at a bounded rate. A task's
// record is persisted after every batch; a task that was running when the process stopped
// continues after the restart (messages it had moved but not yet deleted from the source are
// moved again: at least once, as SQS).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

#include "backend/logger.h"
#include "backend/queue/queue_append.h"
#include "backend/queue/queue_service.h"
#include "protocol/core/base64.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
using api::backend_error;
using api::errc;

namespace {

constexpr std::int32_t move_batch = 10;
constexpr std::int64_t move_hold_ms = 60000;
constexpr std::size_t tasks_kept_per_source = 10;

backend_error not_found(const std::string& what) {
    return {make_error_code(errc::resource_not_found),
            fmt::format("The resource that you specified for the {} parameter doesn't exist.", what)};
}

api::move_task view_of(const task_record& r) {
    api::move_task t;
    t.task_handle = r.handle;
    t.status = r.status;
    t.source_arn = r.source;  // replaced by the ARN by the caller
    t.destination_arn = r.destination_arn;
    if (r.max_per_second > 0) {
        t.max_per_second = r.max_per_second;
    }
    t.moved = r.moved;
    t.to_move = r.to_move;
    t.failure_reason = r.failure_reason;
    t.started_timestamp_ms = r.started_ms;
    return t;
}

}  // namespace

void queue_service::spawn_task(const std::shared_ptr<task_state>& task) {
    std::optional<asio::any_io_executor> ex;
    {
        std::lock_guard lock(registry_mu_);
        ex = executor_;
    }
    {
        std::lock_guard lock(task->mu);
        const bool active = task->record.status == "RUNNING" || task->record.status == "CANCELLING";
        if (!ex || task->running || !active) {
            return;
        }
        task->running = true;
    }
    asio::co_spawn(*ex, run_task(task), [](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                queue_log().error("a message move task failed: {}", ex.what());
            }
        }
    });
}

api::awaitable<void> queue_service::persist_task(std::shared_ptr<task_state> task) {
    result<state_log::position> pos = state_log::position{0};
    {
        std::lock_guard lock(task->mu);
        std::vector<encoded_record> recs{encode(task->record)};
        pos = log_.append(recs);
    }
    if (!pos) {
        queue_log().warn("move task {}: its state could not be stored: {}", task->record.handle,
                         pos.error().message());
        co_return;
    }
    (void)co_await flush(*pos);
}

api::awaitable<void> queue_service::run_task(std::shared_ptr<task_state> task) {
    const auto ex = co_await asio::this_coro::executor;
    const auto started = std::chrono::steady_clock::now();
    std::int64_t moved_here = 0;
    auto finish = [&](std::string status, std::optional<std::string> reason) {
        std::lock_guard lock(task->mu);
        task->record.status = std::move(status);
        task->record.failure_reason = std::move(reason);
        task->running = false;
    };
    for (;;) {
        if (stopping_) {
            std::lock_guard lock(task->mu);
            task->running = false;
            co_return;  // still RUNNING in the log: it continues after a restart
        }
        task_record rec;
        {
            std::lock_guard lock(task->mu);
            rec = task->record;
        }
        if (task->cancel || rec.status == "CANCELLING") {
            finish("CANCELLED", std::nullopt);
            co_await persist_task(task);
            co_return;
        }
        handle_ptr src = find(rec.source);
        if (!src || src->meta.queue_id != rec.source_queue_id) {
            finish("FAILED", "The source queue was deleted.");
            co_await persist_task(task);
            co_return;
        }
        std::vector<taken_message> batch;
        bool remaining = false;
        std::shared_ptr<wakeup> parked;
        {
            std::lock_guard lock(src->mu);
            change_list changes;
            const std::int64_t t = now();
            const std::size_t made = src->state.advance(t, changes);
            (void)append_locked(*src, changes);
            after_change(*src, made);
            // With a rate, batches no larger than a second's worth.
            const std::int32_t n =
                rec.max_per_second > 0 ? std::min(move_batch, rec.max_per_second) : move_batch;
            batch = src->state.take_for_move(n, rec.end_offsets, move_hold_ms, t);
            remaining = !batch.empty() || src->state.any_below(rec.end_offsets);
            if (batch.empty() && remaining) {
                // What is left is in flight with consumers, or not read yet: wait for it.
                parked = std::make_shared<wakeup>(ex);
                src->receivers.park(parked);
            }
        }
        if (!remaining) {
            finish("COMPLETED", std::nullopt);
            co_await persist_task(task);
            queue_log().info("move task {} completed: {} messages moved from {}", rec.handle,
                             rec.moved, rec.source);
            co_return;
        }
        if (parked) {
            co_await parked->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(1));
            continue;
        }
        std::vector<message_ref> missing;
        for (const auto& m : batch) {
            if (!m.body) {
                missing.push_back(m.ref);
            }
        }
        read_outcome loaded;
        if (!missing.empty()) {
            loaded = co_await read_messages(src, missing);
            for (auto& m : batch) {
                if (!m.body) {
                    if (auto it = loaded.found.find(m.ref); it != loaded.found.end()) {
                        m.body = it->second;
                    }
                }
            }
        }
        // Where each message goes: the task's destination, or the queue it came from.
        std::map<std::string, std::vector<std::size_t>> by_destination;
        std::optional<std::string> failure;
        std::vector<message_ref> gone;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (!batch[i].body) {
                // Gone for good: done. Not readable now: it stays held, and is back in the
                // queue when the hold ends (the task takes it again then).
                if (loaded.gone.contains(batch[i].ref)) {
                    gone.push_back(batch[i].ref);
                }
                continue;
            }
            const auto arn = rec.destination_arn ? rec.destination_arn : batch[i].body->dead_letter_source_arn;
            auto dest = arn ? settings_.arns.queue_of(*arn) : std::nullopt;
            handle_ptr dq = dest ? find(*dest) : nullptr;
            if (!dq) {
                failure = arn ? fmt::format("The destination queue {} does not exist.", *arn)
                              : std::string("A message has no source queue to move back to; "
                                            "start the task with a DestinationArn.");
                break;
            }
            // The source ARN is a record header any producer to the dead-letter queue can write:
            // a message goes back only to a queue whose RedrivePolicy names this one (whose
            // WRITE the task's starter was checked for), never to any queue it names.
            const auto redrives_here = [&] {
                std::lock_guard lock(dq->mu);
                const auto& r = dq->state.config().redrive;
                return r && r->dead_letter_queue == rec.source;
            };
            if (!rec.destination_arn && !redrives_here()) {
                failure = fmt::format(
                    "The source queue {} of a message does not name {} as its dead-letter queue; "
                    "start the task with a DestinationArn.",
                    *arn, settings_.arns.arn(rec.source));
                break;
            }
            by_destination[*dest].push_back(i);
        }
        if (failure) {
            finish("FAILED", failure);
            co_await persist_task(task);
            co_return;
        }
        std::vector<message_ref> done = gone;
        for (const auto& [dest, indexes] : by_destination) {
            handle_ptr dq = find(dest);
            std::int32_t partitions = 1;
            if (dq) {
                std::lock_guard lock(dq->mu);
                partitions = dq->state.partitions();
            }
            std::vector<append_item> items;
            for (auto i : indexes) {
                const auto& m = *batch[i].body;
                append_item it;
                it.body = &m.body;
                it.attributes = &m.attributes;
                it.fields.timestamp_ms = m.sent_ms;
                it.fields.group_id = &m.group_id;
                it.fields.trace_header = &m.trace_header;
                std::uint32_t rr = static_cast<std::uint32_t>(i);
                it.partition = partition_for(m.group_id, partitions, rr);
                items.push_back(it);
            }
            auto offsets = co_await append_messages(records_, producer_, dest, items);
            for (std::size_t k = 0; k < indexes.size(); ++k) {
                if (offsets[k]) {
                    done.push_back(batch[indexes[k]].ref);
                }
            }
        }
        std::optional<state_log::position> pos;
        {
            std::lock_guard lock(src->mu);
            change_list changes;
            for (const auto& ref : done) {
                src->state.dead_lettered(ref, changes);
            }
            if (auto p = append_locked(*src, changes)) {
                pos = *p;
            }
        }
        (void)co_await flush(pos);
        const auto n = static_cast<std::int64_t>(done.size() - gone.size());
        moved_here += n;
        {
            std::lock_guard lock(task->mu);
            task->record.moved += n;
        }
        co_await persist_task(task);
        if (rec.max_per_second > 0) {
            // Keep to the rate over the whole run: the n-th message no earlier than n/rate s.
            const auto due = started + std::chrono::milliseconds(moved_here * 1000 / rec.max_per_second);
            if (due > std::chrono::steady_clock::now()) {
                auto pause = std::make_shared<wakeup>(ex);
                co_await pause->wait_until(due);
            }
        }
    }
}

api::awaitable<api::backend_result<std::string>> queue_service::start_message_move_task(
    std::string source_arn, std::optional<std::string> destination_arn,
    std::optional<std::int32_t> max_per_second) {
    auto source = settings_.arns.queue_of(source_arn);
    handle_ptr src = source ? find(*source) : nullptr;
    if (!src) {
        co_return std::unexpected(not_found("SourceArn"));
    }
    bool is_dlq = false;
    {
        std::vector<handle_ptr> all;
        {
            std::lock_guard lock(registry_mu_);
            for (auto& [n, q] : queues_) {
                all.push_back(q);
            }
        }
        for (auto& q : all) {
            std::lock_guard lock(q->mu);
            const auto& r = q->state.config().redrive;
            is_dlq = is_dlq || (r && r->dead_letter_queue == *source);
        }
    }
    if (!is_dlq) {
        co_return std::unexpected(backend_error{make_error_code(errc::invalid_parameter_value),
                                              "Source queue must be configured as a Dead Letter "
                                              "Queue."});
    }
    if (destination_arn) {
        auto dest = settings_.arns.queue_of(*destination_arn);
        if (!dest || !find(*dest)) {
            co_return std::unexpected(not_found("DestinationArn"));
        }
    }
    if (max_per_second && (*max_per_second < 1 || *max_per_second > 500)) {
        co_return std::unexpected(backend_error{
            make_error_code(errc::invalid_parameter_value),
            fmt::format("Value {} for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: "
                        "must be between 1 and 500.",
                        *max_per_second)});
    }
    std::int32_t partitions = 1;
    {
        std::lock_guard lock(src->mu);
        partitions = src->state.partitions();
    }
    auto ends = co_await log_ends(*source, partitions);
    auto task = std::make_shared<task_state>();
    std::vector<encoded_record> recs;
    {
        std::lock_guard lock(registry_mu_);
        std::vector<std::pair<std::int64_t, std::string>> of_source;
        for (auto& [h, t] : tasks_) {
            std::lock_guard tl(t->mu);
            if (t->record.source != *source) {
                continue;
            }
            if (t->record.status == "RUNNING" || t->record.status == "CANCELLING") {
                co_return std::unexpected(backend_error{
                    make_error_code(errc::unsupported_operation),
                    "There is already a task running. Only one active task is allowed for a "
                    "source queue ARN at a given time."});
            }
            of_source.emplace_back(t->record.started_ms, h);
        }
        // Keep the most recent tasks of a source; older ones are forgotten.
        std::sort(of_source.rbegin(), of_source.rend());
        for (std::size_t i = tasks_kept_per_source - 1; i < of_source.size(); ++i) {
            recs.push_back(encode(task_key{of_source[i].second}));
            tasks_.erase(of_source[i].second);
        }
        auto& r = task->record;
        const auto id = uuid::random();
        r.handle = protocol::base64_encode(
            std::string_view(reinterpret_cast<const char*>(id.bytes.data()), id.bytes.size()),
            protocol::base64_alphabet::url);
        r.source = *source;
        r.source_queue_id = src->meta.queue_id;
        r.destination_arn = destination_arn;
        r.max_per_second = max_per_second.value_or(-1);
        r.status = "RUNNING";
        r.started_ms = now();
        r.end_offsets = ends;
        {
            std::lock_guard ql(src->mu);
            r.to_move = src->state.undone_below(ends);
        }
        tasks_[r.handle] = task;
        recs.push_back(encode(r));
    }
    auto pos = log_.append(recs);
    if (!pos) {
        co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                              pos.error().message()});
    }
    if (auto f = co_await flush(*pos); !f) {
        co_return std::unexpected(backend_error{make_error_code(errc::storage_error),
                                              f.error().message()});
    }
    spawn_task(task);
    co_return task->record.handle;
}

api::awaitable<api::backend_result<std::vector<api::move_task>>> queue_service::list_message_move_tasks(
    std::string source_arn, std::int32_t max_results) {
    auto source = settings_.arns.queue_of(source_arn);
    if (!source || !find(*source)) {
        co_return std::unexpected(not_found("SourceArn"));
    }
    if (max_results < 1 || max_results > 10) {
        co_return std::unexpected(backend_error{
            make_error_code(errc::invalid_parameter_value),
            fmt::format("Value {} for parameter MaxResults is invalid. Reason: must be between 1 "
                        "and 10.",
                        max_results)});
    }
    std::vector<api::move_task> out;
    {
        std::lock_guard lock(registry_mu_);
        for (auto& [h, t] : tasks_) {
            std::lock_guard tl(t->mu);
            if (t->record.source == *source) {
                out.push_back(view_of(t->record));
                out.back().source_arn = settings_.arns.arn(*source);
            }
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.started_timestamp_ms > b.started_timestamp_ms;
    });
    if (out.size() > static_cast<std::size_t>(max_results)) {
        out.resize(static_cast<std::size_t>(max_results));
    }
    co_return out;
}

std::optional<api::move_task> queue_service::find_message_move_task(
    const std::string& task_handle) const {
    std::lock_guard lock(registry_mu_);
    auto it = tasks_.find(task_handle);
    if (it == tasks_.end()) {
        return std::nullopt;
    }
    std::lock_guard tl(it->second->mu);
    auto t = view_of(it->second->record);
    t.source_arn = settings_.arns.arn(it->second->record.source);
    return t;
}

api::awaitable<api::backend_result<std::int64_t>> queue_service::cancel_message_move_task(
    std::string task_handle) {
    std::shared_ptr<task_state> task;
    {
        std::lock_guard lock(registry_mu_);
        if (auto it = tasks_.find(task_handle); it != tasks_.end()) {
            task = it->second;
        }
    }
    if (!task) {
        co_return std::unexpected(not_found("TaskHandle"));
    }
    std::int64_t moved = 0;
    {
        std::lock_guard lock(task->mu);
        if (task->record.status != "RUNNING") {
            co_return std::unexpected(backend_error{make_error_code(errc::resource_not_found),
                                                  "Only active tasks can be cancelled."});
        }
        task->cancel = true;
        task->record.status = "CANCELLING";
        moved = task->record.moved;
    }
    co_await persist_task(task);
    co_return moved;
}

}  // namespace sluice::backend::queue
