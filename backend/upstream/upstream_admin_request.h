// The admin request pattern shared by the files of upstream_admin (owned by
// backend/upstream): one request on a queue of its own, waited for with a bound, and the
// errors of its answer in api terms. Internal to upstream_admin*.cc.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

#include "backend/api/common.h"
#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream::admin_detail {

struct admin_options_deleter {
    void operator()(rd_kafka_AdminOptions_t* o) const noexcept { rd_kafka_AdminOptions_destroy(o); }
};
using admin_options_ptr = std::unique_ptr<rd_kafka_AdminOptions_t, admin_options_deleter>;

/// Blocking: one admin request. `start(options, queue)` issues it; the answer is its result
/// event, or null when none came within the timeout (then: request_timed_out).
template <typename Start>
rk_event_ptr admin_request(rd_kafka_t* rk, rd_kafka_admin_op_t op,
                           std::chrono::milliseconds timeout, bool validate_only, Start start) {
    rk_queue_ptr queue(rd_kafka_queue_new(rk));
    admin_options_ptr options(rd_kafka_AdminOptions_new(rk, op));
    char err[256];
    const int ms = static_cast<int>(std::max<std::int64_t>(timeout.count(), 1));
    rd_kafka_AdminOptions_set_request_timeout(options.get(), ms, err, sizeof err);
    if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS || op == RD_KAFKA_ADMIN_OP_DELETETOPICS ||
        op == RD_KAFKA_ADMIN_OP_CREATEPARTITIONS || op == RD_KAFKA_ADMIN_OP_DELETERECORDS) {
        // Wait for the controller to finish, so that what follows sees the change.
        rd_kafka_AdminOptions_set_operation_timeout(options.get(), ms, err, sizeof err);
    }
    if (validate_only) {
        rd_kafka_AdminOptions_set_validate_only(options.get(), 1, err, sizeof err);
    }
    start(options.get(), queue.get());
    // A little longer than the request's own timeout, so that its timeout error wins; in
    // slices, given up once the client closes (closing_now: its answer is not waited for).
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(ms + 1000);
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        const int wait = static_cast<int>(std::clamp<std::int64_t>(left.count(), 1, 200));
        if (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue.get(), wait)) {
            return rk_event_ptr(ev);
        }
        if (clock::now() >= deadline || closing_now()) {
            return nullptr;
        }
    }
}

inline api::backend_error timed_out(const char* what, std::chrono::milliseconds timeout) {
    return api::backend_error(api::make_error_code(api::errc::request_timed_out),
                              fmt::format("{}: no answer within {} ms", what, timeout.count()));
}

/// The request-level error of an admin result event (empty when it succeeded).
inline api::backend_error event_error(rd_kafka_event_t* ev) {
    return to_backend_error(rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
}

inline api::backend_error error_of(const rd_kafka_error_t* e) {
    if (!e) {
        return {};
    }
    return to_backend_error(rd_kafka_error_code(e), rd_kafka_error_string(e));
}

/// What the answer `ev` of a request about one topic (CreateTopics, DeleteTopics,
/// CreatePartitions) says: no answer in time, the request's own error, or the topic's error;
/// empty when it succeeded. `result_of` and `topics_of` are the request's librdkafka accessors
/// (rd_kafka_event_CreateTopics_result, rd_kafka_CreateTopics_result_topics). A topic error
/// UNKNOWN_TOPIC_OR_PART becomes `if_unknown` when that is set.
template <typename Result>
api::backend_error topic_result_error(const rk_event_ptr& ev, const char* what,
                                      std::chrono::milliseconds timeout,
                                      const Result* (*result_of)(rd_kafka_event_t*),
                                      const rd_kafka_topic_result_t** (*topics_of)(const Result*,
                                                                                   size_t*),
                                      api::backend_error if_unknown = {}) {
    if (!ev) {
        return timed_out(what, timeout);
    }
    if (auto e = event_error(ev.get())) {
        return e;
    }
    size_t n = 0;
    const Result* result = result_of(ev.get());
    const rd_kafka_topic_result_t** topics = result ? topics_of(result, &n) : nullptr;
    if (n == 0) {
        return {};
    }
    const rd_kafka_resp_err_t err = rd_kafka_topic_result_error(topics[0]);
    if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && if_unknown) {
        return if_unknown;
    }
    return to_backend_error(err, rd_kafka_topic_result_error_string(topics[0]));
}

inline std::optional<std::string> optional_string(const char* s) {
    return s ? std::optional<std::string>(s) : std::nullopt;
}

}  // namespace sluice::backend::upstream::admin_detail
