#include "gateway/server/security_topic.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <stdexcept>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/api/errc.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace api = backend::api;

namespace {

using security_record_fn = std::function<void(std::string_view, std::optional<std::string_view>)>;

const topic_name& security_topic_name() {
    static const topic_name name{std::string(auth::security_topic)};
    return name;
}

std::string_view security_text(protocol::bytes_view b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

asio::awaitable<void> security_pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

bool security_retryable(const api::backend_error& e) {
    const auto r = api::reason(e.code);
    return r == api::errc::backend_unavailable || r == api::errc::request_timed_out ||
           r == api::errc::not_leader || r == api::errc::coordinator_not_available ||
           r == api::errc::unknown_topic_or_partition;
}

/// Describes the topic; creates it (compacted, one partition) when missing.
asio::awaitable<api::backend_error> ensure_security_topic(api::client* client) {
    auto found = co_await client->admin().describe_topic(security_topic_name());
    if (found) {
        // Made by something else (a cluster that creates topics on first use, say): every
        // writer and reader uses partition 0 only, so it still works; said once.
        static std::atomic<bool> warned{false};
        if (found->partitions.size() != 1 && !warned.exchange(true)) {
            server_log().warn("{} has {} partitions (it should have one, compacted): only "
                              "partition 0 is used",
                              auth::security_topic, found->partitions.size());
        }
        co_return api::backend_error{};
    }
    if (api::reason(found.error().code) != api::errc::unknown_topic_or_partition) {
        co_return found.error();
    }
    api::new_topic spec;
    spec.name = security_topic_name();
    spec.partitions = 1;
    spec.configs["cleanup.policy"] = "compact";
    auto made = co_await client->admin().create_topic(std::move(spec));
    if (made) {
        server_log().info("{}: created (compacted, one partition)", auth::security_topic);
        co_return api::backend_error{};
    }
    if (api::reason(made.error().code) == api::errc::topic_already_exists) {
        co_return api::backend_error{};
    }
    co_return made.error();
}

/// The topic's first and end offsets; (0, 0) when it does not exist.
asio::awaitable<api::backend_result<std::pair<std::int64_t, std::int64_t>>> security_offsets(
    api::client* client) {
    const topic_name& t = security_topic_name();
    std::vector<api::offset_query> q{{t, partition_id(0), {api::offset_spec::kind::earliest, -1}},
                                     {t, partition_id(0), {api::offset_spec::kind::latest, -1}}};
    auto found =
        co_await client->admin().list_offsets(std::move(q), api::isolation::read_uncommitted);
    if (found.size() == 2 && !found[0].error && !found[1].error) {
        co_return std::pair{found[0].off.value, found[1].off.value};
    }
    const api::backend_error err = found.size() == 2
                                       ? (found[0].error ? found[0].error : found[1].error)
                                       : api::backend_error(api::errc::unknown);
    co_return std::unexpected(err);
}

/// Polls `c` once: each keyed record to `on_record`, `next` moved past what was read.
asio::awaitable<api::backend_error> poll_security(api::consumer* c, std::int64_t* next,
                                                  const security_record_fn* on_record) {
    api::poll_limits limits;
    limits.max_wait = std::chrono::milliseconds(500);
    auto polled = co_await c->poll(
        limits, [&](const topic_name&, partition_id, const protocol::kafka::record_view& r) {
            if (r.key) {
                std::optional<std::string_view> value;
                if (r.value) {
                    value = security_text(*r.value);
                }
                (*on_record)(security_text(*r.key), value);
            }
            *next = r.offset + 1;
            return true;
        });
    if (!polled) {
        co_return polled.error();
    }
    for (const auto& pp : *polled) {
        if (pp.error) {
            co_return pp.error;
        }
        *next = std::max(*next, pp.next.value);
    }
    co_return api::backend_error{};
}

std::shared_ptr<api::consumer> open_security_consumer(api::client* client, std::int64_t from,
                                                      asio::any_io_executor ex) {
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    o.client.client_id = "sluice-security";
    auto c = client->open_consumer(std::move(o), std::move(ex));
    const api::topic_partition tp{security_topic_name(), partition_id(0)};
    // The seek first: the assignment then starts there, without asking the cluster where
    // to start (a blocking lookup that a close right after the start would wait out).
    c->seek({{tp, offset(from)}});
    c->assign({tp});
    return c;
}

asio::awaitable<void> close_security_consumer(std::shared_ptr<api::consumer> c) {
    c->close(false);
    const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!c->closed() && std::chrono::steady_clock::now() < by) {
        co_await security_pause(std::chrono::milliseconds(5));
    }
}

[[noreturn]] void security_failure(const std::string& what, const api::backend_error& e) {
    throw std::runtime_error(std::string(auth::security_topic) + ": " + what + ": " + e.text());
}

asio::awaitable<auth::security_snapshot> read_snapshot_here(api::client* client,
                                                            std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auth::security_snapshot s;
    std::int64_t start = 0;
    std::int64_t end = 0;
    // The cluster answers first: a topic that cannot be found because no broker can be
    // reached is not an empty state.
    for (;;) {
        auto cluster = co_await client->admin().describe_cluster();
        if (cluster) {
            break;
        }
        if (!security_retryable(cluster.error()) ||
            std::chrono::steady_clock::now() >= deadline) {
            security_failure("the cluster cannot be reached", cluster.error());
        }
        co_await security_pause(std::chrono::milliseconds(200));
    }
    for (;;) {
        auto found = co_await security_offsets(client);
        if (found) {
            std::tie(start, end) = *found;
            break;
        }
        if (api::reason(found.error().code) == api::errc::unknown_topic_or_partition) {
            co_return s;  // nothing shared yet
        }
        if (!security_retryable(found.error()) || std::chrono::steady_clock::now() >= deadline) {
            security_failure("its offsets cannot be read", found.error());
        }
        co_await security_pause(std::chrono::milliseconds(200));
    }
    if (end <= start) {
        co_return s;
    }
    const security_record_fn on_record = [&s](std::string_view key, std::optional<std::string_view> v) {
        auth::apply_security_record(s, key, v);
    };
    auto c = open_security_consumer(client, start, co_await asio::this_coro::executor);
    std::int64_t next = start;
    api::backend_error failed;
    while (next < end) {
        if (std::chrono::steady_clock::now() >= deadline) {
            failed = api::backend_error(make_error_code(api::errc::request_timed_out),
                                        "read up to offset " + std::to_string(next) + " of " +
                                            std::to_string(end));
            break;
        }
        auto err = co_await poll_security(c.get(), &next, &on_record);
        if (err && !security_retryable(err)) {
            failed = err;
            break;
        }
    }
    co_await close_security_consumer(c);
    if (failed) {
        security_failure("it cannot be read", failed);
    }
    co_return s;
}

asio::awaitable<bool> write_records_here(api::client* client,
                                         std::vector<auth::security_record> records,
                                         std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        auto err = co_await ensure_security_topic(client);
        if (!err) {
            break;
        }
        if (!security_retryable(err) || std::chrono::steady_clock::now() >= deadline) {
            security_failure("the topic cannot be opened", err);
        }
        co_await security_pause(std::chrono::milliseconds(200));
    }
    std::vector<api::outgoing_record> out;
    for (auto& r : records) {
        api::outgoing_record o;
        o.key = std::move(r.key);
        o.value = std::move(r.value);
        o.partition = 0;
        out.push_back(std::move(o));
    }
    api::send_options so;
    so.acks = api::acks::all;
    so.timeout = std::max(std::chrono::milliseconds(1000),
                          std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now()));
    auto sent = co_await client->producer().send(security_topic_name(), std::move(out), so);
    if (!sent) {
        security_failure("the change was not stored", sent.error());
    }
    for (const auto& d : *sent) {
        if (d.error) {
            security_failure("the change was not stored", d.error);
        }
    }
    co_return true;
}

template <typename T>
T run_security_call(asio::awaitable<T> a) {
    asio::io_context io;
    std::exception_ptr failure;
    std::optional<T> out;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T value) {
        failure = e;
        if (!e) {
            out = std::move(value);
        }
    });
    io.run();
    if (failure) {
        std::rethrow_exception(failure);
    }
    return std::move(*out);
}

}  // namespace

auth::security_snapshot read_security_snapshot(api::client& client,
                                               std::chrono::milliseconds deadline) {
    return run_security_call(read_snapshot_here(&client, deadline));
}

void write_security_records(api::client& client, std::vector<auth::security_record> records,
                            std::chrono::milliseconds deadline) {
    if (records.empty()) {
        return;
    }
    run_security_call(write_records_here(&client, std::move(records), deadline));
}

asio::awaitable<void> publish_security_records(api::client& client,
                                               std::vector<auth::security_record> records,
                                               std::chrono::milliseconds deadline) {
    if (!records.empty()) {
        co_await write_records_here(&client, std::move(records), deadline);
    }
}

asio::awaitable<void> shared_security_users::store(std::string user,
                                                   std::optional<auth::user_credentials> creds) {
    std::vector<auth::security_record> records{
        auth::user_record(user, creds ? &*creds : nullptr)};
    co_await publish_security_records(client_, std::move(records), deadline_);
}

asio::awaitable<void> shared_security_acls::store(std::vector<auth::acl_binding> bindings,
                                                  bool present) {
    std::vector<auth::security_record> records;
    records.reserve(bindings.size());
    for (const auto& b : bindings) {
        records.push_back(auth::acl_record(b, present));
    }
    co_await publish_security_records(client_, std::move(records), deadline_);
    // The mirror applies the same records when it reads them.
    acls_.apply_shared(bindings, present);
}

// --- security_mirror -------------------------------------------------------------------------

security_mirror::security_mirror(api::client& client, stores into)
    : client_(client),
      stores_(into),
      work_(io_.get_executor()),
      finished_(done_.get_future()) {
    // What the stores hold (the data dir's own entries) is the base the records apply to.
    for (const auto& name : stores_.users.users()) {
        if (auto creds = stores_.users.find(name)) {
            state_.users.emplace(name, std::move(*creds));
        }
    }
    const auto acls = stores_.acls.acls();
    state_.acls.insert(acls.begin(), acls.end());
    state_.quotas = stores_.quotas.entries();
    for (auto& key : stores_.aws_keys.keys()) {
        std::string user = key.user;
        state_.aws_keys.emplace(std::move(user), std::move(key));
    }
}

security_mirror::~security_mirror() {
    if (!thread_.joinable()) {
        return;
    }
    stopping_ = true;
    // The tail notices within one poll's wait (500 ms) and closes its consumer; past the
    // bound the io context is stopped with the tail where it is.
    if (finished_.wait_for(std::chrono::seconds(15)) != std::future_status::ready) {
        server_log().warn("{}: the tail did not stop within 15 s; stopping it where it is",
                          auth::security_topic);
    }
    work_.reset();
    io_.stop();
    thread_.join();
}

void security_mirror::start() {
    asio::co_spawn(io_, run(), [this](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                server_log().error("{}: the tail stopped: {}", auth::security_topic, ex.what());
                set_reason(std::string("the tail of ") + std::string(auth::security_topic) +
                           " stopped: " + ex.what());
            }
        }
        done_.set_value();
    });
    thread_ = std::thread([this] { io_.run(); });
}

std::optional<std::string> security_mirror::not_ready_reason() const {
    if (caught_up_.load(std::memory_order_acquire)) {
        return std::nullopt;
    }
    std::lock_guard lock(reason_mutex_);
    return reason_;
}

void security_mirror::set_reason(std::string reason) {
    std::lock_guard lock(reason_mutex_);
    reason_ = std::move(reason);
}

void security_mirror::apply(std::string_view key, std::optional<std::string_view> value) {
    const auto got = auth::apply_security_record(state_, key, value);
    using outcome = auth::applied_record::outcome;
    if (got.what == outcome::unknown_kind) {
        server_log().warn("{}: a record of unknown kind '{}' skipped (written by a newer sluice?)",
                          auth::security_topic, got.detail);
        return;
    }
    if (got.what == outcome::invalid) {
        server_log().warn("{}: a {} record skipped: {}", auth::security_topic,
                          auth::to_string(*got.kind), got.detail);
        return;
    }
    switch (*got.kind) {
        case auth::security_kind::user:
            changed_users_.insert(std::string(key.substr(key.find(':') + 1)));
            break;
        case auth::security_kind::acl:
            acls_changed_ = true;
            break;
        case auth::security_kind::quota:
            quotas_changed_ = true;
            break;
        case auth::security_kind::aws_key:
            keys_changed_ = true;
            break;
    }
    if (caught_up_.load(std::memory_order_relaxed)) {
        // Names and ACL keys only: no secret is in a key.
        server_log().info("{}: {} {}", auth::security_topic, key, value ? "set" : "deleted");
    }
}

void security_mirror::install() {
    for (const auto& name : changed_users_) {
        const auto it = state_.users.find(name);
        stores_.users.replace(name, it == state_.users.end()
                                        ? std::nullopt
                                        : std::optional<auth::user_credentials>(it->second));
    }
    changed_users_.clear();
    if (acls_changed_) {
        stores_.acls.replace_acls({state_.acls.begin(), state_.acls.end()});
        acls_changed_ = false;
    }
    if (quotas_changed_) {
        stores_.quotas.replace_entries(state_.quotas);
        quotas_changed_ = false;
    }
    if (keys_changed_) {
        std::vector<auth::aws_access_key> keys;
        for (const auto& [user, k] : state_.aws_keys) {
            keys.push_back(k);
        }
        stores_.aws_keys.replace_keys(std::move(keys));
        keys_changed_ = false;
    }
}

asio::awaitable<void> security_mirror::run() {
    std::string last_problem;
    while (!stopping_) {
        // One pass: the topic opened, read from where the last pass stopped, tailed until an
        // error; then a pause and another pass.
        const bool ok = co_await tail_once();
        if (ok || stopping_) {
            continue;
        }
        co_await security_pause(std::chrono::milliseconds(500));
    }
    co_return;
}

asio::awaitable<bool> security_mirror::tail_once() {
    auto problem = [this](const std::string& what, const api::backend_error& e) {
        const std::string text =
            std::string(auth::security_topic) + ": " + what + ": " + e.text();
        bool repeated = false;
        {
            std::lock_guard lock(reason_mutex_);
            repeated = reason_ == text;
            reason_ = text;
        }
        if (!repeated) {
            server_log().warn("{} (trying again)", text);
        }
    };
    auto err = co_await ensure_security_topic(&client_);
    if (err) {
        problem("the topic cannot be opened", err);
        if (!caught_up_) {
            // Missing, and not creatable from here (a cluster whose controller cannot be
            // reached, say): nothing has been shared yet, so the empty state is the whole of
            // it. Ready on that; the topic is looked for again, and read once it exists.
            auto found = co_await client_.admin().describe_topic(security_topic_name());
            if (!found &&
                api::reason(found.error().code) == api::errc::unknown_topic_or_partition) {
                install();
                caught_up_.store(true, std::memory_order_release);
                server_log().warn("{}: does not exist and cannot be created now: nothing is "
                                  "shared yet; ready, and reading it once it exists",
                                  auth::security_topic);
            }
        }
        co_return false;
    }
    auto found = co_await security_offsets(&client_);
    if (!found) {
        problem("its offsets cannot be read", found.error());
        co_return false;
    }
    const auto [start, end] = *found;
    std::int64_t next = resume_at_ >= 0 ? std::max(resume_at_, start) : start;
    if (!caught_up_) {
        set_reason(std::string(auth::security_topic) + ": reading offsets " +
                   std::to_string(next) + " to " + std::to_string(end));
    }
    const security_record_fn on_record = [this](std::string_view key, std::optional<std::string_view> v) {
        apply(key, v);
    };
    auto c = open_security_consumer(&client_, next, co_await asio::this_coro::executor);
    bool healthy = true;
    while (!stopping_) {
        if (!caught_up_ && next >= end) {
            install();
            caught_up_.store(true, std::memory_order_release);
            server_log().info("{}: caught up at offset {}: {} users, {} ACLs, {} quota entities, "
                              "{} AWS keys",
                              auth::security_topic, next, state_.users.size(),
                              state_.acls.size(), state_.quotas.size(), state_.aws_keys.size());
        }
        err = co_await poll_security(c.get(), &next, &on_record);
        resume_at_ = next;
        if (caught_up_) {
            install();  // every change as soon as it is polled
        }
        if (err && !security_retryable(err)) {
            problem("reading failed", err);
            healthy = false;
            break;
        }
    }
    co_await close_security_consumer(c);
    co_return healthy;
}

}  // namespace sluice::gateway
