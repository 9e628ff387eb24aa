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

#include "gateway/http/router.h"

namespace sluice::gateway::rest {

/// compat: the codes of kafka-rest's Errors.java and rest-utils' KafkaExceptionMapper.
enum class code : std::int32_t {
    bad_request = 400,           // malformed JSON, a field of the wrong type (plain HTTP)
    not_found = 404,             // no such route or cluster
    unsupported_media_type = 415,
    payload_too_large = 413,
    unprocessable = 422,         // valid JSON that the request cannot take
    kafka_bad_request = 40002,   // the backend refused the arguments (Kafka's bad request)
    forbidden = 40301,           // writing an internal topic
    topic_not_found = 40401,
    partition_not_found = 40402,
    consumer_instance_not_found = 40403,
    unknown_topic_or_partition = 40403,  // API v3 (compat: KafkaExceptionMapper)
    leader_not_available = 40404,
    consumer_group_not_found = 40405,
    consumer_format_mismatch = 40601,
    consumer_already_subscribed = 40901,
    consumer_already_exists = 40902,
    illegal_state = 40903,
    key_schema_missing = 42201,
    value_schema_missing = 42202,
    json_conversion = 42203,
    invalid_consumer_config = 42204,
    invalid_schema = 42205,
    invalid_payload = 42206,
    serialization = 42207,
    produce_batch = 42208,
    internal = 500,
    kafka_error = 50002,          // a backend failure of no more specific kind
    kafka_retriable_error = 50003,  // a backend failure that a retry may not see
    insufficient_storage = 50701,   // the storage is full or failing: retry once it recovers
};

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

/// The per-record error code of a produce answer for a partition's backend error: 50003 when a
/// retry may succeed, 50002 otherwise (compat: AbstractProduceAction.errorCodeFromProducerException).
code produce_error_code(const std::error_code& ec);

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
