#include "gateway/server/sqs_fleet.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/api/errc.h"
#include "backend/queue/client_backing.h"
#include "backend/queue/queue_directory.h"
#include "backend/queue/queue_service.h"
#include "backend/queue/topic_state_log.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace api = backend::api;
namespace bq = backend::queue;

/// One claim's queues: the queue service over the cluster, its state written through the
/// claim's transactional producer. The constructor replays the state (blocking; throws
/// std::runtime_error when the cluster cannot be reached by the state log's deadline).
class owned_queues {
public:
    owned_queues(api::client& client, bq::queue_settings settings,
                 std::unique_ptr<api::transactional_producer> txn, const std::string& topic,
                 std::function<void()> on_fenced)
        : txn_(std::move(txn)),
          topics_(client.admin()),
          records_(client),
          log_(client, bq::topic_state_log_options{.topic = topic,
                                                   .txn = txn_.get(),
                                                   .on_fenced = std::move(on_fenced)}) {
        log_.open();
        // Every stored change is a transaction on the cluster: receives go under leases.
        settings.leased_receives = true;
        service_ = std::make_unique<bq::queue_service>(topics_, records_, log_,
                                                       std::move(settings),
                                                       std::function<std::int64_t()>{},
                                                       &client.producer());
        service_->load();
    }
    ~owned_queues() {
        service_.reset();  // first: its tailers read through records_ and write through log_
    }
    owned_queues(const owned_queues&) = delete;
    owned_queues& operator=(const owned_queues&) = delete;

    api::queues& queues() { return *service_; }
    void start(asio::any_io_executor ex) { service_->start(std::move(ex)); }
    /// Answers parked calls, then ends the tailers' reads (while the io threads still run).
    void stop() {
        std::lock_guard lock(mu_);
        if (stopped_) {
            return;
        }
        stopped_ = true;
        service_->stop();
        records_.stop();
    }

private:
    std::unique_ptr<api::transactional_producer> txn_;  // outlives the log that writes with it
    bq::client_topics topics_;
    bq::client_records records_;
    bq::topic_state_log log_;
    std::unique_ptr<bq::queue_service> service_;
    std::mutex mu_;
    bool stopped_ = false;
};

namespace {

/// Runs `a` to its end on a context of its own (the fleet's thread may block).
template <typename T>
T fleet_run_sync(asio::awaitable<T> a) {
    asio::io_context ctx;
    std::optional<T> out;
    std::exception_ptr failed;
    asio::co_spawn(ctx, std::move(a), [&out, &failed](std::exception_ptr e, T v) {
        if (e) {
            failed = e;
        } else {
            out.emplace(std::move(v));
        }
    });
    ctx.run();
    if (failed) {
        std::rethrow_exception(failed);
    }
    return std::move(*out);
}

api::backend_error not_owner_error() {
    return api::backend_error(make_error_code(api::errc::backend_unavailable),
                              "this gateway does not serve the SQS queues now (another gateway "
                              "owns them, or they are moving): try again");
}

asio::awaitable<void> fleet_pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

sqs_fleet::sqs_fleet(api::client& client, const bq::queue_settings& settings,
                     sqs_fleet_options opts)
    : client_(client),
      settings_(std::make_unique<bq::queue_settings>(settings)),
      opts_(std::move(opts)),
      work_(io_.get_executor()),
      directory_(std::make_unique<bq::queue_directory>(client, opts_.state_topic,
                                                       settings_->arns)) {}

sqs_fleet::~sqs_fleet() { stop(); }

void sqs_fleet::start(asio::any_io_executor ex, std::string self_url) {
    ex_ = ex;
    self_url_ = std::move(self_url);
    thread_ = std::thread([this] { io_.run(); });
    auto member = join();
    {
        std::lock_guard lock(mu_);
        member_ = member;
    }
    // The group assigns only partitions that exist: the topics first.
    asio::post(io_, [this, member] { subscribe_when_ready(member); });
    directory_->start(ex_);
    server_log().info("SQS fleet: this gateway ({}) joined the owner group {}: the member "
                      "assigned {} partition {} serves the queues, the others forward to it",
                      self_url_, opts_.group, opts_.lease_topic, opts_.unit);
}

std::shared_ptr<api::consumer> sqs_fleet::join() {
    api::consumer_options o;
    o.group = group_id(opts_.group);
    o.session_timeout_ms = opts_.session_timeout_ms;
    o.reset = api::offset_reset::latest;
    o.client.client_id = std::string(fleet_member_prefix) + self_url_;
    auto member = client_.open_consumer(std::move(o), ex_);
    member->on_change([this, from = member.get()] { assignment_changed(from); });
    return member;
}

void sqs_fleet::rejoin() {
    auto fresh = join();
    std::shared_ptr<api::consumer> old;
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            old = fresh;
        } else {
            old = std::exchange(member_, fresh);
            (void)state_.assignment_changed(false);  // the old member's lease is given up
        }
    }
    if (old) {
        old->close(true);  // leaves the group: the next rebalance gives the lease to someone
        const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!old->closed() && std::chrono::steady_clock::now() < by) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (old != fresh) {
        server_log().info("SQS fleet: this gateway rejoined the owner group {} with a new member",
                          opts_.group);
        subscribe_when_ready(fresh);
    }
}

void sqs_fleet::stop() {
    std::shared_ptr<api::consumer> member;
    std::shared_ptr<owned_queues> q;
    {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return;
        }
        stopping_ = true;
        member = std::move(member_);
        q = std::exchange(current_, nullptr);
    }
    if (q) {
        q->stop();  // parked calls answered while the io threads still run
    }
    forward_pool_.close();
    directory_->stop();  // while the io threads run its follower
    if (member) {
        member->close(true);
        const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!member->closed() && std::chrono::steady_clock::now() < by) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (thread_.joinable()) {
        asio::post(io_, [this, q] { release(q); });
        work_.reset();
        thread_.join();
    } else {
        release(q);
    }
}

void sqs_fleet::subscribe_when_ready(const std::shared_ptr<api::consumer>& member) {
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (stopping_) {
                return;
            }
        }
        try {
            // Creates each topic when missing (compacted, one partition).
            for (const auto& name : {opts_.state_topic, opts_.lease_topic}) {
                bq::topic_state_log_options o;
                o.topic = name;
                o.start_deadline = std::chrono::seconds(5);
                bq::topic_state_log probe(client_, o);
                probe.open();
            }
            break;
        } catch (const std::exception& e) {
            server_log().warn("SQS fleet: {}; trying again", e.what());
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    member->subscribe({topic_name(opts_.lease_topic)});
}

bool sqs_fleet::serving() const {
    std::lock_guard lock(mu_);
    return current_ != nullptr;
}

std::shared_ptr<owned_queues> sqs_fleet::current() const {
    std::lock_guard lock(mu_);
    return current_;
}

void sqs_fleet::assignment_changed(const api::consumer* from) {
    std::shared_ptr<api::consumer> member;
    {
        std::lock_guard lock(mu_);
        member = member_;
    }
    if (!member || member.get() != from) {
        return;  // a member given up (rejoin) or closing
    }
    const api::assignment_state a = member->assignment();
    const api::topic_partition unit{topic_name(opts_.lease_topic), partition_id(opts_.unit)};
    const bool holds =
        a.stable && std::find(a.partitions.begin(), a.partitions.end(), unit) != a.partitions.end();
    std::lock_guard lock(mu_);
    if (stopping_) {
        return;
    }
    switch (state_.assignment_changed(holds)) {
        case queue_owner_state::action::claim: {
            const std::uint64_t id = state_.claim_id();
            server_log().info("SQS fleet: this gateway was assigned {} partition {} (generation "
                              "{}): taking the queues over",
                              opts_.lease_topic, opts_.unit, a.generation);
            asio::post(io_, [this, id] { claim(id); });
            break;
        }
        case queue_owner_state::action::release: {
            auto q = std::exchange(current_, nullptr);
            server_log().warn("SQS fleet: this gateway no longer holds {} partition {}: it stops "
                              "serving the SQS queues",
                              opts_.lease_topic, opts_.unit);
            asio::post(io_, [this, q] { release(q); });
            break;
        }
        case queue_owner_state::action::none:
            break;
    }
}

void sqs_fleet::claim(std::uint64_t id) {
    {
        std::lock_guard lock(mu_);
        if (stopping_ || id != state_.claim_id()) {
            return;  // stale: the unit moved on before the claim started
        }
    }
    auto failed = [this, id](const std::string& why) {
        std::lock_guard lock(mu_);
        if (stopping_) {
            return;
        }
        if (state_.claim_failed(id) == queue_owner_state::action::claim) {
            const std::uint64_t next = state_.claim_id();
            server_log().warn("SQS fleet: taking the queues over failed ({}); trying again", why);
            asio::co_spawn(
                io_,
                [](sqs_fleet* self, std::uint64_t n) -> asio::awaitable<void> {
                    co_await fleet_pause(std::chrono::seconds(1));
                    self->claim(n);
                }(this, next),
                asio::detached);
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto txn = client_.open_transactional_producer(opts_.transactional_id());
    if (txn) {
        // Fences every earlier producer of the id: a deposed owner's open transaction is
        // aborted, its later writes refused.
        auto inited = fleet_run_sync(txn->init(opts_.init_timeout));
        if (!inited) {
            failed("init_transactions of " + opts_.transactional_id() + ": " +
                   (inited.error().message.empty() ? inited.error().code.message()
                                                   : inited.error().message));
            return;
        }
    } else {
        server_log().warn("SQS fleet: the client level has no transactions: the queue state "
                          "is written without fencing");
    }
    std::shared_ptr<owned_queues> q;
    try {
        q = std::make_shared<owned_queues>(client_, *settings_, std::move(txn), opts_.state_topic,
                                           [this, id] { fenced(id); });
    } catch (const std::exception& e) {
        failed(e.what());
        return;
    }
    q->start(ex_);
    {
        std::lock_guard lock(mu_);
        if (!stopping_ && state_.claimed(id)) {
            current_ = q;
            server_log().info(
                "SQS fleet: this gateway owns the SQS queues now (transactional id {}, state "
                "replayed in {} ms)",
                opts_.transactional_id(),
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - t0)
                    .count());
            return;
        }
    }
    server_log().info("SQS fleet: a claim finished after the unit moved on: dropped");
    release(std::move(q));
}

void sqs_fleet::fenced(std::uint64_t id) {
    std::lock_guard lock(mu_);
    if (stopping_) {
        return;
    }
    if (state_.fenced(id) == queue_owner_state::action::release) {
        auto q = std::exchange(current_, nullptr);
        server_log().error("SQS fleet: the cluster refused this gateway's queue state write as "
                           "fenced (a newer owner took the queues over): it stops serving the "
                           "SQS queues");
        asio::post(io_, [this, q] { release(q); });
        // Its member may still hold the lease (the group has not moved on, or the fencing
        // producer was no gateway's): it gives the lease up, so that the group elects an owner
        // again, rather than keep it unserved.
        asio::post(io_, [this] { rejoin(); });
    }
}

void sqs_fleet::release(std::shared_ptr<owned_queues> q) {
    if (!q) {
        return;
    }
    // Parked calls are answered and the tailers end; the queues are kept (idle) until the
    // fleet is destroyed, after the io threads that may still run their last steps stopped.
    q->stop();
    std::lock_guard lock(mu_);
    released_.push_back(std::move(q));
}

asio::awaitable<std::optional<std::string>> sqs_fleet::owner_url() {
    const auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(owner_mu_);
        if (now - owner_cached_at_ < std::chrono::milliseconds(250)) {
            co_return owner_cache_;
        }
    }
    // DescribeConsumerGroups is not asked while the cluster cannot be reached: librdkafka
    // (2.0.2 and later) can abort the process when a coordinator request cannot be sent
    // (librdkafka #4605; backend/upstream/README.md). The owner is then unknown.
    std::optional<std::string> url;
    if (!client_.check().ready) {
        co_return url;
    }
    auto g = co_await client_.admin().describe_group(group_id(opts_.group));
    if (g) {
        for (const auto& m : g->members) {
            auto it = m.assignment.find(topic_name(opts_.lease_topic));
            if (it == m.assignment.end() || !m.client_id.starts_with(fleet_member_prefix)) {
                continue;
            }
            if (std::find(it->second.begin(), it->second.end(), partition_id(opts_.unit)) !=
                it->second.end()) {
                url = m.client_id.substr(fleet_member_prefix.size());
            }
        }
    }
    std::lock_guard lock(owner_mu_);
    owner_cache_ = url;
    owner_cached_at_ = std::chrono::steady_clock::now();
    co_return url;
}

asio::awaitable<sqs::forward_outcome> sqs_fleet::route(const http_request_context& ctx) {
    const bool forwarded = ctx.req.find(sqs::forwarded_header) != ctx.req.end();
    const auto deadline = std::chrono::steady_clock::now() + opts_.owner_wait;
    std::string why;
    for (;;) {
        if (serving()) {
            co_return sqs::forward_outcome{};
        }
        if (!forwarded) {
            // A standard queue's sends are produced here (send_messages below).
            if (auto name = sqs::sent_to_queue(ctx); name && directory_->sends_here(*name)) {
                co_return sqs::forward_outcome{};
            }
        }
        if (forwarded) {
            why = "this gateway was sent the request as the owner of the SQS queues but does "
                  "not serve them";
            bool claiming = false;
            {
                std::lock_guard lock(mu_);
                claiming = state_.current() == queue_owner_state::phase::claiming;
            }
            if (!claiming) {  // the forwarding gateway looks for the owner again
                co_return sqs::forward_outcome{std::nullopt, why, true};
            }
        } else {
            auto url = co_await owner_url();
            if (!url) {
                const auto h = client_.check();
                why = !h.ready ? "the owner of the SQS queues cannot be looked up (" + h.reason +
                                     ")"
                               : "no gateway owns the SQS queues now (no member of the group " +
                                     opts_.group + " holds " + opts_.lease_topic +
                                     " partition " + std::to_string(opts_.unit) + ")";
            } else if (*url == self_url_) {
                why = "this gateway is taking the SQS queues over";
            } else {
                std::string err;
                auto res = co_await forward_pool_.send(*url, ctx.req, opts_.forward_timeout, &err);
                if (res && res->find(sqs::not_owner_header) == res->end()) {
                    co_return sqs::forward_outcome{std::move(res), {}};
                }
                why = res ? "the gateway " + *url + " no longer owns the SQS queues" : err;
                std::lock_guard lock(owner_mu_);
                owner_cached_at_ = {};
            }
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            server_log().warn("SQS fleet: a request found no owner in {} ms: {}",
                              opts_.owner_wait.count(), why);
            co_return sqs::forward_outcome{std::nullopt, why + "; try again"};
        }
        co_await fleet_pause(std::chrono::milliseconds(100));
    }
}

// --- api::queues: the owned service's --------------------------------------------------------

api::awaitable<api::backend_result<api::queue_name>> sqs_fleet::create_queue(
    api::queue_name name, api::attribute_map attributes, api::attribute_map tags) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().create_queue(std::move(name), std::move(attributes),
                                                std::move(tags));
}

api::awaitable<api::backend_result<api::queue_name>> sqs_fleet::get_queue(api::queue_name name) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().get_queue(std::move(name));
}

api::awaitable<std::vector<api::queue_name>> sqs_fleet::list_queues(std::string prefix) {
    auto q = current();
    if (!q) {
        co_return std::vector<api::queue_name>{};
    }
    co_return co_await q->queues().list_queues(std::move(prefix));
}

api::awaitable<api::backend_result<void>> sqs_fleet::delete_queue(api::queue_name name) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().delete_queue(std::move(name));
}

api::awaitable<api::backend_result<api::attribute_map>> sqs_fleet::get_attributes(
    api::queue_name name, std::vector<std::string> names) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().get_attributes(std::move(name), std::move(names));
}

api::awaitable<api::backend_result<void>> sqs_fleet::set_attributes(
    api::queue_name name, api::attribute_map attributes) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().set_attributes(std::move(name), std::move(attributes));
}

api::awaitable<api::backend_result<void>> sqs_fleet::purge_queue(api::queue_name name) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().purge_queue(std::move(name));
}

api::awaitable<api::backend_result<void>> sqs_fleet::tag_queue(api::queue_name name,
                                                              api::attribute_map tags) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().tag_queue(std::move(name), std::move(tags));
}

api::awaitable<api::backend_result<void>> sqs_fleet::untag_queue(api::queue_name name,
                                                                std::vector<std::string> keys) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().untag_queue(std::move(name), std::move(keys));
}

api::awaitable<api::backend_result<api::attribute_map>> sqs_fleet::list_tags(
    api::queue_name name) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().list_tags(std::move(name));
}

api::awaitable<api::backend_result<void>> sqs_fleet::add_permission(
    api::queue_name name, std::string label, std::vector<std::string> accounts,
    std::vector<std::string> actions) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().add_permission(std::move(name), std::move(label),
                                                  std::move(accounts), std::move(actions));
}

api::awaitable<api::backend_result<void>> sqs_fleet::remove_permission(api::queue_name name,
                                                                      std::string label) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().remove_permission(std::move(name), std::move(label));
}

api::awaitable<api::backend_result<std::vector<api::queue_name>>>
sqs_fleet::dead_letter_source_queues(api::queue_name name) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().dead_letter_source_queues(std::move(name));
}

api::awaitable<api::backend_result<std::vector<api::sent_message>>> sqs_fleet::send_messages(
    api::queue_name name, std::vector<api::outgoing_message> messages) {
    auto q = current();
    if (!q) {
        if (!directory_->sends_here(name.value)) {
            co_return std::unexpected(not_owner_error());
        }
        const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
        co_return co_await directory_->send_messages(client_.producer(), std::move(name.value),
                                                     std::move(messages), now_ms);
    }
    co_return co_await q->queues().send_messages(std::move(name), std::move(messages));
}

api::awaitable<api::backend_result<std::vector<api::received_message>>>
sqs_fleet::receive_messages(api::receive_request req) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().receive_messages(std::move(req));
}

api::awaitable<api::backend_result<std::vector<api::backend_error>>> sqs_fleet::delete_messages(
    api::queue_name name, std::vector<std::string> receipt_handles) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().delete_messages(std::move(name), std::move(receipt_handles));
}

api::awaitable<api::backend_result<std::vector<api::backend_error>>>
sqs_fleet::change_visibility(api::queue_name name, std::vector<api::visibility_change> changes) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().change_visibility(std::move(name), std::move(changes));
}

api::awaitable<api::backend_result<std::string>> sqs_fleet::start_message_move_task(
    std::string source_arn, std::optional<std::string> destination_arn,
    std::optional<std::int32_t> max_per_second) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().start_message_move_task(
        std::move(source_arn), std::move(destination_arn), max_per_second);
}

api::awaitable<api::backend_result<std::vector<api::move_task>>>
sqs_fleet::list_message_move_tasks(std::string source_arn, std::int32_t max_results) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().list_message_move_tasks(std::move(source_arn), max_results);
}

api::awaitable<api::backend_result<std::int64_t>> sqs_fleet::cancel_message_move_task(
    std::string task_handle) {
    auto q = current();
    if (!q) {
        co_return std::unexpected(not_owner_error());
    }
    co_return co_await q->queues().cancel_message_move_task(std::move(task_handle));
}

std::optional<api::move_task> sqs_fleet::find_message_move_task(
    const std::string& task_handle) const {
    auto q = current();
    if (!q) {
        return std::nullopt;
    }
    return q->queues().find_message_move_task(task_handle);
}

std::vector<api::queue_view> sqs_fleet::view_queues() const {
    auto q = current();
    if (!q) {
        return {};
    }
    return q->queues().view_queues();
}

}  // namespace sluice::gateway
