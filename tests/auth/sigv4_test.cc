// AWS Signature Version 4: the steps against AWS's published IAM ListUsers example, then
// verify_sigv4 on requests signed with those steps (header and presigned forms), and what it
// must refuse: a body other than the signed one, UNSIGNED-PAYLOAD on SQS, an unsigned
// X-Amz-Target, a presigned URL with a body or an X-Amz-Target.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "auth/aws_key_store.h"
#include "auth/crypto.h"
#include "auth/sigv4.h"

namespace sluice::auth {
namespace {

using namespace std::chrono_literals;

const std::string example_secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

sigv4_request list_users_example() {
    sigv4_request r;
    r.method = "GET";
    r.path = "/";
    r.query = "Action=ListUsers&Version=2010-05-08";
    r.headers = {{"Host", "iam.amazonaws.com"},
                 {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
                 {"X-Amz-Date", "20150830T123600Z"}};
    return r;
}

const std::string empty_hash = hex_lower(hash(hash_algorithm::sha256, ""));

TEST(SigV4, CanonicalRequestOfAwsExample) {
    const auto cr = sigv4_canonical_request(list_users_example(),
                                            {"content-type", "host", "x-amz-date"}, empty_hash, "");
    EXPECT_EQ(cr,
              "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
              "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
              "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
              "content-type;host;x-amz-date\n"
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex_lower(hash(hash_algorithm::sha256, cr)),
              "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
}

TEST(SigV4, SigningKeyAndSignatureOfAwsExample) {
    const auto key = sigv4_signing_key(example_secret, "20150830", "us-east-1", "iam");
    EXPECT_EQ(hex_lower(key), "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
    const auto cr = sigv4_canonical_request(list_users_example(),
                                            {"content-type", "host", "x-amz-date"}, empty_hash, "");
    const auto sts =
        sigv4_string_to_sign("20150830T123600Z", "20150830/us-east-1/iam/aws4_request", cr);
    EXPECT_EQ(hex_lower(hmac(hash_algorithm::sha256, key, sts)),
              "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST(SigV4, CanonicalQuerySortsAndReencodes) {
    EXPECT_EQ(sigv4_canonical_query("b=2&a=x%20y&a=1&c"), "a=1&a=x%20y&b=2&c=");
    EXPECT_EQ(sigv4_canonical_query("k=a+b&X-Amz-Signature=ff", "X-Amz-Signature"), "k=a%2Bb");
    EXPECT_EQ(sigv4_uri_encode("/000000000000/q~1 x", true), "/000000000000/q~1%20x");
}

// Signs `r` as a client would (header form) with `secret` for sqs in us-east-1 at `date`:
// `signed_headers` (sorted, lower case) and `payload` as the canonical request's payload hash
// (by default the SHA-256 of the body).
void sign(sigv4_request& r, const std::string& id, const std::string& secret,
          const std::string& amz_date,
          const std::vector<std::string>& signed_headers = {"host", "x-amz-date"},
          std::optional<std::string> payload = std::nullopt) {
    r.headers.emplace_back("X-Amz-Date", amz_date);
    if (!payload) {
        payload = hex_lower(hash(hash_algorithm::sha256, r.body));
    }
    const auto scope = amz_date.substr(0, 8) + "/us-east-1/sqs/aws4_request";
    const auto sts = sigv4_string_to_sign(
        amz_date, scope, sigv4_canonical_request(r, signed_headers, *payload, ""));
    const auto sig = hex_lower(hmac(hash_algorithm::sha256,
                                    sigv4_signing_key(secret, amz_date.substr(0, 8), "us-east-1",
                                                      "sqs"),
                                    sts));
    std::string names;
    for (const auto& name : signed_headers) {
        names += names.empty() ? name : ";" + name;
    }
    r.headers.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + id + "/" + scope +
                                                ", SignedHeaders=" + names +
                                                ", Signature=" + sig);
}

// Presigns `r` (its query holds the action) for sqs at 2015-08-30T12:36:00Z for 60 seconds,
// with `payload` as the canonical request's payload hash.
void presign(sigv4_request& r, const std::string& payload) {
    const std::string date = "20150830T123600Z";
    const std::string scope = "20150830/us-east-1/sqs/aws4_request";
    r.query += "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
               "AKIAALICE0000000EXAM%2F20150830%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Date=" +
               date + "&X-Amz-Expires=60&X-Amz-SignedHeaders=host";
    const auto sts = sigv4_string_to_sign(
        date, scope, sigv4_canonical_request(r, {"host"}, payload, "X-Amz-Signature"));
    const auto sig = hex_lower(hmac(
        hash_algorithm::sha256, sigv4_signing_key(example_secret, "20150830", "us-east-1", "sqs"),
        sts));
    r.query += "&X-Amz-Signature=" + sig;
}

const std::string aws_mismatch_message =
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.";

struct SigV4Verify : ::testing::Test {
    aws_key_store keys{"/nonexistent/aws-keys"};
    const std::chrono::system_clock::time_point now =
        std::chrono::system_clock::from_time_t(1440938160);  // 2015-08-30T12:36:00Z
    sigv4_request req;

    void SetUp() override {
        keys.set("alice", "AKIAALICE0000000EXAM", example_secret);
        req.method = "POST";
        req.path = "/";
        req.headers = {{"Host", "127.0.0.1:9324"},
                       {"Content-Type", "application/x-www-form-urlencoded"}};
        req.body = "Action=ListQueues&Version=2012-11-05";
    }
};

TEST_F(SigV4Verify, RightKeyVerifies) {
    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z");
    auto o = verify_sigv4(req, keys, "sqs", now);
    EXPECT_EQ(o.error, sigv4_error::none) << o.message;
    EXPECT_EQ(o.user, "alice");
}

TEST_F(SigV4Verify, WrongSecretDoesNotMatch) {
    sign(req, "AKIAALICE0000000EXAM", "not-the-secret", "20150830T123600Z");
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error, sigv4_error::signature_does_not_match);
}

TEST_F(SigV4Verify, TamperedBodyDoesNotMatch) {
    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z");
    req.body += "&QueueNamePrefix=x";
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error, sigv4_error::signature_does_not_match);
}

TEST_F(SigV4Verify, UnknownKeyIsAnInvalidClientTokenId) {
    sign(req, "AKIAUNKNOWN00000EXAM", example_secret, "20150830T123600Z");
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error, sigv4_error::invalid_client_token_id);
}

TEST_F(SigV4Verify, FifteenMinutesOfSkewAllowedNotMore) {
    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z");
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now + 15min).error, sigv4_error::none);
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now + 16min).error, sigv4_error::request_expired);
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now - 16min).error, sigv4_error::request_expired);
}

TEST_F(SigV4Verify, UnsignedRequestIsMissingTheToken) {
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error,
              sigv4_error::missing_authentication_token);
}

TEST_F(SigV4Verify, MalformedAuthorizationIsIncomplete) {
    for (std::string bad : {"AWS4-HMAC-SHA256 Credential=x", "Basic abc",
                            "AWS4-HMAC-SHA256 Credential=AKIAALICE0000000EXAM/2015/us-east-1/sqs/"
                            "aws4_request, SignedHeaders=host, Signature=00"}) {
        auto r = req;
        r.headers.emplace_back("Authorization", bad);
        r.headers.emplace_back("X-Amz-Date", "20150830T123600Z");
        EXPECT_EQ(verify_sigv4(r, keys, "sqs", now).error, sigv4_error::incomplete_signature)
            << bad;
    }
}

TEST_F(SigV4Verify, PresignedQueryVerifiesAndExpires) {
    req.method = "GET";
    req.body.clear();
    req.query = "Action=ListQueues";
    presign(req, empty_hash);
    auto ok = verify_sigv4(req, keys, "sqs", now + 30s);
    EXPECT_EQ(ok.error, sigv4_error::none) << ok.message;
    EXPECT_EQ(ok.form, "query");
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now + 61s).error, sigv4_error::request_expired);
    auto tampered = req;
    tampered.query.replace(tampered.query.find("ListQueues"), 10, "CreateQueue");
    EXPECT_EQ(verify_sigv4(tampered, keys, "sqs", now).error,
              sigv4_error::signature_does_not_match);
}

// The body's hash is computed, never taken from X-Amz-Content-Sha256: a header carrying the
// signed body's hash does not let another body through.
TEST_F(SigV4Verify, ContentSha256ThatDisagreesWithTheBodyDoesNotMatch) {
    const auto signed_hash = hex_lower(hash(hash_algorithm::sha256, req.body));
    for (bool header_signed : {false, true}) {
        auto r = req;
        r.headers.emplace_back("X-Amz-Content-Sha256", signed_hash);
        sign(r, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z",
             header_signed ? std::vector<std::string>{"host", "x-amz-content-sha256", "x-amz-date"}
                           : std::vector<std::string>{"host", "x-amz-date"});
        auto ok = verify_sigv4(r, keys, "sqs", now);
        EXPECT_EQ(ok.error, sigv4_error::none) << ok.message;

        r.body = "Action=PurgeQueue&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq";
        const auto o = verify_sigv4(r, keys, "sqs", now);
        EXPECT_EQ(o.error, sigv4_error::signature_does_not_match) << header_signed;
        EXPECT_EQ(o.message, aws_mismatch_message);
        EXPECT_NE(o.detail.find("X-Amz-Content-Sha256"), std::string::npos) << o.detail;
        EXPECT_EQ(o.user, "alice");
    }
}

// A header that claims another hash than the body's is refused even when the signature was
// made over that claim (what a client that hashed the wrong bytes sends).
TEST_F(SigV4Verify, SignedContentSha256OfAnotherBodyDoesNotMatch) {
    const auto other = hex_lower(hash(hash_algorithm::sha256, "Action=SendMessage"));
    req.headers.emplace_back("X-Amz-Content-Sha256", other);
    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z",
         {"host", "x-amz-content-sha256", "x-amz-date"}, other);
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error, sigv4_error::signature_does_not_match);
}

TEST_F(SigV4Verify, UnsignedPayloadIsRefusedOnSqs) {
    req.headers.emplace_back("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD");
    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z",
         {"host", "x-amz-content-sha256", "x-amz-date"}, "UNSIGNED-PAYLOAD");
    const auto o = verify_sigv4(req, keys, "sqs", now);
    EXPECT_EQ(o.error, sigv4_error::signature_does_not_match);
    EXPECT_NE(o.message.find("UNSIGNED-PAYLOAD is not accepted by sqs"), std::string::npos)
        << o.message;
    // Where a service's rules allow it, the same request verifies.
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now, sigv4_rules{.unsigned_payload = true}).error,
              sigv4_error::none);
}

TEST_F(SigV4Verify, PresignedWithUnsignedPayloadIsRefusedOnSqs) {
    req.method = "GET";
    req.body.clear();
    req.query = "Action=ListQueues";
    presign(req, "UNSIGNED-PAYLOAD");
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now).error, sigv4_error::signature_does_not_match);
    EXPECT_EQ(verify_sigv4(req, keys, "sqs", now, sigv4_rules{.unsigned_payload = true}).error,
              sigv4_error::none);
}

TEST_F(SigV4Verify, UnsignedXAmzTargetIsRefused) {
    req.body = "{}";
    req.headers = {{"Host", "127.0.0.1:9324"}, {"Content-Type", "application/x-amz-json-1.0"},
                   {"X-Amz-Target", "AmazonSQS.ListQueues"}};
    auto signed_target = req;
    sign(signed_target, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z",
         {"host", "x-amz-date", "x-amz-target"});
    EXPECT_EQ(verify_sigv4(signed_target, keys, "sqs", now).error, sigv4_error::none);

    sign(req, "AKIAALICE0000000EXAM", example_secret, "20150830T123600Z");
    const auto o = verify_sigv4(req, keys, "sqs", now);
    EXPECT_EQ(o.error, sigv4_error::signature_does_not_match);
    EXPECT_NE(o.message.find("X-Amz-Target"), std::string::npos) << o.message;
}

// A presigned ListQueues URL with a body, whatever the body's hash header says, does not run
// the body's action.
TEST_F(SigV4Verify, PresignedWithABodyIsAnInvalidParameterCombination) {
    req.query = "Action=ListQueues";
    req.body.clear();
    for (const auto& payload : {empty_hash, std::string("UNSIGNED-PAYLOAD")}) {
        auto r = req;
        presign(r, payload);
        r.body = "Action=SendMessage&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq&MessageBody=x";
        r.headers.emplace_back("X-Amz-Content-Sha256", payload);
        for (const auto& rules : {sigv4_rules{}, sigv4_rules{.unsigned_payload = true}}) {
            const auto o = verify_sigv4(r, keys, "sqs", now, rules);
            EXPECT_EQ(o.error, sigv4_error::invalid_parameter_combination) << payload;
            EXPECT_EQ(sigv4_error_code(o.error), "InvalidParameterCombination");
            EXPECT_EQ(sigv4_error_status(o.error), 400u);
            EXPECT_NE(o.message.find("without a body"), std::string::npos) << o.message;
        }
    }
}

TEST_F(SigV4Verify, PresignedWithXAmzTargetIsAnInvalidParameterCombination) {
    req.query = "Action=ListQueues";
    req.body.clear();
    presign(req, empty_hash);
    req.headers.emplace_back("X-Amz-Target", "AmazonSQS.SendMessage");
    const auto o = verify_sigv4(req, keys, "sqs", now);
    EXPECT_EQ(o.error, sigv4_error::invalid_parameter_combination);
    EXPECT_NE(o.message.find("X-Amz-Target"), std::string::npos) << o.message;
}

TEST_F(SigV4Verify, WrongSignatureCarriesAwsMessage) {
    sign(req, "AKIAALICE0000000EXAM", "not-the-secret", "20150830T123600Z");
    const auto o = verify_sigv4(req, keys, "sqs", now);
    EXPECT_EQ(o.message, aws_mismatch_message);
    EXPECT_TRUE(o.detail.empty());
}

TEST(AwsKeyStore, SaveLoadRoundTripAndOneKeyPerUser) {
    const auto dir = std::filesystem::temp_directory_path() / "sluice-aws-keys-test";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    aws_key_store keys(aws_key_store::path_in(dir));
    keys.set("alice", "AKIAALICE0000000EXAM", "s/e+c=ret");
    keys.set("alice", "AKIAALICE0000001EXAM", "newer");
    keys.set("bob", "AKIABOB00000000EXAMP", "b");
    EXPECT_THROW(keys.set("carol", "AKIABOB00000000EXAMP", "c"), std::invalid_argument);
    EXPECT_THROW(keys.set("carol", "short", "c"), std::invalid_argument);
    keys.save();
    EXPECT_EQ(std::filesystem::status(aws_key_store::path_in(dir)).permissions() &
                  std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    auto loaded = aws_key_store::load(aws_key_store::path_in(dir));
    EXPECT_EQ(loaded.keys(), keys.keys());
    EXPECT_FALSE(loaded.find("AKIAALICE0000000EXAM"));
    EXPECT_EQ(loaded.find("AKIAALICE0000001EXAM")->secret, "newer");
    EXPECT_TRUE(loaded.erase_user("bob"));
    EXPECT_FALSE(loaded.find_user("bob"));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::auth
