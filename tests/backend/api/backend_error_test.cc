// backend/api's one error shape (common.h): backend_error and backend_result.
#include <type_traits>

#include <gtest/gtest.h>

#include "backend/api/common.h"

namespace sluice::backend::api {
namespace {

TEST(BackendError, EmptyIsSuccess) {
    const backend_error e;
    EXPECT_FALSE(e);
    EXPECT_FALSE(e.code);
    EXPECT_TRUE(e.message.empty());
}

// The hot paths answer every partition with one: making, moving and converting from a code
// cannot allocate (they cannot throw).
static_assert(std::is_nothrow_default_constructible_v<backend_error>);
static_assert(std::is_nothrow_move_constructible_v<backend_error>);
static_assert(std::is_nothrow_constructible_v<backend_error, std::error_code>);
static_assert(std::is_nothrow_constructible_v<backend_error, errc>);

TEST(BackendError, CodeAloneIsAnErrorWithTheCodesText) {
    const backend_error e = errc::request_timed_out;
    EXPECT_TRUE(e);
    EXPECT_EQ(e.reason(), errc::request_timed_out);
    EXPECT_EQ(reason(e), errc::request_timed_out);
    EXPECT_EQ(e.text(), make_error_code(errc::request_timed_out).message());
}

TEST(BackendError, ClientMessageWinsOverTheCodesText) {
    const backend_error e(make_error_code(errc::invalid_config), "retention.ms must be a number");
    EXPECT_EQ(e.text(), "retention.ms must be a number");
}

TEST(BackendError, ComparesByCodeOnly) {
    const backend_error e(make_error_code(errc::not_leader), "moved");
    EXPECT_EQ(e, errc::not_leader);
    EXPECT_EQ(e, make_error_code(errc::not_leader));
    EXPECT_NE(e, errc::not_coordinator);
}

TEST(BackendResult, FailureSidesCarryCodeAndMessage) {
    backend_result<int> a = sluice::fail(errc::backend_unavailable);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error(), errc::backend_unavailable);
    EXPECT_TRUE(a.error().message.empty());

    backend_result<int> b = backend_failure(make_error_code(errc::invalid_config), "bad key");
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().message, "bad key");

    EXPECT_TRUE(to_result(std::error_code{}));
    EXPECT_EQ(to_result(make_error_code(errc::backend_authentication_failed)).error(),
              errc::backend_authentication_failed);
}

TEST(BackendResult, ErrorOfIsEmptyForAValue) {
    EXPECT_FALSE(error_of(backend_result<int>(3)));
    const backend_result<void> failed = backend_failure(make_error_code(errc::not_leader), "moved");
    EXPECT_EQ(error_of(failed), errc::not_leader);
    EXPECT_EQ(error_of(failed).message, "moved");
}

TEST(Errc, RemoteBackendCodesHaveMessagesAndMeanThemselves) {
    for (errc e : {errc::request_timed_out, errc::backend_unavailable,
                   errc::backend_authentication_failed, errc::backend_authorization_failed}) {
        const auto ec = make_error_code(e);
        EXPECT_EQ(reason(ec), e);
        EXPECT_NE(ec.message(), "unknown backend error");
    }
}

}  // namespace
}  // namespace sluice::backend::api
