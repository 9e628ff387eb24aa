// The codes only a remote backend answers (backend/api/errc.h), mapped on every front.
#include <gtest/gtest.h>

#include "backend/api/common.h"
#include "gateway/http/error_mapping.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/sqs/errors.h"

namespace sluice::gateway {
namespace {

namespace api = backend::api;
namespace kafka = protocol::kafka;
using rest::code;

TEST(RemoteBackendErrors, KafkaAnswersAsABrokerWould) {
    EXPECT_EQ(to_kafka(api::errc::request_timed_out), kafka::error_code::request_timed_out);
    EXPECT_EQ(to_kafka(api::errc::backend_unavailable), kafka::error_code::leader_not_available);
    EXPECT_EQ(to_kafka(api::errc::backend_authentication_failed),
              kafka::error_code::broker_not_available);
    EXPECT_EQ(to_kafka(api::errc::backend_authorization_failed),
              kafka::error_code::topic_authorization_failed);
    // A moved leader or coordinator keeps its code.
    EXPECT_EQ(to_kafka(api::errc::not_leader), kafka::error_code::not_leader_or_follower);
    EXPECT_EQ(to_kafka(api::errc::not_coordinator), kafka::error_code::not_coordinator);
    // The backend's error shape maps by its code.
    EXPECT_EQ(to_kafka(api::backend_error(make_error_code(api::errc::request_timed_out), "slow")),
              kafka::error_code::request_timed_out);
    EXPECT_EQ(to_kafka(api::backend_error()), kafka::error_code::none);
}

TEST(RemoteBackendErrors, RestAnswersAsTheRestProxyDoes) {
    const auto timed_out = rest::from_backend(api::errc::request_timed_out);
    EXPECT_EQ(timed_out.code, code::kafka_retriable_error);
    EXPECT_EQ(rest::http_status(timed_out.code), 500u);
    const auto unavailable = rest::from_backend(api::errc::backend_unavailable);
    EXPECT_EQ(static_cast<int>(unavailable.code), 50302);
    EXPECT_EQ(rest::http_status(unavailable.code), 503u);
    const auto login = rest::from_backend(api::errc::backend_authentication_failed);
    EXPECT_EQ(static_cast<int>(login.code), 40101);
    EXPECT_EQ(rest::http_status(login.code), 401u);
    const auto acl = rest::from_backend(api::errc::backend_authorization_failed);
    EXPECT_EQ(static_cast<int>(acl.code), 40301);
    EXPECT_EQ(rest::http_status(acl.code), 403u);
    // Per record of a produce: retriable when a retry may succeed.
    EXPECT_EQ(rest::produce_error_code(make_error_code(api::errc::request_timed_out)),
              code::kafka_retriable_error);
    EXPECT_EQ(rest::produce_error_code(make_error_code(api::errc::backend_unavailable)),
              code::kafka_retriable_error);
    EXPECT_EQ(rest::produce_error_code(make_error_code(api::errc::backend_authorization_failed)),
              code::kafka_error);
}

TEST(RemoteBackendErrors, SqsAnswersAsAwsNamesThem) {
    const auto timed_out = sqs::to_sqs(api::backend_error(api::errc::request_timed_out));
    EXPECT_EQ(timed_out.status, 503u);
    EXPECT_EQ(timed_out.query_code, "ServiceUnavailable");
    EXPECT_FALSE(timed_out.sender);
    const auto unavailable = sqs::to_sqs(api::backend_error(api::errc::backend_unavailable));
    EXPECT_EQ(unavailable.status, 503u);
    EXPECT_EQ(unavailable.json_type, "ServiceUnavailable");
    const auto login = sqs::to_sqs(api::backend_error(api::errc::backend_authentication_failed));
    EXPECT_EQ(login.status, 500u);
    EXPECT_EQ(login.query_code, "InternalFailure");
    const auto acl = sqs::to_sqs(api::backend_error(api::errc::backend_authorization_failed));
    EXPECT_EQ(acl.query_code, "AccessDenied");
    // The client message wins over the code's own.
    EXPECT_EQ(sqs::to_sqs(api::backend_error(make_error_code(api::errc::backend_unavailable),
                                             "cluster down"))
                  .message,
              "cluster down");
}

}  // namespace
}  // namespace sluice::gateway
