#include "backend/upstream/upstream_consumer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/upstream/upstream_consumer_impl.h"

namespace sluice::backend::upstream {
namespace asio = boost::asio;

namespace {

/// How often the keep-alive drains librdkafka's queue when nobody polls: rebalances are
/// answered within this, and max.poll.interval.ms never runs out.
constexpr std::chrono::milliseconds consumer_keep_alive_every{200};

std::string consumer_generated_group() {
    static std::atomic<std::uint64_t> n{0};
    return "sluice-assign-" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

const char* consumer_reset_name(api::offset_reset r) {
    switch (r) {
    case api::offset_reset::earliest:
        return "earliest";
    case api::offset_reset::latest:
        return "latest";
    case api::offset_reset::none:
        return "error";
    }
    return "latest";
}

/// The generation librdkafka's group metadata carries. librdkafka 2.x has no accessor; its
/// serialised form is the magic "CGMDv2:" (7 bytes), then the generation (int32, host order),
/// then the group id, member id ... (rd_kafka_consumer_group_metadata_write).
std::int32_t consumer_generation_of(rd_kafka_t* rk) {
    rd_kafka_consumer_group_metadata_t* md = rd_kafka_consumer_group_metadata(rk);
    if (!md) {
        return -1;
    }
    void* buf = nullptr;
    std::size_t size = 0;
    std::int32_t generation = -1;
    if (rd_kafka_error_t* e = rd_kafka_consumer_group_metadata_write(md, &buf, &size)) {
        rd_kafka_error_destroy(e);
    } else {
        constexpr std::size_t magic = 7;
        if (size >= magic + sizeof generation &&
            std::memcmp(buf, "CGMDv2:", magic) == 0) {
            std::memcpy(&generation, static_cast<const char*>(buf) + magic, sizeof generation);
        }
        rd_kafka_mem_free(nullptr, buf);
    }
    rd_kafka_consumer_group_metadata_destroy(md);
    return generation;
}

std::vector<api::topic_partition> consumer_parts_of(const rd_kafka_topic_partition_list_t* l) {
    std::vector<api::topic_partition> out;
    if (!l) {
        return out;
    }
    out.reserve(static_cast<std::size_t>(l->cnt));
    for (int i = 0; i < l->cnt; ++i) {
        out.push_back({topic_name(l->elems[i].topic), partition_id(l->elems[i].partition)});
    }
    return out;
}

/// The partition an error op of librdkafka names: rd_kafka_toppar_enq_error writes
/// "TOPIC [PARTITION]: why (error)" (topic names have no spaces); nullopt for other texts.
std::optional<api::topic_partition> consumer_error_partition(std::string_view reason) {
    const auto open = reason.find(" [");
    if (open == std::string_view::npos || open == 0) {
        return std::nullopt;
    }
    const auto close = reason.find("]: ", open);
    if (close == std::string_view::npos || close == open + 2 || close - open > 12) {
        return std::nullopt;
    }
    std::int32_t partition = 0;
    for (auto i = open + 2; i < close; ++i) {
        if (reason[i] < '0' || reason[i] > '9') {
            return std::nullopt;
        }
        partition = partition * 10 + (reason[i] - '0');
    }
    return api::topic_partition{topic_name(std::string(reason.substr(0, open))),
                                partition_id(partition)};
}

}  // namespace

partition_list_ptr make_partition_list(const std::vector<api::topic_partition>& parts) {
    partition_list_ptr l(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
    for (const auto& tp : parts) {
        rd_kafka_topic_partition_list_add(l.get(), tp.topic.value.c_str(), tp.partition.value);
    }
    return l;
}

std::shared_ptr<api::consumer> open_upstream_consumer(const upstream_options& opts,
                                                      asio::thread_pool& blocking,
                                                      api::consumer_options copts,
                                                      asio::any_io_executor ex,
                                                      std::shared_ptr<consumer_statistics> stats) {
    auto c = std::make_shared<upstream_consumer>(opts, blocking, std::move(copts), std::move(ex),
                                                 std::move(stats));
    c->start();
    return c;
}

// --- life cycle ------------------------------------------------------------------------------

upstream_consumer::upstream_consumer(const upstream_options& opts, asio::thread_pool& blocking,
                                     api::consumer_options copts, asio::any_io_executor ex,
                                     std::shared_ptr<consumer_statistics> stats)
    : opts_(opts),
      pool_(blocking),
      copts_(std::move(copts)),
      ex_(ex),
      stats_(std::move(stats)),
      wake_(ex) {
    std::map<std::string, std::string> extra{
        {"group.id", copts_.group ? copts_.group->value : consumer_generated_group()},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"auto.offset.reset", consumer_reset_name(copts_.reset)},
        {"isolation.level", copts_.isolation == api::isolation::read_committed
                                ? "read_committed"
                                : "read_uncommitted"},
        {"session.timeout.ms", std::to_string(copts_.session_timeout_ms)},
        // compat: the native backend's members offer these two; a group mixing native and
        // upstream members must agree on one.
        {"partition.assignment.strategy", "range,roundrobin"},
    };
    // Defaults a property may override. librdkafka 2.0.2 stops fetching a partition whose
    // consumer queue is over either limit and looks again only at its broker thread's next
    // idle wake-up (up to a second): with the default 100,000 messages a reader catching up
    // on a backlog of small records stalled every 100,000. The byte limit binds instead: at
    // most 32 MiB of values and keys wait in librdkafka per consumer (half its default).
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"queued.min.messages",
                                                                         "1000000"},
                                     {"queued.max.messages.kbytes", "32768"}}) {
        if (!opts.properties.contains(key)) {
            extra[key] = value;
        }
    }
    if (copts_.instance_id) {
        extra["group.instance.id"] = *copts_.instance_id;
    }
    if (!copts_.client.client_id.empty()) {
        extra["client.id"] = copts_.client.client_id;
    }
    if (auto it = opts.properties.find("topic.metadata.refresh.interval.ms");
        it != opts.properties.end()) {
        try {
            metadata_refresh_ = std::chrono::milliseconds(std::max(100L, std::stol(it->second)));
        } catch (const std::exception&) {
            // librdkafka refuses the property itself below.
        }
    }
    if (stats_) {
        // As the client's producer handle: every 5 s unless the properties say otherwise.
        if (!opts.properties.contains("statistics.interval.ms")) {
            extra["statistics.interval.ms"] = "5000";
        }
        stats_id_ = stats_->add();
    }
    conf_ptr conf = make_conf(opts.properties, extra);
    rd_kafka_conf_set_rebalance_cb(conf.get(), &upstream_consumer::rebalance_trampoline);
    rd_kafka_conf_set_error_cb(conf.get(), &upstream_consumer::error_trampoline);
    if (stats_) {
        rd_kafka_conf_set_stats_cb(conf.get(), &upstream_consumer::stats_trampoline);
    }
    rd_kafka_conf_set_opaque(conf.get(), this);
    rk_ = make_handle(RD_KAFKA_CONSUMER, std::move(conf));
    rd_kafka_poll_set_consumer(rk_.get());
    queue_ = rd_kafka_queue_get_consumer(rk_.get());

    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        rd_kafka_queue_destroy(queue_);
        queue_ = nullptr;
        throw std::runtime_error(std::string("upstream consumer: pipe: ") + std::strerror(errno));
    }
    wake_read_ = fds[0];
    wake_write_ = fds[1];
    wake_.assign(wake_read_);  // closes the read end when destroyed
    rd_kafka_queue_io_event_enable(queue_, wake_write_, "1", 1);
}

upstream_consumer::~upstream_consumer() {
    if (rk_ && !destroy_started_) {
        // Dropped without close(): no LeaveGroup, nothing waits.
        destroy_started_ = true;
        for (auto& [tp, ps] : held_) {
            release_buffer_locked(ps);
        }
        held_.clear();
        if (queue_) {
            rd_kafka_queue_destroy(queue_);
            queue_ = nullptr;
        }
        release_fetch_queues(std::exchange(fetch_queues_, {}));
        rd_kafka_destroy_flags(rk_.release(), RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    }
    if (stats_) {
        stats_->closed(stats_id_);
    }
    if (wake_write_ >= 0) {
        ::close(wake_write_);
    }
}

void upstream_consumer::start() {
    asio::co_spawn(ex_, keep_alive(weak_from_this(), ex_, consumer_keep_alive_every),
                   asio::detached);
}

api::awaitable<void> upstream_consumer::keep_alive(std::weak_ptr<upstream_consumer> weak,
                                                   asio::any_io_executor ex,
                                                   std::chrono::milliseconds every) {
    asio::steady_timer timer(ex);
    for (;;) {
        timer.expires_after(every);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        auto self = weak.lock();
        if (!self) {
            co_return;
        }
        std::lock_guard lock(self->mu_);
        if (self->destroy_started_) {
            co_return;
        }
        if (clock::now() - self->last_drain_ >= every) {
            self->drain_locked(drain_mode::all);
        }
    }
}

bool upstream_consumer::acquire_lease() {
    std::lock_guard lock(mu_);
    if (destroy_started_ || !rk_) {
        return false;
    }
    ++leases_;
    return true;
}

void upstream_consumer::release_lease() {
    std::lock_guard lock(mu_);
    --leases_;
    maybe_destroy_locked();
}

std::optional<upstream_consumer::lease> upstream_consumer::take_lease() {
    if (!acquire_lease()) {
        return std::nullopt;
    }
    return lease{shared_from_this()};
}

void upstream_consumer::maybe_destroy_locked() {
    if (!close_done_ || destroy_started_ || leases_ > 0 || poll_active_) {
        return;
    }
    destroy_started_ = true;
    asio::post(pool_, [self = shared_from_this()] { self->destroy_handle(); });
}

void upstream_consumer::destroy_handle() {
    rd_kafka_t* rk = nullptr;
    rd_kafka_queue_t* q = nullptr;
    std::map<api::topic_partition, rd_kafka_queue_t*> fetch_queues;
    bool leave = true;
    {
        std::lock_guard lock(mu_);
        for (auto& [tp, ps] : held_) {
            release_buffer_locked(ps);
        }
        held_.clear();
        reset_cache_locked();
        q = std::exchange(queue_, nullptr);
        fetch_queues = std::exchange(fetch_queues_, {});
        rk = rk_.release();
        leave = leave_;
    }
    if (q) {
        rd_kafka_queue_destroy(q);
    }
    release_fetch_queues(std::move(fetch_queues));
    if (rk) {
        // After rd_kafka_consumer_close (leave) there is nothing left to close; without it
        // (leave=false) the flag keeps librdkafka from leaving the group on its own.
        rd_kafka_destroy_flags(rk, leave ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    }
    if (stats_) {
        stats_->closed(stats_id_);  // no statistics callback after the destroy
    }
    closed_ = true;
    upstream_log().debug("upstream consumer {}: closed",
                         copts_.group ? copts_.group->value : std::string("(assigned)"));
    std::lock_guard lock(mu_);
    notify_change_locked();
}

void upstream_consumer::keep_fetch_queue_locked(const api::topic_partition& tp) {
    if (!rk_ || destroy_started_ || fetch_queues_.contains(tp)) {
        return;
    }
    if (rd_kafka_queue_t* fq =
            rd_kafka_queue_get_partition(rk_.get(), tp.topic.value.c_str(), tp.partition.value)) {
        fetch_queues_.emplace(tp, fq);
    }
}

void upstream_consumer::release_fetch_queues(
    std::map<api::topic_partition, rd_kafka_queue_t*> queues) {
    // A stopped partition's queue is its own (not forwarded to the consumer queue any more):
    // what is left there goes (barriers, stale messages, errors). A partition still forwarded
    // drains the consumer queue instead, which the destroy would drop anyway.
    rd_kafka_message_t* batch[64];
    for (auto& [tp, fq] : queues) {
        for (;;) {
            const ssize_t n = rd_kafka_consume_batch_queue(fq, 0, batch, std::size(batch));
            for (ssize_t i = 0; i < n; ++i) {
                rd_kafka_message_destroy(batch[i]);
            }
            if (n < static_cast<ssize_t>(std::size(batch))) {
                break;
            }
        }
        rd_kafka_queue_destroy(fq);
    }
}

void upstream_consumer::wake_poll() const {
    if (wake_write_ >= 0) {
        [[maybe_unused]] auto n = ::write(wake_write_, "w", 1);
    }
}

void upstream_consumer::close(bool leave) {
    std::lock_guard lock(mu_);
    if (closing_) {
        return;
    }
    closing_ = true;
    abandoning_ = true;
    leave_ = leave;
    ++pattern_seq_;
    wake_poll();
    asio::co_spawn(ex_, run_close(shared_from_this()), asio::detached);
}

api::awaitable<void> upstream_consumer::run_close(std::shared_ptr<upstream_consumer> self) {
    // The owner commits what it consumed before the partitions go (unless a rebalance's
    // revoke is running the hook already).
    std::optional<api::assignment_state> held;
    revoke_hook hook;
    {
        std::lock_guard lock(self->mu_);
        if (self->revoke_hook_ && self->copts_.group && !self->held_.empty() &&
            !self->revoking_) {
            held = self->assignment_locked();
            hook = self->revoke_hook_;
        }
    }
    if (hook) {
        try {
            co_await hook(*held);
        } catch (const std::exception& e) {
            upstream_log().warn("upstream consumer {}: revoke hook failed at close: {}",
                                self->copts_.group->value, e.what());
        }
    }
    bool leave = true;
    {
        std::lock_guard lock(self->mu_);
        leave = self->leave_;
    }
    if (leave) {
        if (auto l = self->take_lease()) {
            // Leaves the group (LeaveGroup; a static member does not send one), running the
            // rebalance callback's revoke on the pool thread.
            rd_kafka_t* rk = self->rk_.get();
            auto job = [rk] { return rd_kafka_consumer_close(rk); };
            rd_kafka_resp_err_t err = co_await consumer_offload(self->pool_, std::move(job));
            if (err) {
                upstream_log().warn("upstream consumer: close: {}", rd_kafka_err2str(err));
            }
        }
    }
    std::lock_guard lock(self->mu_);
    self->close_done_ = true;
    self->maybe_destroy_locked();
}

int upstream_consumer::stats_trampoline(rd_kafka_t*, char* json, size_t len, void* opaque) {
    auto* self = static_cast<upstream_consumer*>(opaque);
    if (self->stats_) {
        self->stats_->on_statistics(self->stats_id_, {json, len});
    }
    return 0;  // librdkafka frees the document
}

void upstream_consumer::error_trampoline(rd_kafka_t*, int err, const char* reason,
                                         void* opaque) {
    static_cast<upstream_consumer*>(opaque)->on_error(static_cast<rd_kafka_resp_err_t>(err),
                                                      reason);
}

void upstream_consumer::on_error(rd_kafka_resp_err_t err, const char* reason) {
    const std::string why = reason ? reason : rd_kafka_err2str(err);
    std::lock_guard lock(mu_);  // recursive: this runs inside drain_locked
    const std::string name = rk_ ? rd_kafka_name(rk_.get()) : std::string("consumer");
    switch (err) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        // A topic deleted (or a partition gone) under the consumer: librdkafka stops
        // fetching it and says so only here; the owner hears it from the next poll.
        upstream_log().debug("upstream {}: {}", name, why);
        if (const auto tp = consumer_error_partition(why)) {
            if (auto it = held_.find(*tp); it != held_.end() && !it->second.sticky) {
                it->second.error = api::backend_error(
                    api::make_error_code(api::errc::unknown_topic_or_partition), why);
                wake_poll();
            }
        }
        return;
    case RD_KAFKA_RESP_ERR__FATAL:
        upstream_log().error("upstream {}: {}", name, why);
        call_error_ = to_backend_error(err, why.c_str());
        wake_poll();
        return;
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
        // The client's own handle reports the cluster's health (/readyz and its log line);
        // librdkafka reconnects on its own.
        upstream_log().debug("upstream {}: {}", name, why);
        return;
    default:
        upstream_log().warn("upstream {}: {}", name, why);
        return;
    }
}

// --- rebalances ------------------------------------------------------------------------------

void upstream_consumer::rebalance_trampoline(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                             rd_kafka_topic_partition_list_t* parts,
                                             void* opaque) {
    auto* self = static_cast<upstream_consumer*>(opaque);
    {
        std::lock_guard lock(self->mu_);
        if (self->closing_ || self->destroy_started_) {
            // Closing: give everything up at once (the hook ran in run_close).
            rd_kafka_assign(rk, nullptr);
            for (auto& [tp, ps] : self->held_) {
                self->release_buffer_locked(ps);
            }
            self->held_.clear();
            self->reset_cache_locked();
            self->revoking_ = false;
            self->stable_ = false;
            if (!self->destroy_started_) {
                self->notify_change_locked();
            }
            return;
        }
    }
    self->on_rebalance(err, parts);
}

void upstream_consumer::on_rebalance(rd_kafka_resp_err_t err,
                                     rd_kafka_topic_partition_list_t* parts) {
    std::lock_guard lock(mu_);
    switch (err) {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
        handle_assign_locked(parts);
        break;
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
        handle_revoke_locked();
        break;
    default:
        upstream_log().warn("upstream consumer {}: rebalance failed: {}",
                            copts_.group ? copts_.group->value : std::string(),
                            rd_kafka_err2str(err));
        ++rebalance_seq_;
        revoking_ = false;
        finish_revoke_locked();
        break;
    }
}

void upstream_consumer::handle_assign_locked(const rd_kafka_topic_partition_list_t* parts) {
    generation_ = consumer_generation_of(rk_.get());
    if (char* m = rd_kafka_memberid(rk_.get())) {
        member_id_ = m;
        rd_kafka_mem_free(rk_.get(), m);
    }
    group_assigned_ = true;
    stable_ = false;
    auto tps = consumer_parts_of(parts);
    upstream_log().debug("upstream consumer {}: assigned {} partitions (generation {})",
                         copts_.group ? copts_.group->value : std::string(), tps.size(),
                         generation_);
    hold_and_resolve_locked(tps);
}

void upstream_consumer::handle_revoke_locked() {
    ++rebalance_seq_;
    stable_ = false;
    if (!group_assigned_) {
        // A manual assignment meets the revoke of the subscription it replaced: librdkafka
        // wants its unassign, then the manual partitions go back.
        rd_kafka_assign(rk_.get(), nullptr);
        assign_held_locked(false);
        return;
    }
    if (revoke_hook_ && !held_.empty()) {
        revoking_ = true;
        api::assignment_state held = assignment_locked();
        notify_change_locked();
        asio::co_spawn(ex_, run_revoke(shared_from_this(), rebalance_seq_, std::move(held)),
                       asio::detached);
        return;
    }
    finish_revoke_locked();
}

api::awaitable<void> upstream_consumer::run_revoke(std::shared_ptr<upstream_consumer> self,
                                                   std::uint64_t seq,
                                                   api::assignment_state held) {
    revoke_hook hook;
    {
        std::lock_guard lock(self->mu_);
        hook = self->revoke_hook_;
    }
    if (hook) {
        try {
            co_await hook(held);
        } catch (const std::exception& e) {
            upstream_log().warn("upstream consumer {}: revoke hook failed: {}",
                                self->copts_.group ? self->copts_.group->value : std::string(),
                                e.what());
        }
    }
    std::lock_guard lock(self->mu_);
    // Ordering: the unassign comes after the hook, from here (librdkafka waits for it before
    // it rejoins); a close meanwhile has unassigned already.
    if (self->revoking_ && seq == self->rebalance_seq_ && !self->destroy_started_) {
        self->finish_revoke_locked();
    }
}

void upstream_consumer::finish_revoke_locked() {
    revoking_ = false;
    if (rk_ && !destroy_started_) {
        rd_kafka_assign(rk_.get(), nullptr);
    }
    for (auto& [tp, ps] : held_) {
        release_buffer_locked(ps);
    }
    held_.clear();
    reset_cache_locked();
    group_assigned_ = false;
    if (resolved_topics_.empty()) {
        stable_ = true;  // not subscribed: nothing to join
    }
    notify_change_locked();
}

void upstream_consumer::notify_change_locked() {
    if (on_change_) {
        asio::post(ex_, on_change_);
    }
}

// --- what it reads ---------------------------------------------------------------------------

void upstream_consumer::subscribe(std::vector<topic_name> topics) {
    std::lock_guard lock(mu_);
    if (closing_) {
        return;
    }
    if (!copts_.group) {
        upstream_log().warn("upstream consumer: subscribe without a group is ignored");
        return;
    }
    pattern_.reset();
    pattern_re_.reset();
    filter_ = {};
    ++pattern_seq_;
    topics_ = topics;
    subscribe_locked(topics);
}

void upstream_consumer::subscribe_locked(const std::vector<topic_name>& topics) {
    std::vector<topic_name> sorted = topics;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted == resolved_topics_ && (!sorted.empty() || held_.empty())) {
        if (sorted.empty()) {
            stable_ = true;  // a pattern that matches nothing yet: nothing to join
        }
        return;
    }
    resolved_topics_ = sorted;
    if (sorted.empty()) {
        rd_kafka_unsubscribe(rk_.get());
        if (held_.empty()) {
            stable_ = true;
        }
    } else {
        partition_list_ptr l(rd_kafka_topic_partition_list_new(static_cast<int>(sorted.size())));
        for (const auto& t : sorted) {
            rd_kafka_topic_partition_list_add(l.get(), t.value.c_str(), RD_KAFKA_PARTITION_UA);
        }
        if (rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_.get(), l.get())) {
            upstream_log().warn("upstream consumer {}: subscribe: {}", copts_.group->value,
                                rd_kafka_err2str(err));
        }
        if (held_.empty()) {
            stable_ = false;  // joining
        }
    }
    notify_change_locked();
}

bool upstream_consumer::subscribe_pattern(const std::string& pattern, api::topic_filter filter) {
    re2::RE2::Options o;
    o.set_log_errors(false);
    auto re = std::make_shared<const re2::RE2>(pattern, o);
    if (!re->ok()) {
        return false;
    }
    std::lock_guard lock(mu_);
    if (closing_) {
        return true;
    }
    if (!copts_.group) {
        upstream_log().warn("upstream consumer: a pattern subscription needs a group");
        return false;
    }
    pattern_ = pattern;
    pattern_re_ = std::move(re);
    filter_ = std::move(filter);
    topics_.clear();
    const std::uint64_t seq = ++pattern_seq_;
    if (held_.empty()) {
        stable_ = false;
    }
    asio::co_spawn(ex_, pattern_refresh(weak_from_this(), ex_, seq), asio::detached);
    return true;
}

std::vector<std::string> upstream_consumer::list_topics_blocking() {
    std::vector<std::string> names;
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk_.get(), 1, nullptr, &md,
                                                static_cast<int>(opts_.request_timeout.count()));
    if (err || !md) {
        upstream_log().debug("upstream consumer: metadata for a pattern: {}",
                             rd_kafka_err2str(err));
        return names;
    }
    for (int i = 0; i < md->topic_cnt; ++i) {
        if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            names.emplace_back(md->topics[i].topic);
        }
    }
    rd_kafka_metadata_destroy(md);
    return names;
}

api::awaitable<void> upstream_consumer::pattern_refresh(std::weak_ptr<upstream_consumer> weak,
                                                        asio::any_io_executor ex,
                                                        std::uint64_t seq) {
    asio::steady_timer timer(ex);
    for (;;) {
        auto self = weak.lock();
        if (!self) {
            co_return;
        }
        std::shared_ptr<const re2::RE2> re;
        api::topic_filter filter;
        {
            std::lock_guard lock(self->mu_);
            if (seq != self->pattern_seq_ || self->closing_) {
                co_return;
            }
            re = self->pattern_re_;
            filter = self->filter_;
        }
        std::optional<std::vector<std::string>> names;
        if (auto l = self->take_lease()) {
            upstream_consumer* c = self.get();
            auto job = [c] { return c->list_topics_blocking(); };
            names = co_await consumer_offload(self->pool_, std::move(job));
        } else {
            co_return;
        }
        if (!names->empty()) {
            std::vector<topic_name> matched;
            for (auto& n : *names) {
                // compat: Kafka's consumers leave internal topics out of pattern subscriptions
                // (exclude.internal.topics); librdkafka's metadata does not flag them, so every
                // "__" topic (__consumer_offsets, sluice's own) counts as internal.
                if (n.starts_with("__") || !re2::RE2::FullMatch(n, *re)) {
                    continue;
                }
                topic_name t(std::move(n));
                if (filter && !filter(t)) {
                    continue;
                }
                matched.push_back(std::move(t));
            }
            std::lock_guard lock(self->mu_);
            if (seq != self->pattern_seq_ || self->closing_) {
                co_return;
            }
            self->subscribe_locked(matched);
        }
        const auto every = self->metadata_refresh_;
        self.reset();
        timer.expires_after(every);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

void upstream_consumer::unsubscribe() {
    std::lock_guard lock(mu_);
    if (closing_) {
        return;
    }
    topics_.clear();
    pattern_.reset();
    pattern_re_.reset();
    filter_ = {};
    ++pattern_seq_;
    if (!copts_.group) {
        return;
    }
    if (!group_assigned_ && !held_.empty()) {
        // A manual assignment goes too (as Kafka's unsubscribe).
        ++rebalance_seq_;
        rd_kafka_assign(rk_.get(), nullptr);
        for (auto& [tp, ps] : held_) {
            release_buffer_locked(ps);
        }
        held_.clear();
        reset_cache_locked();
    }
    resolved_topics_.clear();
    rd_kafka_unsubscribe(rk_.get());  // a held group assignment is revoked through the callback
    if (held_.empty()) {
        stable_ = true;
    }
    notify_change_locked();
}

std::vector<topic_name> upstream_consumer::subscribed_topics() const {
    std::lock_guard lock(mu_);
    return topics_;
}

std::optional<std::string> upstream_consumer::subscribed_pattern() const {
    std::lock_guard lock(mu_);
    return pattern_;
}

void upstream_consumer::assign(std::vector<api::topic_partition> parts) {
    std::lock_guard lock(mu_);
    if (closing_) {
        return;
    }
    if (copts_.group && !resolved_topics_.empty()) {
        // Replaces the subscription: the revoke comes through the callback, which then puts
        // this manual assignment back (handle_revoke_locked).
        topics_.clear();
        pattern_.reset();
        pattern_re_.reset();
        ++pattern_seq_;
        resolved_topics_.clear();
        rd_kafka_unsubscribe(rk_.get());
    }
    std::sort(parts.begin(), parts.end());
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
    group_assigned_ = false;
    generation_ = -1;
    stable_ = true;
    hold_and_resolve_locked(parts);
}

api::assignment_state upstream_consumer::assignment() const {
    std::lock_guard lock(mu_);
    return assignment_locked();
}

api::assignment_state upstream_consumer::assignment_locked() const {
    api::assignment_state s;
    if (copts_.group) {
        s.stable = stable_ && !revoking_;
        s.generation = group_assigned_ || revoking_ ? generation_ : -1;
        s.member_id = member_id_;
    }
    s.partitions.reserve(held_.size());
    for (const auto& [tp, ps] : held_) {
        s.partitions.push_back(tp);
    }
    s.topics = resolved_topics_;
    return s;
}

void upstream_consumer::on_change(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    on_change_ = std::move(fn);
}

void upstream_consumer::on_revoke(revoke_hook hook) {
    std::lock_guard lock(mu_);
    revoke_hook_ = std::move(hook);
}

}  // namespace sluice::backend::upstream
