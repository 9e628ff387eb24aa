// The errors of the HTTP front (owned by gateway/http): the Confluent REST Proxy's five-digit
// error codes with their HTTP statuses, and the one place where backend errors become them
// (STYLE.md section 4), like gateway/kafka/error_mapping.cc for the Kafka front. REST, WebSocket
// and SSE errors all use these codes.
//
// Answers are {"error_code": <code>, "message": "..."}; the HTTP status is the code's first
// three digits (40401 -> 404), or the code itself for plain HTTP errors (400, 415).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "backend/api/common.h"
#include "gateway/http/error_codes.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway::rest {


/// The HTTP status that goes with `c`.
unsigned http_status(code c);

/// An error answer: its code and message.
struct error {
    rest::code code = rest::code::internal;
    std::string message;
};

/// The REST error for a backend error (by its api meaning, backend/api/errc.h). What is
/// unknown or missing depends on the call: the caller says which resource a not-found names.
enum class subject { topic, partition, record };
error from_backend(const std::error_code& ec, subject about = subject::topic);
inline error from_backend(const backend::api::backend_error& e, subject about = subject::topic) {
    return from_backend(e.code, about);
}
template <typename E>
    requires std::is_error_code_enum_v<E>
error from_backend(E e, subject about = subject::topic) {
    return from_backend(make_error_code(e), about);
}

/// The per-record error code of a produce answer for a partition's backend error: 50003 when a
/// retry may succeed, 50002 otherwise (compat: AbstractProduceAction.errorCodeFromProducerException).
code produce_error_code(const std::error_code& ec);
inline code produce_error_code(const backend::api::backend_error& e) {
    return produce_error_code(e.code);
}
template <typename E>
    requires std::is_error_code_enum_v<E>
code produce_error_code(E e) {
    return produce_error_code(make_error_code(e));
}

/// {"error_code":<code>,"message":"..."} with the code's status and `content_type`.
http_response error_response(const error& e, std::string_view content_type);

/// Fixed messages of the REST Proxy (compat: Errors.java).
inline constexpr std::string_view topic_not_found_message = "Topic not found.";
inline constexpr std::string_view partition_not_found_message = "Partition not found.";
inline constexpr std::string_view instance_not_found_message = "Consumer instance not found.";
inline constexpr std::string_view format_mismatch_message =
    "The requested embedded data format does not match the deserializer for this consumer "
    "instance";
inline constexpr std::string_view already_subscribed_message =
    "Consumer cannot subscribe the the specified target because it has already subscribed to "
    "other topics.";
inline constexpr std::string_view already_exists_message =
    "Consumer with specified consumer ID already exists in the specified consumer group.";
inline constexpr std::string_view unsupported_media_type_message =
    "HTTP 415 Unsupported Media Type";

}  // namespace sluice::gateway::rest
