// The librdkafka consumer behind api::consumer (owned by backend/upstream; private to it: the
// rest of the code base sees open_upstream_consumer in upstream_consumer.h only).
//
//   librdkafka threads --> consumer queue --(io event: a byte)--> wake pipe --> poll() parked on
//                          (messages, rebalances,                              a stream_descriptor
//                           errors)
//   drain_locked(): rd_kafka_consume_batch_queue(queue, 0) (never blocks) moves messages into
//   per-partition buffers and runs the rebalance callback; poll() hands the buffers to the sink.
//
// Files: upstream_consumer.cc (life cycle, subscriptions, rebalances), upstream_consumer_poll.cc
// (draining, poll, headers), upstream_consumer_offsets.cc (position resolution, seek, commit).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <librdkafka/rdkafka.h>
#include <re2/re2.h>

#include "backend/api/client.h"
#include "backend/upstream/upstream_client.h"
#include "backend/upstream/upstream_common.h"
#include "backend/upstream/upstream_monitor.h"

namespace sluice::backend::upstream {

struct message_deleter {
    void operator()(rd_kafka_message_t* m) const noexcept { rd_kafka_message_destroy(m); }
};
using message_ptr = std::unique_ptr<rd_kafka_message_t, message_deleter>;

struct partition_list_deleter {
    void operator()(rd_kafka_topic_partition_list_t* l) const noexcept {
        rd_kafka_topic_partition_list_destroy(l);
    }
};
using partition_list_ptr =
    std::unique_ptr<rd_kafka_topic_partition_list_t, partition_list_deleter>;

template <typename F>
api::awaitable<std::invoke_result_t<F&>> consumer_blocking_call(F f) {
    co_return f();
}

/// run_blocking (upstream_common.h) without its lambda coroutine: g++ 12 destroys a temporary
/// that holds captures twice when it sits in a co_await expression (GCC bug 100611), so the
/// callers here also pass `f` as a named local, moved.
template <typename F>
api::awaitable<std::invoke_result_t<F&>> consumer_offload(boost::asio::thread_pool& pool, F f) {
    auto call = consumer_blocking_call(std::move(f));
    co_return co_await boost::asio::co_spawn(pool.get_executor(), std::move(call),
                                             boost::asio::use_awaitable);
}

/// A partition list of `parts` (offsets INVALID).
partition_list_ptr make_partition_list(const std::vector<api::topic_partition>& parts);

/// api::consumer over one librdkafka consumer handle (a member of the consumer's group, or of
/// a generated group that never joins, for partitions assigned by hand).
///
/// Lifecycle: open_upstream_consumer builds it and calls start() (the keep-alive loop);
/// close(leave) runs the revoke hook, closes the handle on the blocking pool
/// (rd_kafka_consumer_close: LeaveGroup unless static; leave=false: destroyed without it) and
/// destroys it once no call uses it any more; closed() is true after that.
///
/// Concurrency: every member below is guarded by mu_ (recursive: librdkafka runs the rebalance
/// callback inside rd_kafka_consume_batch_queue, which drain_locked calls with mu_ held, and
/// inside rd_kafka_consumer_close on the pool). The sink, the revoke hook and on_change run
/// without mu_. Blocking librdkafka calls (committed, offsets_for_times, commit, metadata,
/// close, destroy) run on the blocking pool under a lease (leases_), so that the handle is
/// destroyed only when no call uses it.
///
/// Positions are ours: the next offset to hand out of each held partition, set at assignment
/// (a seek made before, else the committed offset, else the reset policy, resolved on the
/// pool before rd_kafka_assign), advanced past every record handed to the sink, set by seek.
/// Messages fetched but not handed out (a sink that stopped, a keep-alive drain) wait in the
/// partition's buffer; a buffer over buffer_cap pauses its partition (librdkafka then fetches
/// again from the offset after the last message it gave us when it is resumed).
///
/// Seeks: the position is ours at once; the partition hands out nothing until librdkafka has
/// taken rd_kafka_seek_partitions (on the pool, waiting for its answer, under mu_ so that no
/// drain slips between dropping the buffer and the seek). A fetcher that has not started yet
/// (_STATE: its assignment waits for an earlier one to stop) is tried again every 20 ms; a
/// fetcher librdkafka stopped (auto.offset.reset=error) is restarted by an assignment
/// (incremental without group management). Whole re-assignments are kept rare on purpose:
/// two in quick succession trip librdkafka's assignment state machine (2.0.2 asserts
/// rktp_started in rd_kafka_assignment_partition_stopped).
///
/// Rebalances (classic eager protocol, range or roundrobin):
///   REVOKE: stable_ = false, on_change; the revoke hook runs on ex_ with the partitions still
///           held (its commits use the generation that is still valid) and poll hands out
///           nothing meanwhile; then rd_kafka_assign(NULL), the partitions are dropped,
///           on_change. librdkafka does not rejoin before that unassign.
///   ASSIGN: the partitions are held at once (positions unknown), their positions resolved on
///           the pool, then rd_kafka_assign with them, stable_ = true, on_change.
class upstream_consumer final : public api::consumer,
                                public std::enable_shared_from_this<upstream_consumer> {
public:
    /// `stats` (may be null) receives librdkafka's statistics of this consumer's handle.
    upstream_consumer(const upstream_options& opts, boost::asio::thread_pool& blocking,
                      api::consumer_options copts, boost::asio::any_io_executor ex,
                      std::shared_ptr<consumer_statistics> stats = nullptr);
    ~upstream_consumer() override;

    upstream_consumer(const upstream_consumer&) = delete;
    upstream_consumer& operator=(const upstream_consumer&) = delete;

    /// Starts the keep-alive loop (needs shared_from_this, hence not in the constructor).
    void start();

    void subscribe(std::vector<topic_name> topics) override;
    bool subscribe_pattern(const std::string& pattern, api::topic_filter filter) override;
    void unsubscribe() override;
    std::vector<topic_name> subscribed_topics() const override;
    std::optional<std::string> subscribed_pattern() const override;
    void assign(std::vector<api::topic_partition> parts) override;
    api::assignment_state assignment() const override;
    void on_change(std::function<void()> fn) override;
    void on_revoke(revoke_hook hook) override;

    void seek(std::vector<std::pair<api::topic_partition, offset>> to) override;
    api::awaitable<api::backend_result<void>> seek_to(std::vector<api::topic_partition> parts,
                                                      api::offset_spec spec) override;
    std::map<api::topic_partition, offset> positions() const override;

    api::awaitable<api::backend_result<std::vector<api::polled_partition>>> poll(
        api::poll_limits limits, const api::message_sink& sink) override;

    api::awaitable<api::backend_result<std::vector<api::offset_commit>>> commit(
        std::optional<std::vector<api::offset_commit>> offsets) override;
    api::awaitable<api::backend_result<std::vector<api::committed_offset>>> committed(
        std::vector<api::topic_partition> parts) override;

    void close(bool leave) override;
    bool closed() const override { return closed_.load(); }

    /// librdkafka's rebalance callback (opaque: the consumer).
    static void rebalance_trampoline(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                     rd_kafka_topic_partition_list_t* parts, void* opaque);
    /// librdkafka's stats_cb (opaque: the consumer), served inside the queue drains.
    static int stats_trampoline(rd_kafka_t* rk, char* json, size_t len, void* opaque);
    /// librdkafka's error_cb (opaque: the consumer), served inside the queue drains (and
    /// inside rd_kafka_consumer_close): errors librdkafka does not hand out as messages.
    static void error_trampoline(rd_kafka_t* rk, int err, const char* reason, void* opaque);

private:
    using clock = std::chrono::steady_clock;

    struct partition_state {
        std::optional<std::int64_t> position;  // the next offset to hand out
        std::deque<message_ptr> buffered;      // fetched, not handed out, in offset order
        std::int64_t buffered_bytes = 0;
        api::backend_error error;  // reported by the next poll
        bool sticky = false;       // the error stays until a seek (offset_out_of_range)
        bool reported = false;     // a sticky error was answered once: it no longer ends a park
        bool in_rdkafka = false;   // part of librdkafka's assignment
        bool seeking = false;      // a seek librdkafka has not confirmed yet: nothing handed out
        bool resolving = false;    // its position is being looked up (committed, reset)
        bool paused = false;
        std::uint64_t epoch = 0;  // bumped whenever the position is set from outside
    };

    /// What a partition's position resolution found.
    struct resolved_position {
        api::topic_partition tp;
        std::int64_t offset = -1;  // -1: none (reset none: offset_out_of_range)
        api::backend_error error;
    };

    // --- the handle ----------------------------------------------------------------------
    /// A use of the handle outside mu_; false once its destruction has begun.
    bool acquire_lease();
    void release_lease();
    struct lease {
        std::shared_ptr<upstream_consumer> self;
        ~lease() {
            if (self) {
                self->release_lease();
            }
        }
    };
    std::optional<lease> take_lease();
    void maybe_destroy_locked();
    void destroy_handle();
    void wake_poll() const;

    // --- callbacks -----------------------------------------------------------------------
    void on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
    /// A partition's error event (a topic or partition that no longer exists: librdkafka
    /// queues it as an error op, which reaches the error callback, not the messages) becomes
    /// that partition's error for the next poll; other errors are logged.
    void on_error(rd_kafka_resp_err_t err, const char* reason);
    void handle_assign_locked(const rd_kafka_topic_partition_list_t* parts);
    void handle_revoke_locked();
    void finish_revoke_locked();
    void notify_change_locked();
    api::assignment_state assignment_locked() const;
    static api::awaitable<void> run_close(std::shared_ptr<upstream_consumer> self);
    static api::awaitable<void> run_revoke(std::shared_ptr<upstream_consumer> self,
                                           std::uint64_t seq, api::assignment_state held);
    static api::awaitable<void> keep_alive(std::weak_ptr<upstream_consumer> weak,
                                           boost::asio::any_io_executor ex,
                                           std::chrono::milliseconds every);

    // --- subscriptions -------------------------------------------------------------------
    void subscribe_locked(const std::vector<topic_name>& topics);
    static api::awaitable<void> pattern_refresh(std::weak_ptr<upstream_consumer> weak,
                                                boost::asio::any_io_executor ex,
                                                std::uint64_t seq);
    std::vector<std::string> list_topics_blocking();

    // --- positions (upstream_consumer_offsets.cc) -----------------------------------------
    /// Holds `parts` (replacing what is held), then resolves their positions and assigns.
    void hold_and_resolve_locked(const std::vector<api::topic_partition>& parts);
    static api::awaitable<void> resolve_then_assign(std::shared_ptr<upstream_consumer> self,
                                                    std::uint64_t seq,
                                                    std::vector<api::topic_partition> parts);
    std::vector<resolved_position> resolve_blocking(
        const std::vector<api::topic_partition>& parts);
    /// rd_kafka_assign with the positions of every held partition (INVALID where unknown:
    /// librdkafka resolves those itself); buffers are dropped (fetching restarts there).
    void assign_held_locked(bool notify);
    /// ListOffsets for `parts` at `ts` (-2 earliest, -1 latest, else a timestamp).
    std::vector<resolved_position> list_offsets_blocking(
        const std::vector<api::topic_partition>& parts, std::int64_t ts);
    void release_buffer_locked(partition_state& ps);
    /// Keeps (once) the fetch queue of a partition handed to librdkafka: see fetch_queues_.
    void keep_fetch_queue_locked(const api::topic_partition& tp);
    /// Empties the kept fetch queues and lets them go; just before rd_kafka_destroy.
    static void release_fetch_queues(std::map<api::topic_partition, rd_kafka_queue_t*> queues);
    /// Starts fetching again at their positions partitions whose fetcher librdkafka stopped
    /// (auto.offset.reset=error) or never started (reset none without a commit).
    void restart_locked(const std::vector<api::topic_partition>& parts);
    using seek_item = std::pair<api::topic_partition, std::uint64_t>;  // with its epoch
    /// rd_kafka_seek_partitions (waiting for librdkafka's answer) of the items still current;
    /// answers those whose fetcher had not started yet (to be tried again).
    std::vector<seek_item> seek_blocking(const std::vector<seek_item>& items);
    static api::awaitable<void> confirm_seeks(std::shared_ptr<upstream_consumer> self,
                                              std::vector<seek_item> items);

    // --- polling (upstream_consumer_poll.cc) -----------------------------------------------
    /// all: everything librdkafka has queued (the keep-alive, while nobody polls: rebalances
    /// queued behind messages get answered), pausing partitions whose buffer is over its cap;
    /// bounded: until the buffers hold poll_drain_cap (a poll; nothing paused).
    enum class drain_mode { all, bounded };
    void drain_locked(drain_mode mode);
    void drain_wake_pipe();
    void reset_cache_locked();
    void accept_locked(message_ptr m);
    partition_state* find_locked(rd_kafka_topic_t* rkt, std::int32_t partition);
    bool ready_locked(std::int32_t min_bytes) const;
    bool resolving_locked() const;
    void pause_full_locked();

    // --- state ---------------------------------------------------------------------------
    upstream_options opts_;
    boost::asio::thread_pool& pool_;
    api::consumer_options copts_;
    boost::asio::any_io_executor ex_;
    std::chrono::milliseconds metadata_refresh_{5000};
    std::shared_ptr<consumer_statistics> stats_;  // null: nobody collects statistics
    std::uint64_t stats_id_ = 0;

    handle_ptr rk_;
    rd_kafka_queue_t* queue_ = nullptr;  // the consumer queue, io events on wake_write_
    int wake_read_ = -1;
    int wake_write_ = -1;
    boost::asio::posix::stream_descriptor wake_;

    mutable std::recursive_mutex mu_;
    std::map<api::topic_partition, partition_state> held_;
    std::map<api::topic_partition, std::int64_t> pending_seeks_;  // not held yet
    /// The fetch queue of every partition given to librdkafka (rd_kafka_queue_get_partition).
    /// librdkafka 2.0.2 leaks a partition removed from the cluster while it is read (its topic
    /// deleted): ops left in the stopped partition's own fetch queue hold the partition, which
    /// holds its broker, and rd_kafka_destroy then waits for that broker thread forever
    /// (librdkafka #4724, fixed in 2.6.1). Emptying these queues before the destroy breaks
    /// the cycle; once removed, a partition can no longer be looked up, hence kept from its
    /// assignment on.
    std::map<api::topic_partition, rd_kafka_queue_t*> fetch_queues_;
    // A one-entry cache for accept_locked (librdkafka's topic handle and partition).
    rd_kafka_topic_t* last_rkt_ = nullptr;
    std::int32_t last_partition_ = -1;
    partition_state* last_state_ = nullptr;

    bool stable_ = true;
    bool revoking_ = false;
    bool group_assigned_ = false;  // held_ comes from the group (not from assign())
    std::uint64_t rebalance_seq_ = 0;
    std::int32_t generation_ = -1;
    std::string member_id_;
    api::backend_error call_error_;  // a consumer-wide error for the next poll

    std::vector<topic_name> topics_;  // as given to subscribe()
    std::optional<std::string> pattern_;
    std::shared_ptr<const re2::RE2> pattern_re_;
    api::topic_filter filter_;
    std::vector<topic_name> resolved_topics_;  // the subscription librdkafka has
    std::uint64_t pattern_seq_ = 0;

    std::function<void()> on_change_;
    revoke_hook revoke_hook_;
    std::size_t rotate_ = 0;  // where the next poll starts among held partitions
    clock::time_point last_drain_{};

    bool closing_ = false;
    bool close_done_ = false;  // rd_kafka_consumer_close has returned (or is skipped)
    bool leave_ = true;
    bool destroy_started_ = false;
    int leases_ = 0;
    bool poll_active_ = false;
    std::atomic<bool> closed_{false};
    // Set by close(): blocking calls on the pool that wait in slices stop after the current one.
    std::atomic<bool> abandoning_{false};
};

}  // namespace sluice::backend::upstream
