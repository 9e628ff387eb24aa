// The Confluent REST Proxy's error codes (owned by gateway/http; error_mapping.h maps backend
// errors to them and gives their HTTP statuses). Plain values, for the code that reads request
// bodies without the server around it.
#pragma once

#include <cstdint>

namespace sluice::gateway::rest {

/// compat: the codes of kafka-rest's Errors.java and rest-utils' KafkaExceptionMapper.
enum class code : std::int32_t {
    bad_request = 400,           // malformed JSON, a field of the wrong type (plain HTTP)
    not_found = 404,             // no such route or cluster
    unsupported_media_type = 415,
    payload_too_large = 413,
    unprocessable = 422,         // valid JSON that the request cannot take
    kafka_bad_request = 40002,   // the backend refused the arguments (Kafka's bad request)
    kafka_authentication_error = 40101,  // the backend refused the gateway's credentials (401)
    forbidden = 40301,           // writing an internal topic
    kafka_authorization_error = 40301,   // the backend's ACLs refused the operation (403)
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
    broker_not_available = 50302,   // the backend cannot be reached (503): retry
    insufficient_storage = 50701,   // the storage is full or failing: retry once it recovers
};

}  // namespace sluice::gateway::rest
