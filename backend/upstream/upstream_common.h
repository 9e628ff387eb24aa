// What every librdkafka client of backend/upstream shares (owned by backend/upstream):
// configurations built from the upstream properties (a refused property names itself),
// librdkafka's errors in api terms, blocking librdkafka calls run off the caller's executor,
// and the "upstream" logger.
#pragma once

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
/// client kind needs, which win). librdkafka's log lines go to the upstream logger. A property
/// librdkafka refuses throws std::invalid_argument: "upstream.<name>: <librdkafka's message>".
conf_ptr make_conf(const std::map<std::string, std::string>& props,
                   const std::map<std::string, std::string>& extra = {});

/// Creates a client of `type` from `conf` (taken). Throws std::invalid_argument with
/// librdkafka's message when it refuses.
handle_ptr make_handle(rd_kafka_type_t type, conf_ptr conf);

/// What a librdkafka error means in api terms (RD_KAFKA_RESP_ERR_NO_ERROR: empty).
std::error_code to_error_code(rd_kafka_resp_err_t err) noexcept;
/// The error with librdkafka's message (or the code's own text when `message` is empty).
api::backend_error to_backend_error(rd_kafka_resp_err_t err, const char* message = nullptr);

/// Runs `f` (a blocking librdkafka call) on `pool` and resumes on the caller's executor with
/// its value. `f` must not throw.
template <typename F>
auto run_blocking(boost::asio::thread_pool& pool, F f)
    -> api::awaitable<std::invoke_result_t<F&>> {
    using R = std::invoke_result_t<F&>;
    co_return co_await boost::asio::co_spawn(
        pool.get_executor(),
        [f = std::move(f)]() mutable -> api::awaitable<R> { co_return f(); },
        boost::asio::use_awaitable);
}

}  // namespace sluice::backend::upstream
