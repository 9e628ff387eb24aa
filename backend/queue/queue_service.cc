// queue_service: loading, the registry of queues, and queue administration (create, adopt,
// delete, attributes, tags, permissions, purge, views).
#include "backend/queue/queue_service.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

#include "backend/api/sluice_topics.h"
#include "backend/logger.h"
#include "backend/queue/policy.h"
#include "backend/queue/queue_errors.h"

namespace sluice::backend::queue {
namespace asio = boost::asio;
using api::backend_error;
using api::errc;

namespace {

/// The queues' clock: the wall clock when the service starts, moved on by the steady clock.
/// Visibility timeouts, delays and long polls are spans of real time: a step of the system
/// clock (an NTP correction, a virtual machine's clock catching up after it was descheduled)
/// must neither release in-flight messages early nor hold them longer. Timestamps it gives
/// (SentTimestamp, the persisted deadlines) stay wall time to within the steps since the start;
/// a restart takes the wall clock again.
std::function<std::int64_t()> steady_wall_clock() {
    const auto wall0 = std::chrono::system_clock::now();
    const auto steady0 = std::chrono::steady_clock::now();
    return [wall0, steady0] {
        const auto elapsed = std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::steady_clock::now() - steady0);
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   (wall0 + elapsed).time_since_epoch())
            .count();
    };
}

backend_error storage(const std::error_code& ec) {
    return {make_error_code(errc::storage_error),
            fmt::format("The queue's state could not be stored: {}", ec.message())};
}

/// Runs `a` to completion on a private io_context (start-up work before any front runs).
void run_now(asio::awaitable<void> a) {
    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) {
        std::rethrow_exception(failure);
    }
}

}  // namespace

/// Releases the admin lock when it goes out of scope.
class queue_service::admin_guard {
public:
    explicit admin_guard(queue_service* s) : s_(s) {}
    admin_guard(admin_guard&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    admin_guard& operator=(admin_guard&&) = delete;
    ~admin_guard() {
        if (s_ != nullptr) {
            std::lock_guard lock(s_->admin_mu_);
            s_->admin_busy_ = false;
            s_->admin_waiters_.wake(1);
        }
    }

private:
    queue_service* s_;
};

queue_service::queue_service(api::topics& topics, api::records& records, state_log& log,
                             queue_settings settings, std::function<std::int64_t()> wall_clock,
                             api::producer* producer)
    : topics_(topics),
      records_(records),
      producer_(producer),
      log_(log),
      settings_(std::move(settings)),
      wall_(wall_clock ? std::move(wall_clock) : steady_wall_clock()) {}

queue_service::~queue_service() { stop(); }

api::awaitable<queue_service::admin_guard> queue_service::lock_admin() {
    const auto ex = co_await asio::this_coro::executor;
    for (;;) {
        std::shared_ptr<wakeup> w;
        {
            std::lock_guard lock(admin_mu_);
            if (!admin_busy_) {
                admin_busy_ = true;
                break;
            }
            w = std::make_shared<wakeup>(ex);
            admin_waiters_.park(w);
        }
        // Bounded: a missed wake-up costs a second, never a hang.
        co_await w->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(1));
    }
    co_return admin_guard(this);
}

// --- loading ------------------------------------------------------------------------------------

void queue_service::load() {
    std::map<std::string, queue_record> metas;
    std::map<std::pair<uuid, std::int32_t>, std::int64_t> cursors;
    std::map<std::pair<uuid, std::int32_t>, lease_record> leases;
    std::map<std::tuple<uuid, std::int32_t, std::int64_t>, message_record> messages;
    std::optional<std::string> secret;
    std::size_t records = 0;
    auto replayed = log_.replay([&](protocol::bytes_view key,
                                    std::optional<protocol::bytes_view> value) {
        auto e = decode(key, value);
        if (!e) {
            queue_log().warn("{}: skipping a record that does not decode: {}", state_topic_name,
                             e.error().message());
            return;
        }
        ++records;
        std::visit(
            [&](auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, queue_record>) {
                    metas[v.name] = std::move(v);
                } else if constexpr (std::is_same_v<T, queue_key>) {
                    metas.erase(v.name);
                } else if constexpr (std::is_same_v<T, cursor_record>) {
                    cursors[{v.queue_id, v.partition}] = v.cursor;
                } else if constexpr (std::is_same_v<T, cursor_key>) {
                    cursors.erase({v.queue_id, v.partition});
                } else if constexpr (std::is_same_v<T, message_record>) {
                    messages[{v.queue_id, v.partition, v.offset}] = v;
                } else if constexpr (std::is_same_v<T, message_key>) {
                    messages.erase({v.queue_id, v.partition, v.offset});
                } else if constexpr (std::is_same_v<T, secret_record>) {
                    secret = v.key;
                } else if constexpr (std::is_same_v<T, deleted_queue_record>) {
                    deleted_names_[v.name] = v.deleted_ms;
                } else if constexpr (std::is_same_v<T, deleted_queue_key>) {
                    deleted_names_.erase(v.name);
                } else if constexpr (std::is_same_v<T, task_record>) {
                    auto t = std::make_shared<task_state>();
                    t->record = std::move(v);
                    tasks_[t->record.handle] = std::move(t);
                } else if constexpr (std::is_same_v<T, task_key>) {
                    tasks_.erase(v.handle);
                } else if constexpr (std::is_same_v<T, lease_record>) {
                    leases[{v.queue_id, v.partition}] = v;
                } else if constexpr (std::is_same_v<T, lease_key>) {
                    leases.erase({v.queue_id, v.partition});
                }
            },
            *e);
    });
    if (!replayed) {
        throw std::runtime_error(fmt::format("cannot replay {}: {}", state_topic_name,
                                             replayed.error().message()));
    }

    std::vector<encoded_record> cleanup;
    if (!secret && !metas.empty()) {
        // Queues without a key (it was lost): handles issued before are invalid from now on.
        queue_log().warn("{}: no receipt-handle key; a new one is made", state_topic_name);
        secret = receipt_signer::random_key();
        cleanup.push_back(encode(secret_record{*secret}));
    }
    if (secret) {
        signer_ = std::make_unique<receipt_signer>(*secret);
    }

    std::map<uuid, handle_ptr> by_id;
    for (auto& [name, meta] : metas) {
        if (api::is_sluice_owned_topic(name)) {
            // Adopted by an earlier version: sluice's own state is no queue. Its queue state
            // goes (its cursors and messages below, as those of no queue); the topic stays.
            queue_log().warn("queue {}: a topic of sluice's own state is not a queue; its queue "
                             "state is removed, the topic is kept",
                             name);
            cleanup.push_back(encode(queue_key{name}));
            continue;
        }
        queue_config c = config_from_stored(is_fifo_name(name), meta.attributes, settings_.arns);
        auto q = std::make_shared<queue_handle>(meta, queue_state(1, std::move(c), settings_.limits));
        by_id[meta.queue_id] = q;
        queues_[name] = q;
    }
    for (const auto& [key, c] : cursors) {
        if (auto it = by_id.find(key.first); it != by_id.end()) {
            it->second->state.restore_cursor(key.second, c);
        } else {
            cleanup.push_back(encode(cursor_key{key.first, key.second}));
        }
    }
    for (const auto& [key, m] : messages) {
        if (auto it = by_id.find(std::get<0>(key)); it != by_id.end()) {
            it->second->state.restore_message(m);
        } else {
            cleanup.push_back(encode(message_key{m.queue_id, m.partition, m.offset}));
        }
    }
    for (const auto& [key, l] : leases) {
        if (auto it = by_id.find(key.first); it != by_id.end()) {
            it->second->state.restore_lease(l);
        } else {
            cleanup.push_back(encode(lease_key{key.first, key.second}));
        }
    }
    if (!cleanup.empty()) {
        auto pos = log_.append(cleanup);
        if (!pos) {
            throw std::runtime_error(fmt::format("cannot write {}: {}", state_topic_name,
                                                 pos.error().message()));
        }
    }

    // Fit every queue to its topic as it is now (a crash may have cut its tail; a Kafka client
    // may have deleted it) and rebuild the FIFO deduplication windows from the topics.
    std::vector<handle_ptr> all;
    for (auto& [name, q] : queues_) {
        all.push_back(q);
    }
    for (auto& q : all) {
        run_now([](queue_service* self, handle_ptr q) -> asio::awaitable<void> {
            auto err = co_await self->fit_to_topic(q, false);
            if (err.code) {
                queue_log().warn("queue {}: {}; its state is removed", q->meta.name, err.message);
                change_list changes;
                std::lock_guard lock(q->mu);
                q->deleted = true;
                q->state.erase_all(changes);
                std::vector<encoded_record> extra{encode(queue_key{q->meta.name})};
                (void)self->append_locked(*q, changes, std::move(extra));
                std::lock_guard reg(self->registry_mu_);
                self->queues_.erase(q->meta.name);
                co_return;
            }
            if (q->state.config().fifo) {
                co_await self->rebuild_deduplication(q);
            }
        }(this, q));
    }
    run_now([](queue_service* self) -> asio::awaitable<void> {
        const state_log::position everything{std::numeric_limits<std::int64_t>::max()};
        (void)co_await self->flush(everything);
    }(this));
    queue_log().info("queue service loaded {} queues and {} move tasks from {} records of {}",
                     queues_.size(), tasks_.size(), records, state_topic_name);
}

void queue_service::start(asio::any_io_executor ex) {
    std::vector<handle_ptr> all;
    std::vector<std::shared_ptr<task_state>> tasks;
    {
        std::lock_guard lock(registry_mu_);
        executor_ = ex;
        for (auto& [name, q] : queues_) {
            all.push_back(q);
        }
        for (auto& [h, t] : tasks_) {
            tasks.push_back(t);
        }
    }
    for (auto& q : all) {
        spawn_tailer(q);
    }
    for (auto& t : tasks) {
        spawn_task(t);
    }
}

void queue_service::stop() {
    if (stopping_.exchange(true)) {
        return;
    }
    std::vector<handle_ptr> all;
    {
        std::lock_guard lock(registry_mu_);
        for (auto& [name, q] : queues_) {
            all.push_back(q);
        }
    }
    const std::int64_t t = now();
    for (auto& q : all) {
        std::lock_guard lock(q->mu);
        q->receivers.wake_all();
        q->tailer.wake_all();
        if (settings_.leased_receives && !q->deleted) {
            // Every answered receive's records are appended before these (the log keeps its
            // order and stores what is queued as it closes): the next owner need not hold what
            // this one received.
            change_list changes;
            q->state.end_leases(t, changes);
            (void)append_locked(*q, changes);
        }
    }
}

// --- helpers ------------------------------------------------------------------------------------

queue_service::handle_ptr queue_service::find(const std::string& name) const {
    std::lock_guard lock(registry_mu_);
    auto it = queues_.find(name);
    return it == queues_.end() ? nullptr : it->second;
}

result<state_log::position> queue_service::append_locked(queue_handle& q, const change_list& changes,
                                                         std::vector<encoded_record> extra) {
    std::vector<encoded_record> recs = std::move(extra);
    recs.reserve(recs.size() + changes.size());
    const uuid& id = q.meta.queue_id;
    for (const auto& c : changes) {
        switch (c.what) {
            case state_change::kind::message:
                recs.push_back(encode(message_record{id, c.ref.partition, c.ref.offset, c.phase,
                                                     c.receive_count, c.visible_at_ms,
                                                     c.first_receive_ms}));
                break;
            case state_change::kind::tombstone:
                recs.push_back(encode(message_key{id, c.ref.partition, c.ref.offset}));
                break;
            case state_change::kind::cursor:
                recs.push_back(encode(cursor_record{id, c.ref.partition, c.ref.offset}));
                break;
            case state_change::kind::cursor_tombstone:
                recs.push_back(encode(cursor_key{id, c.ref.partition}));
                break;
            case state_change::kind::lease:
                recs.push_back(encode(lease_record{id, c.ref.partition, c.ref.offset,
                                                   c.visible_at_ms}));
                break;
            case state_change::kind::lease_tombstone:
                recs.push_back(encode(lease_key{id, c.ref.partition}));
                break;
        }
    }
    if (recs.empty()) {
        return state_log::position{0};
    }
    auto pos = log_.append(recs);
    if (!pos) {
        queue_log().warn("queue {}: appending {} state records failed: {}", q.meta.name,
                         recs.size(), pos.error().message());
    }
    return pos;
}

api::awaitable<result<void>> queue_service::flush(std::optional<state_log::position> p) {
    if (!p || p->end == 0) {
        co_return result<void>{};
    }
    co_return co_await log_.flush(*p);
}

void queue_service::after_change(queue_handle& q, std::size_t made_available) {
    if (made_available > 0) {
        q.receivers.wake(made_available);
    }
    // Parked receives sleep until the earliest deadline they knew; an earlier one (a shorter
    // visibility, a new delay) re-arms them.
    const std::int64_t due = q.state.next_due();
    if (due < q.armed_due) {
        q.receivers.wake_all();
        q.armed_due = due;
    }
    if (q.state.wants_more()) {
        q.tailer.wake_all();
    }
}

api::awaitable<std::vector<std::int64_t>> queue_service::log_ends(const std::string& topic,
                                                                 std::int32_t partitions) {
    std::vector<api::offset_query> queries;
    for (std::int32_t p = 0; p < partitions; ++p) {
        queries.push_back({topic_name(topic), partition_id(p), {api::offset_spec::kind::latest, -1}});
    }
    auto found = co_await records_.list_offsets(std::move(queries), api::isolation::read_committed);
    std::vector<std::int64_t> ends;
    for (const auto& f : found) {
        ends.push_back(f.error ? 0 : f.off.value);
    }
    co_return ends;
}

api::backend_error queue_service::check_redrive(const queue_config& c, const std::string& name) const {
    if (!c.redrive) {
        return {};
    }
    const auto& target = c.redrive->dead_letter_queue;
    auto dlq = target == name ? nullptr : find(target);
    if (!dlq) {
        return {make_error_code(errc::invalid_attribute_value),
                fmt::format("Value {{\"deadLetterTargetArn\":\"{}\"}} for parameter RedrivePolicy "
                            "is invalid. Reason: Dead letter target does not exist.",
                            c.redrive->dead_letter_target_arn)};
    }
    std::lock_guard lock(dlq->mu);
    const auto& dc = dlq->state.config();
    if (dc.fifo != c.fifo) {
        return {make_error_code(errc::invalid_attribute_value),
                "Value for parameter RedrivePolicy is invalid. Reason: the dead-letter queue of a "
                "FIFO queue must be a FIFO queue, and of a standard queue a standard queue."};
    }
    if (dc.redrive_allow) {
        using perm = redrive_allow_policy::permission;
        const auto& allow = *dc.redrive_allow;
        const std::string arn = settings_.arns.arn(name);
        const bool ok = allow.redrive_permission == perm::allow_all ||
                        (allow.redrive_permission == perm::by_queue &&
                         std::find(allow.source_queue_arns.begin(), allow.source_queue_arns.end(),
                                   arn) != allow.source_queue_arns.end());
        if (!ok) {
            return {make_error_code(errc::invalid_attribute_value),
                    "Value for parameter RedrivePolicy is invalid. Reason: the dead-letter "
                    "queue's RedriveAllowPolicy does not allow this queue."};
        }
    }
    return {};
}

// --- creation and adoption ----------------------------------------------------------------------

api::awaitable<api::backend_result<queue_service::handle_ptr>> queue_service::find_or_adopt(
    const std::string& name) {
    if (auto q = find(name)) {
        co_return q;
    }
    api::attribute_map no_attributes;
    api::attribute_map no_tags;
    co_return co_await make_queue(name, std::move(no_attributes), std::move(no_tags), true);
}

api::awaitable<api::backend_result<queue_service::handle_ptr>> queue_service::make_queue(
    const std::string& name, api::attribute_map attributes, api::attribute_map tags,
    bool adopt_only) {
    auto guard = co_await lock_admin();
    if (auto q = find(name)) {
        co_return q;  // made meanwhile
    }
    if (stopping_) {
        co_return std::unexpected(backend_error{make_error_code(errc::not_leader), "Stopping."});
    }
    // Named, not temporaries in a co_await's arguments (g++ 12 may destroy those twice).
    topic_name topic(name);
    auto existing = co_await topics_.describe(std::move(topic));
    if (api::is_sluice_owned_topic(name) || (existing && existing->internal)) {
        // sluice's own state is no queue: not adopted, and not made by CreateQueue either.
        if (adopt_only) {
            co_return std::unexpected(no_queue());
        }
        co_return std::unexpected(backend_error{
            make_error_code(errc::invalid_parameter_value),
            fmt::format("{} is a topic of sluice's own state (internal topics and names starting "
                        "with {}), not a queue: choose another name.",
                        name, api::sluice_topic_prefix)});
    }
    if (adopt_only && !existing) {
        co_return std::unexpected(no_queue());
    }
    const bool fifo = is_fifo_name(name);
    if (!existing && !valid_new_queue_name(name, fifo)) {
        co_return std::unexpected(backend_error{
            make_error_code(errc::invalid_parameter_value),
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in "
            "length; a FIFO queue's name ends in .fifo."});
    }
    const std::int64_t t = now();
    {
        std::lock_guard lock(registry_mu_);
        auto d = deleted_names_.find(name);
        if (d != deleted_names_.end() && t - d->second < settings_.deleted_name_reuse_ms) {
            co_return std::unexpected(backend_error{
                make_error_code(errc::queue_deleted_recently),
                "You must wait 60 seconds after deleting a queue before you can create another "
                "with the same name."});
        }
    }
    bool start_latest = false;
    if (auto it = attributes.find("SluiceStartPosition"); it != attributes.end()) {
        if (it->second != "earliest" && it->second != "latest") {
            co_return std::unexpected(backend_error{
                make_error_code(errc::invalid_attribute_value),
                "Invalid value for the parameter SluiceStartPosition. Reason: must be earliest or "
                "latest."});
        }
        start_latest = it->second == "latest";
        attributes.erase(it);
    }
    queue_config base;
    base.fifo = fifo;
    api::attribute_map stored;
    auto config = apply_attributes(base, attributes, true, settings_.arns, stored);
    if (!config) {
        co_return std::unexpected(config.error());
    }
    if (auto err = check_redrive(*config, name); err.code) {
        co_return std::unexpected(err);
    }
    if (tags.size() > max_tags) {
        co_return std::unexpected(backend_error{make_error_code(errc::invalid_parameter_value),
                                              "A queue has at most 50 tags."});
    }
    for (const auto& [k, v] : tags) {
        if (auto err = check_tag(k, v); err.code) {
            co_return std::unexpected(err);
        }
    }

    if (!signer_) {
        // The receipt-handle key, made with the first queue (and kept in the state log before
        // any handle is issued).
        auto key = receipt_signer::random_key();
        std::vector<encoded_record> recs{encode(secret_record{key})};
        auto pos = log_.append(recs);
        if (!pos) {
            co_return std::unexpected(storage(pos.error()));
        }
        if (auto f = co_await flush(*pos); !f) {
            co_return std::unexpected(storage(f.error()));
        }
        signer_ = std::make_unique<receipt_signer>(std::move(key));
    }
    queue_record meta;
    meta.name = name;
    meta.queue_id = uuid::random();
    meta.created_ms = t;
    meta.modified_ms = t;
    meta.attributes = std::move(stored);
    meta.tags = std::move(tags);
    std::int32_t partitions = 0;
    if (existing) {
        meta.topic_id = existing->id;
        partitions = existing->partitions;
    } else {
        api::new_topic spec;
        spec.name = topic_name(name);
        spec.partitions = settings_.partitions;
        spec.configs["retention.ms"] = std::to_string(config->retention_s * 1000);
        // Room for a 1 MiB message with its attributes and headers.
        spec.configs["max.message.bytes"] = std::to_string(2 * 1048576);
        auto made = co_await topics_.create(std::move(spec));
        if (!made) {
            co_return std::unexpected(backend_error{
                made.error().code, fmt::format("The queue's topic could not be created: {}",
                                               made.error().message.empty()
                                                   ? made.error().code.message()
                                                   : made.error().message)});
        }
        meta.topic_id = made->topic.id;
        meta.owns_topic = true;
        partitions = made->topic.partitions;
    }
    auto q = std::make_shared<queue_handle>(meta, queue_state(partitions, std::move(*config),
                                                              settings_.limits));
    {
        std::lock_guard lock(q->mu);
        std::vector<encoded_record> recs{encode(q->meta), encode(deleted_queue_key{name})};
        auto pos = append_locked(*q, {}, std::move(recs));
        if (!pos) {
            co_return std::unexpected(storage(pos.error()));
        }
    }
    if (auto err = co_await fit_to_topic(q, start_latest); err.code) {
        co_return std::unexpected(err);
    }
    const state_log::position everything{std::numeric_limits<std::int64_t>::max()};
    if (auto f = co_await flush(everything); !f) {
        co_return std::unexpected(storage(f.error()));
    }
    {
        std::lock_guard lock(registry_mu_);
        queues_[name] = q;
        deleted_names_.erase(name);
    }
    queue_log().info("queue {} {} ({}, {} partitions)", name,
                     existing ? "adopts its existing topic" : "created",
                     q->state.config().fifo ? "FIFO" : "standard", partitions);
    spawn_tailer(q);
    co_return q;
}

api::awaitable<api::backend_result<api::queue_name>> queue_service::create_queue(
    api::queue_name name, api::attribute_map attributes, api::attribute_map tags) {
    if (auto q = find(name.value)) {
        // An existing queue: answered when every given attribute has the value it has.
        std::lock_guard lock(q->mu);
        api::attribute_map stored;
        auto given = attributes;
        given.erase("SluiceStartPosition");
        auto parsed = apply_attributes(q->state.config(), given, true, settings_.arns, stored);
        const auto current = render_settable(q->state.config());
        bool same = parsed.has_value();
        for (const auto& [k, v] : stored) {
            auto it = current.find(k);
            same = same && it != current.end() && it->second == v;
        }
        if (!same) {
            co_return std::unexpected(backend_error{
                make_error_code(errc::queue_already_exists),
                "A queue already exists with the same name and a different value for an "
                "attribute."});
        }
        co_return name;
    }
    auto made = co_await make_queue(name.value, std::move(attributes), std::move(tags), false);
    if (!made) {
        co_return std::unexpected(made.error());
    }
    co_return name;
}

api::awaitable<api::backend_result<api::queue_name>> queue_service::get_queue(api::queue_name name) {
    auto q = co_await find_or_adopt(name.value);
    if (!q) {
        co_return std::unexpected(q.error());
    }
    co_return name;
}

api::awaitable<std::vector<api::queue_name>> queue_service::list_queues(std::string prefix) {
    std::set<std::string> names;
    const auto listed = co_await topics_.list();
    for (const auto& t : listed) {
        if (!t.internal && !api::is_sluice_owned_topic(t.name.value) &&
            t.name.value.starts_with(prefix)) {
            names.insert(t.name.value);
        }
    }
    std::vector<api::queue_name> out;
    for (const auto& n : names) {
        out.emplace_back(n);
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> queue_service::delete_queue(api::queue_name name) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    auto guard = co_await lock_admin();
    handle_ptr q = *found;
    std::optional<state_log::position> pos;
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        q->deleted = true;
        change_list changes;
        q->state.erase_all(changes);
        std::vector<encoded_record> extra{encode(queue_key{q->meta.name}),
                                          encode(deleted_queue_record{q->meta.name, now()})};
        auto p = append_locked(*q, changes, std::move(extra));
        if (!p) {
            q->deleted = false;
            co_return std::unexpected(storage(p.error()));
        }
        pos = *p;
        q->receivers.wake_all();
        q->tailer.wake_all();
    }
    {
        std::lock_guard lock(registry_mu_);
        queues_.erase(q->meta.name);
        deleted_names_[q->meta.name] = now();
    }
    if (auto f = co_await flush(pos); !f) {
        co_return std::unexpected(storage(f.error()));
    }
    topic_name topic(q->meta.name);
    auto removed = co_await topics_.remove(std::move(topic));
    if (!removed && api::reason(removed.error().code) != errc::unknown_topic_or_partition) {
        queue_log().warn("queue {} deleted; removing its topic failed: {}", q->meta.name,
                         removed.error().code.message());
    }
    queue_log().info("queue {} deleted", q->meta.name);
    co_return api::backend_result<void>{};
}

// --- attributes -----------------------------------------------------------------------------

api::awaitable<api::backend_result<api::attribute_map>> queue_service::get_attributes(
    api::queue_name name, std::vector<std::string> attribute_names) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    for (const auto& n : attribute_names) {
        if (!known_attribute_name(n)) {
            co_return std::unexpected(backend_error{make_error_code(errc::invalid_attribute_name),
                                                  fmt::format("Unknown Attribute {}.", n)});
        }
    }
    handle_ptr q = *found;
    api::attribute_map all;
    {
        std::lock_guard lock(q->mu);
        change_list changes;
        const std::int64_t t = now();
        const std::size_t made = q->state.advance(t, changes);
        (void)append_locked(*q, changes);
        after_change(*q, made);
        all = render_settable(q->state.config());
        const auto c = q->state.counts(t);
        all["ApproximateNumberOfMessages"] = std::to_string(c.available);
        all["ApproximateNumberOfMessagesNotVisible"] = std::to_string(c.in_flight);
        all["ApproximateNumberOfMessagesDelayed"] = std::to_string(c.delayed);
        all["CreatedTimestamp"] = std::to_string(q->meta.created_ms / 1000);
        all["LastModifiedTimestamp"] = std::to_string(q->meta.modified_ms / 1000);
        all["QueueArn"] = settings_.arns.arn(q->meta.name);
    }
    const bool every = std::find(attribute_names.begin(), attribute_names.end(), "All") !=
                       attribute_names.end();
    if (every) {
        co_return all;
    }
    api::attribute_map out;
    for (const auto& n : attribute_names) {
        if (auto it = all.find(n); it != all.end()) {
            out[n] = it->second;
        }
    }
    co_return out;
}

api::awaitable<api::backend_result<void>> queue_service::write_meta(
    handle_ptr q, std::function<api::backend_error(queue_handle&)> edit) {
    std::optional<state_log::position> pos;
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        const queue_record before = q->meta;
        if (auto err = edit(*q); err.code) {
            q->meta = before;
            co_return std::unexpected(err);
        }
        q->meta.modified_ms = now();
        std::vector<encoded_record> recs{encode(q->meta)};
        auto p = append_locked(*q, {}, std::move(recs));
        if (!p) {
            co_return std::unexpected(storage(p.error()));
        }
        pos = *p;
    }
    if (auto f = co_await flush(pos); !f) {
        co_return std::unexpected(storage(f.error()));
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> queue_service::set_attributes(api::queue_name name,
                                                                      api::attribute_map attributes) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    queue_config parsed;
    api::attribute_map stored;
    {
        std::lock_guard lock(q->mu);
        stored = q->meta.attributes;
        auto c = apply_attributes(q->state.config(), attributes, false, settings_.arns, stored);
        if (!c) {
            co_return std::unexpected(c.error());
        }
        parsed = std::move(*c);
    }
    if (auto err = check_redrive(parsed, name.value); err.code) {
        co_return std::unexpected(err);
    }
    const std::int64_t old_retention = [&] {
        std::lock_guard lock(q->mu);
        return q->state.config().retention_s;
    }();
    std::function<backend_error(queue_handle&)> edit = [&](queue_handle& h) {
        h.meta.attributes = stored;
        h.state.set_config(parsed);
        return backend_error{};
    };
    auto written = co_await write_meta(q, std::move(edit));
    if (!written) {
        co_return written;
    }
    {
        std::lock_guard lock(q->mu);
        after_change(*q, 0);
    }
    if (q->meta.owns_topic && parsed.retention_s != old_retention) {
        // The topic keeps what the queue may still deliver.
        std::vector<api::config_change> changes{
            {"retention.ms", api::config_change::op::set, std::to_string(parsed.retention_s * 1000)}};
        auto altered = co_await topics_.alter_configs(topic_name(name.value), std::move(changes), false);
        if (!altered) {
            queue_log().warn("queue {}: retention.ms of its topic not changed: {}", name.value,
                             altered.error().code.message());
        }
    }
    co_return api::backend_result<void>{};
}

api::awaitable<api::backend_result<void>> queue_service::purge_queue(api::queue_name name) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    handle_ptr q = *found;
    std::int32_t partitions = 0;
    {
        std::lock_guard lock(q->mu);
        if (q->meta.last_purge_ms > 0 && now() - q->meta.last_purge_ms < settings_.purge_interval_ms) {
            co_return std::unexpected(backend_error{
                make_error_code(errc::purge_queue_in_progress),
                fmt::format("Only one PurgeQueue operation on {} is allowed every 60 seconds.",
                            q->meta.name)});
        }
        partitions = q->state.partitions();
    }
    auto ends = co_await log_ends(q->meta.name, partitions);
    std::optional<state_log::position> pos;
    {
        std::lock_guard lock(q->mu);
        if (q->deleted) {
            co_return std::unexpected(no_queue());
        }
        change_list changes;
        q->state.purge(ends, changes);
        q->meta.last_purge_ms = now();
        std::vector<encoded_record> recs{encode(q->meta)};
        auto p = append_locked(*q, changes, std::move(recs));
        if (!p) {
            co_return std::unexpected(storage(p.error()));
        }
        pos = *p;
        after_change(*q, 0);
    }
    if (auto f = co_await flush(pos); !f) {
        co_return std::unexpected(storage(f.error()));
    }
    co_return api::backend_result<void>{};
}

// --- tags and permissions -------------------------------------------------------------------

api::awaitable<api::backend_result<void>> queue_service::tag_queue(api::queue_name name,
                                                                 api::attribute_map tags) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    std::function<backend_error(queue_handle&)> edit = [&](queue_handle& h) {
        for (const auto& [k, v] : tags) {
            if (auto err = check_tag(k, v); err.code) {
                return err;
            }
            h.meta.tags[k] = v;
        }
        if (h.meta.tags.size() > max_tags) {
            return backend_error{make_error_code(errc::invalid_parameter_value),
                               "A queue has at most 50 tags."};
        }
        return backend_error{};
    };
    co_return co_await write_meta(*found, std::move(edit));
}

api::awaitable<api::backend_result<void>> queue_service::untag_queue(api::queue_name name,
                                                                   std::vector<std::string> keys) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    std::function<backend_error(queue_handle&)> edit = [&](queue_handle& h) {
        for (const auto& k : keys) {
            h.meta.tags.erase(k);
        }
        return backend_error{};
    };
    co_return co_await write_meta(*found, std::move(edit));
}

api::awaitable<api::backend_result<api::attribute_map>> queue_service::list_tags(api::queue_name name) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    std::lock_guard lock((*found)->mu);
    co_return (*found)->meta.tags;
}

api::awaitable<api::backend_result<void>> queue_service::add_permission(
    api::queue_name name, std::string label, std::vector<std::string> accounts,
    std::vector<std::string> actions) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    const std::string arn = settings_.arns.arn(name.value);
    std::function<backend_error(queue_handle&)> edit = [&](queue_handle& h) {
        auto policy = add_permission_statement(h.state.config().policy, arn, label, accounts, actions);
        if (!policy) {
            return policy.error();
        }
        h.meta.attributes["Policy"] = *policy;
        auto c = h.state.config();
        c.policy = std::move(*policy);
        h.state.set_config(std::move(c));
        return backend_error{};
    };
    co_return co_await write_meta(*found, std::move(edit));
}

api::awaitable<api::backend_result<void>> queue_service::remove_permission(api::queue_name name,
                                                                         std::string label) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    std::function<backend_error(queue_handle&)> edit = [&](queue_handle& h) {
        auto policy = remove_permission_statement(h.state.config().policy, label);
        if (!policy) {
            return policy.error();
        }
        if (policy->empty()) {
            h.meta.attributes.erase("Policy");
        } else {
            h.meta.attributes["Policy"] = *policy;
        }
        auto c = h.state.config();
        c.policy = std::move(*policy);
        h.state.set_config(std::move(c));
        return backend_error{};
    };
    co_return co_await write_meta(*found, std::move(edit));
}

api::awaitable<api::backend_result<std::vector<api::queue_name>>>
queue_service::dead_letter_source_queues(api::queue_name name) {
    auto found = co_await find_or_adopt(name.value);
    if (!found) {
        co_return std::unexpected(found.error());
    }
    std::vector<handle_ptr> all;
    {
        std::lock_guard lock(registry_mu_);
        for (auto& [n, q] : queues_) {
            all.push_back(q);
        }
    }
    std::vector<api::queue_name> out;
    for (auto& q : all) {
        std::lock_guard lock(q->mu);
        const auto& c = q->state.config();
        if (c.redrive && c.redrive->dead_letter_queue == name.value) {
            out.emplace_back(q->meta.name);
        }
    }
    co_return out;
}

std::vector<api::queue_view> queue_service::view_queues() const {
    std::vector<handle_ptr> all;
    {
        std::lock_guard lock(registry_mu_);
        for (auto& [n, q] : queues_) {
            all.push_back(q);
        }
    }
    const std::int64_t t = now();
    std::vector<api::queue_view> out;
    for (auto& q : all) {
        std::lock_guard lock(q->mu);
        api::queue_view v;
        v.name = api::queue_name(q->meta.name);
        v.fifo = q->state.config().fifo;
        const auto c = q->state.counts(t);
        v.available = c.available;
        v.in_flight = c.in_flight;
        v.delayed = c.delayed;
        v.oldest_age_ms = c.oldest_sent_ms > 0 ? std::max<std::int64_t>(0, t - c.oldest_sent_ms) : 0;
        if (const auto& r = q->state.config().redrive) {
            v.dead_letter_queue = api::queue_name(r->dead_letter_queue);
        }
        v.waiting_receives = q->waiting;
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace sluice::backend::queue
