// What every librdkafka client of backend/upstream shares (owned by backend/upstream):
// configurations built from the upstream properties (a refused property names itself),
// librdkafka's errors in api terms, blocking librdkafka calls run off the caller's executor,
// and the "upstream" logger.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <librdkafka/rdkafka.h>

#include "backend/api/common.h"
#include "backend/api/logger.h"

namespace sluice::backend::upstream {

inline spdlog::logger& upstream_log() { return named_logger("upstream"); }

struct conf_deleter {
    void operator()(rd_kafka_conf_t* c) const noexcept { rd_kafka_conf_destroy(c); }
};
using conf_ptr = std::unique_ptr<rd_kafka_conf_t, conf_deleter>;

struct handle_deleter {
    void operator()(rd_kafka_t* rk) const noexcept { rd_kafka_destroy(rk); }
};
using handle_ptr = std::unique_ptr<rd_kafka_t, handle_deleter>;

/// A librdkafka configuration with every property of `props` set, then `extra` (the settings a
/// client kind needs, which win). librdkafka's log lines go to the upstream logger at their
/// level; with that logger at debug (--log-level upstream=debug) and no `debug` property,
/// librdkafka's debugging of upstream_debug_contexts is on (at trace: "all"). A property
/// librdkafka refuses throws std::invalid_argument: "upstream.<name>: <librdkafka's message>".
conf_ptr make_conf(const std::map<std::string, std::string>& props,
                   const std::map<std::string, std::string>& extra = {});

/// librdkafka's debug contexts --log-level upstream=debug turns on: connections, topic and
/// partition state, metadata, group membership and rebalances, fetching.
inline constexpr const char* upstream_debug_contexts = "broker,topic,metadata,cgrp,fetch";

struct metadata_deleter {
    void operator()(const rd_kafka_metadata_t* md) const noexcept { rd_kafka_metadata_destroy(md); }
};
using metadata_ptr = std::unique_ptr<const rd_kafka_metadata_t, metadata_deleter>;

struct topic_handle_deleter {
    void operator()(rd_kafka_topic_t* rkt) const noexcept { rd_kafka_topic_destroy(rkt); }
};
using topic_handle_ptr = std::unique_ptr<rd_kafka_topic_t, topic_handle_deleter>;

struct rk_event_deleter {
    void operator()(rd_kafka_event_t* e) const noexcept { rd_kafka_event_destroy(e); }
};
/// An event (an admin request's result) from a queue.
using rk_event_ptr = std::unique_ptr<rd_kafka_event_t, rk_event_deleter>;

struct rk_queue_deleter {
    void operator()(rd_kafka_queue_t* q) const noexcept { rd_kafka_queue_destroy(q); }
};
using rk_queue_ptr = std::unique_ptr<rd_kafka_queue_t, rk_queue_deleter>;

struct rk_partitions_deleter {
    void operator()(rd_kafka_topic_partition_list_t* l) const noexcept {
        rd_kafka_topic_partition_list_destroy(l);
    }
};
using rk_partitions_ptr =
    std::unique_ptr<rd_kafka_topic_partition_list_t, rk_partitions_deleter>;

struct fetched_metadata {
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  // the request's own error
    metadata_ptr md;                                        // null when `err` is set
};

/// Which topics a metadata request asks about.
enum class metadata_scope : std::int8_t {
    known,  // the topics this handle already knows (few or none: the brokers are the point)
    all,    // every topic of the cluster
    one,    // one topic
};

/// The thread pool a client runs its blocking librdkafka calls on, and whether that client is
/// closing. librdkafka cannot end a call in flight early (a metadata request to a cluster that
/// is gone waits out its whole timeout, and the client's destructor joins the pool), so the
/// waits that can be cut up (fetch_metadata, an admin request's answer) wait in slices and give
/// up between two slices once the client closes: closing then waits one slice, not a request
/// timeout.
class blocking_pool : public boost::asio::thread_pool {
  public:
    using boost::asio::thread_pool::thread_pool;
    void start_closing() noexcept { closing_.store(true); }
    bool closing() const noexcept { return closing_.load(); }

  private:
    std::atomic<bool> closing_{false};
};

namespace detail {
/// The pool whose blocking call runs on this thread now (null elsewhere).
inline thread_local const blocking_pool* current_pool = nullptr;
}  // namespace detail

/// For its lifetime, closing_now() on this thread answers for `pool` (run_blocking sets it; a
/// job posted to the pool by hand makes one).
class in_blocking_pool {
  public:
    explicit in_blocking_pool(const blocking_pool& pool) noexcept {
        detail::current_pool = &pool;
    }
    ~in_blocking_pool() { detail::current_pool = nullptr; }
    in_blocking_pool(const in_blocking_pool&) = delete;
    in_blocking_pool& operator=(const in_blocking_pool&) = delete;
};

/// Whether the client whose pool runs the current blocking call is closing (false off a pool).
inline bool closing_now() noexcept {
    return detail::current_pool != nullptr && detail::current_pool->closing();
}

/// Blocking: `ask(ms)`, a librdkafka request that can simply be asked again (metadata,
/// watermarks, offsets for times), in growing slices (1, 2, 4, then 8 s) up to `timeout`:
/// asked again while it answers __TIMED_OUT, given up between two slices once closing_now()
/// or `give_up()`. librdkafka waits out the whole wait when a partition has no known leader or
/// the cluster is gone; a close then waits one slice, not the request timeout. Answers the
/// last answer.
template <typename Ask, typename GiveUp>
rd_kafka_resp_err_t ask_in_slices(std::chrono::milliseconds timeout, Ask ask, GiveUp give_up) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + timeout;
    std::chrono::milliseconds slice{1000};
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        const auto wait = std::max<std::int64_t>(std::min(slice, left).count(), 1);
        const rd_kafka_resp_err_t err = ask(static_cast<int>(wait));
        if (err != RD_KAFKA_RESP_ERR__TIMED_OUT || clock::now() >= deadline || closing_now() ||
            give_up()) {
            return err;
        }
        slice = std::min(slice * 2, std::chrono::milliseconds(8000));
    }
}
template <typename Ask>
rd_kafka_resp_err_t ask_in_slices(std::chrono::milliseconds timeout, Ask ask) {
    return ask_in_slices(timeout, std::move(ask), [] { return false; });
}

/// Blocking: the cluster's metadata (brokers, controller, topics as `scope` says; with `one`,
/// the topic's entry carries UNKNOWN_TOPIC_OR_PART when it does not exist: the handle should
/// have allow.auto.create.topics=false so that asking does not create it). Run it on a pool.
/// Asked in slices (ask_in_slices).
fetched_metadata fetch_metadata(rd_kafka_t* rk, metadata_scope scope, const std::string& topic,
                                std::chrono::milliseconds timeout);

/// Creates a client of `type` from `conf` (taken). Throws std::invalid_argument with
/// librdkafka's message when it refuses.
handle_ptr make_handle(rd_kafka_type_t type, conf_ptr conf);

/// What a librdkafka error means in api terms (RD_KAFKA_RESP_ERR_NO_ERROR: empty).
std::error_code to_error_code(rd_kafka_resp_err_t err) noexcept;
/// The error with librdkafka's message (or the code's own text when `message` is empty).
api::backend_error to_backend_error(rd_kafka_resp_err_t err, const char* message = nullptr);

/// Runs `f` (a blocking librdkafka call) on `pool` and resumes on the caller's executor with
/// its value. `f` must not throw.
/// compat: g++ 12 destroys a temporary of a co_await expression twice when it has a
/// destructor: a lambda that captures by value (a string, a vector) must be a named variable
/// passed with std::move, never written inside `co_await run_blocking(pool, [...] {...})`.
/// While `f` runs, closing_now() answers for `pool`.
template <typename F>
auto run_blocking(blocking_pool& pool, F f) -> api::awaitable<std::invoke_result_t<F&>> {
    using R = std::invoke_result_t<F&>;
    // `f` lives in this frame until the pool's coroutine completes; the lambda handed to
    // co_spawn only refers to it (co_spawn takes its function by value into a coroutine, and
    // a lambda with by-value captures passed that way is destroyed twice by g++ 12). The
    // coroutine does not suspend while `f` runs: the thread's current pool is `pool` throughout.
    co_return co_await boost::asio::co_spawn(
        pool.get_executor(),
        [&f, &pool]() -> api::awaitable<R> {
            in_blocking_pool in_pool(pool);
            co_return f();
        },
        boost::asio::use_awaitable);
}

}  // namespace sluice::backend::upstream
