// The policy chain (gateway/policy/chain.h): each step, their order, the authorizer off, super
// users, deny over allow, refuse against filter, all-or-nothing requests, Kafka's alternative
// grants, the throttle delay and the audit lines.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "gateway/policy/chain.h"
#include "gateway/policy/audit.h"
#include "gateway/core/metrics.h"
#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {
namespace {
using auth::acl_operation;
using auth::resource_type;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

auth::acl_binding allow(resource_type type, std::string name, std::string principal,
                        acl_operation op) {
    return auth::acl_binding{type, std::move(name), auth::pattern_type::literal,
                             std::move(principal), "*", op, auth::acl_permission::allow};
}
auth::acl_binding deny(resource_type type, std::string name, std::string principal,
                       acl_operation op) {
    auto b = allow(type, std::move(name), std::move(principal), op);
    b.permission = auth::acl_permission::deny;
    return b;
}

requester alice_at(policy_front front = policy_front::kafka) {
    requester who;
    who.front = front;
    who.principal = "User:alice";
    who.mechanism = "PLAIN";
    who.peer = {boost::asio::ip::make_address("127.0.0.1"), 5555};
    return who;
}

/// A data directory with an authorizer, quotas and an audit log, all off until asked.
class Chain : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("sluice-chain-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        audit_settings s;
        s.path = (dir_ / "audit.log").string();
        audit_ = std::make_unique<audit_log>(s, false);
        set_audit_log(audit_.get());
    }
    void TearDown() override {
        set_audit_log(nullptr);
        audit_.reset();
        fs::remove_all(dir_);
    }

    auth::authorizer& acls(auth::authorizer_settings s = {.enabled = true}) {
        authz_ = std::make_unique<auth::authorizer>(std::move(s), dir_ / "acls");
        return *authz_;
    }
    void add(const std::vector<auth::acl_binding>& bs) {
        for (const auto& r : authz_->create_acls(bs)) {
            ASSERT_FALSE(r.has_value()) << *r;
        }
    }
    /// Quotas whose producer and consumer defaults are `rate` bytes/s.
    quota_meter& quotas(double rate) {
        auth::quota_settings s;
        s.producer_default = rate;
        s.consumer_default = rate;
        client_quotas_ = std::make_unique<auth::client_quotas>(s, dir_ / "quotas");
        meter_ = std::make_unique<quota_meter>(*client_quotas_, metrics_);
        return *meter_;
    }
    std::vector<std::string> audit_lines() {
        audit_->flush();
        std::ifstream in(dir_ / "audit.log");
        std::vector<std::string> out;
        for (std::string line; std::getline(in, line);) {
            // The time varies: compare from the event on.
            out.push_back(line.substr(line.find(",\"event\"")));
        }
        return out;
    }

    fs::path dir_;
    std::unique_ptr<audit_log> audit_;
    std::unique_ptr<auth::authorizer> authz_;
    std::unique_ptr<auth::client_quotas> client_quotas_;
    metrics_registry metrics_;
    std::unique_ptr<quota_meter> meter_;
};

TEST_F(Chain, OffAllowsEverythingAndWritesNothing) {
    const policy_chain chain;
    EXPECT_FALSE(chain.authorizing());
    EXPECT_FALSE(chain.metering());
    std::array<access, 2> a = {topic_access(acl_operation::write, "t"),
                               cluster_access(acl_operation::alter)};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    const auto d = chain.decide(f);
    EXPECT_TRUE(d.allowed());
    EXPECT_EQ(d.denied, 0u);
    EXPECT_TRUE(a[0].allowed());
    EXPECT_TRUE(a[1].allowed());
    EXPECT_TRUE(chain.visible(alice_at(), acl_operation::read, resource_type::topic, "t"));
    EXPECT_TRUE(audit_lines().empty());
}

TEST_F(Chain, AnAuthorizerThatIsOffIsOneBranch) {
    const policy_chain chain(&acls({.enabled = false}), nullptr);
    EXPECT_FALSE(chain.authorizing());
    std::array<access, 1> a = {topic_access(acl_operation::write, "t")};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    EXPECT_TRUE(chain.decide(f).allowed());
}

TEST_F(Chain, AuthenticateComesFirst) {
    const policy_chain chain(&acls(), nullptr);
    std::array<access, 1> a = {topic_access(acl_operation::write, "t")};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    f.who.principal = {};  // a SASL listener before login
    const auto d = chain.decide(f);
    EXPECT_FALSE(d.authenticated);
    EXPECT_FALSE(d.allowed());
    EXPECT_EQ(a[0].result, verdict::unchecked);
    // Nothing was authorized, so nothing was denied either.
    EXPECT_EQ(d.denied, 0u);
    EXPECT_TRUE(audit_lines().empty());
}

TEST_F(Chain, AllowedAccessPassesAndDeniedOneIsAuditedOnce) {
    acls();
    add({allow(resource_type::topic, "t", "User:alice", acl_operation::write)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {topic_access(acl_operation::write, "t"),
                               topic_access(acl_operation::write, "u")};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    const auto d = chain.decide(f);
    EXPECT_EQ(a[0].result, verdict::allowed);
    EXPECT_EQ(a[1].result, verdict::denied);
    EXPECT_EQ(d.denied, 1u);
    EXPECT_EQ(d.first_denied, &a[1]);
    EXPECT_FALSE(d.allowed());
    EXPECT_EQ(audit_lines(), std::vector<std::string>{
                                 R"(,"event":"authorization_denied","principal":"User:alice",)"
                                 R"("client":"127.0.0.1:5555","front":"kafka","operation":"WRITE",)"
                                 R"("resource_type":"TOPIC","resource_name":"u","api":"Produce"})"});
}

TEST_F(Chain, SuperUserPassesWithoutAcls) {
    acls({.enabled = true, .super_users = {"User:alice"}});
    add({deny(resource_type::topic, "t", "User:alice", acl_operation::all)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {topic_access(acl_operation::write, "t"),
                               cluster_access(acl_operation::alter)};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    EXPECT_TRUE(chain.decide(f).allowed());
    EXPECT_TRUE(audit_lines().empty());
}

TEST_F(Chain, DenyBeatsAllow) {
    acls();
    add({allow(resource_type::topic, "t", "User:alice", acl_operation::all),
         deny(resource_type::topic, "t", "User:alice", acl_operation::write)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {topic_access(acl_operation::read, "t"),
                               topic_access(acl_operation::write, "t")};
    request_facts f{.who = alice_at(), .action = "Produce", .accesses = a};
    chain.decide(f);
    EXPECT_EQ(a[0].result, verdict::allowed);
    EXPECT_EQ(a[1].result, verdict::denied);
}

TEST_F(Chain, FilteredAccessIsHiddenQuietly) {
    acls();
    add({allow(resource_type::topic, "t", "User:alice", acl_operation::describe)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {
        topic_access(acl_operation::describe, "t", on_denial::filter),
        topic_access(acl_operation::describe, "secret", on_denial::filter)};
    request_facts f{.who = alice_at(), .action = "Metadata", .accesses = a};
    const auto d = chain.decide(f);
    EXPECT_TRUE(d.allowed());  // a listing with a hidden entry is not a refused request
    EXPECT_EQ(a[0].result, verdict::allowed);
    EXPECT_EQ(a[1].result, verdict::hidden);
    EXPECT_TRUE(audit_lines().empty());
    EXPECT_FALSE(
        chain.visible(alice_at(), acl_operation::describe, resource_type::topic, "secret"));
    EXPECT_TRUE(audit_lines().empty());
}

TEST_F(Chain, EachRefusedAccessIsAuditedUnlessTheRequestIsAllOrNothing) {
    acls();
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {topic_access(acl_operation::read, "a"),
                               group_access(acl_operation::read, "g")};
    request_facts kafka{.who = alice_at(), .action = "Fetch", .accesses = a};
    EXPECT_EQ(chain.decide(kafka).denied, 2u);
    EXPECT_EQ(audit_lines().size(), 2u);

    std::array<access, 2> b = {topic_access(acl_operation::read, "a"),
                               group_access(acl_operation::read, "g")};
    request_facts sse{.who = alice_at(policy_front::sse),
                      .action = "GET /topics/{topic}/events",
                      .accesses = b,
                      .all_or_nothing = true};
    const auto d = chain.decide(sse);
    EXPECT_EQ(d.denied, 1u);
    EXPECT_EQ(b[0].result, verdict::denied);
    EXPECT_EQ(b[1].result, verdict::unchecked);
    const auto lines = audit_lines();
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_NE(lines[2].find(R"("front":"sse","operation":"READ","resource_type":"TOPIC",)"
                            R"("resource_name":"a","api":"GET /topics/{topic}/events"})"),
              std::string::npos)
        << lines[2];
}

TEST_F(Chain, CreateOnTheClusterStandsInForCreateOnTheTopic) {
    acls();
    add({allow(resource_type::cluster, "kafka-cluster", "User:alice", acl_operation::create)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 2> a = {topic_access(acl_operation::create, "new"),
                               topic_access(acl_operation::create, "new")};
    a[0].alternative = also_passes::cluster;
    request_facts f{.who = alice_at(), .action = "CreateTopics", .accesses = a};
    chain.decide(f);
    EXPECT_EQ(a[0].result, verdict::allowed);
    EXPECT_EQ(a[1].result, verdict::denied);
}

TEST_F(Chain, WriteOnAnyTopicStandsInForIdempotentWrite) {
    acls();
    add({allow(resource_type::topic, "t", "User:alice", acl_operation::write)});
    const policy_chain chain(authz_.get(), nullptr);
    std::array<access, 1> a = {cluster_access(acl_operation::idempotent_write)};
    a[0].alternative = also_passes::write_on_any_topic;
    request_facts f{.who = alice_at(), .action = "InitProducerId", .accesses = a};
    EXPECT_TRUE(chain.decide(f).allowed());

    requester bob = alice_at();
    bob.principal = "User:bob";
    a[0].result = verdict::allowed;
    request_facts g{.who = bob, .action = "InitProducerId", .accesses = a};
    EXPECT_EQ(chain.decide(g).denied, 1u);
    const auto lines = audit_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find(R"("operation":"IDEMPOTENT_WRITE","resource_type":"CLUSTER",)"
                            R"("resource_name":"kafka-cluster","api":"InitProducerId"})"),
              std::string::npos)
        << lines[0];
}

TEST_F(Chain, RestAndConsoleAreAuditedAsHttp) {
    acls();
    const policy_chain chain(authz_.get(), nullptr);
    for (const auto front : {policy_front::rest, policy_front::console}) {
        std::array<access, 1> a = {topic_access(acl_operation::describe, "q")};
        request_facts f{.who = alice_at(front), .action = "GET /v1/queues/{queue}", .accesses = a,
                        .all_or_nothing = true};
        chain.decide(f);
    }
    for (const auto& line : audit_lines()) {
        EXPECT_NE(line.find(R"("front":"http")"), std::string::npos) << line;
    }
    EXPECT_EQ(audit_front_name(policy_front::websocket), "websocket");
    EXPECT_EQ(audit_front_name(policy_front::sqs), "sqs");
}

TEST_F(Chain, ThrottleGivesTheDelayOfAPrincipalAlreadyOverItsQuota) {
    const policy_chain chain(nullptr, &quotas(100));
    EXPECT_TRUE(chain.metering());
    request_facts f{.who = alice_at(policy_front::sqs),
                    .action = "SendMessage",
                    .byte_quota = auth::quota_kind::producer_byte_rate,
                    .bytes = 10000};
    // Within the quota so far: allowed, and its bytes are counted now.
    const auto first = chain.decide(f);
    EXPECT_TRUE(first.allowed());
    EXPECT_EQ(first.delay, 0ms);
    // Now over it: the delay, and nothing more is counted.
    const auto second = chain.decide(f);
    EXPECT_GT(second.delay, 0ms);
    EXPECT_EQ(second.throttled_by, auth::quota_kind::producer_byte_rate);
    EXPECT_FALSE(second.allowed());
    EXPECT_EQ(chain.throttled_now(f.who, auth::quota_kind::producer_byte_rate), second.delay);
}

TEST_F(Chain, ThrottleIsNotDecidedForARefusedRequest) {
    acls();
    const policy_chain chain(authz_.get(), &quotas(100));
    chain.record(alice_at(policy_front::rest), auth::quota_kind::producer_byte_rate, 10000);
    std::array<access, 1> a = {topic_access(acl_operation::write, "t")};
    request_facts f{.who = alice_at(policy_front::rest), .action = "POST /topics/{topic}",
                    .accesses = a, .all_or_nothing = true,
                    .byte_quota = auth::quota_kind::producer_byte_rate};
    const auto d = chain.decide(f);
    EXPECT_EQ(d.denied, 1u);
    EXPECT_EQ(d.delay, 0ms);
}

TEST_F(Chain, RecordAfterExecutionEarnsTheDelay) {
    const policy_chain chain(nullptr, &quotas(100));
    const auto who = alice_at();
    EXPECT_TRUE(chain.quota_applies(who, auth::quota_kind::consumer_byte_rate));
    EXPECT_GT(chain.record(who, auth::quota_kind::consumer_byte_rate, 100000), 0ms);
    EXPECT_LE(*chain.headroom(who, auth::quota_kind::consumer_byte_rate), 0.0);
    EXPECT_FALSE(chain.quota_applies(who, auth::quota_kind::request_percentage));
    request_facts f{.who = who, .action = "Fetch", .request_time = true};
    EXPECT_FALSE(chain.decide(f).meter_request_time);
}

TEST_F(Chain, WithoutQuotasNothingIsThrottled) {
    const policy_chain chain;
    const auto who = alice_at();
    EXPECT_EQ(chain.record(who, auth::quota_kind::producer_byte_rate, 1e12), 0ms);
    EXPECT_EQ(chain.throttled_now(who, auth::quota_kind::producer_byte_rate), 0ms);
    EXPECT_EQ(chain.record_request_time(who, 10s), 0ms);
    EXPECT_FALSE(chain.headroom(who, auth::quota_kind::producer_byte_rate));
}

TEST_F(Chain, AuthorizedOperationsAreTheAllowedBits) {
    acls();
    add({allow(resource_type::topic, "t", "User:alice", acl_operation::read)});
    const policy_chain chain(authz_.get(), nullptr);
    const std::array ops = {acl_operation::read, acl_operation::write, acl_operation::describe};
    // READ implies DESCRIBE (Kafka's rule).
    EXPECT_EQ(chain.authorized_operations(alice_at(), resource_type::topic, "t", ops),
              (1 << 3) | (1 << 8));
    EXPECT_EQ(policy_chain().authorized_operations(alice_at(), resource_type::topic, "t", ops),
              (1 << 3) | (1 << 4) | (1 << 8));
    EXPECT_TRUE(audit_lines().empty());
}

TEST_F(Chain, ReportsOfLaterRefusalsAndFailedLoginsAreAuditLines) {
    const policy_chain chain;
    chain.report_denied(alice_at(policy_front::websocket), "produce",
                        topic_access(acl_operation::write, "t"));
    chain.authentication_failed(alice_at(policy_front::sqs), "sigv4", "AKIA0000", "bad signature");
    const auto lines = audit_lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find(R"("front":"websocket","operation":"WRITE","resource_type":"TOPIC",)"
                            R"("resource_name":"t","api":"produce"})"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[1].find(R"("event":"authentication_failed","principal":"User:alice",)"
                            R"("client":"127.0.0.1:5555","front":"sqs","mechanism":"sigv4",)"
                            R"("user":"AKIA0000","reason":"bad signature"})"),
              std::string::npos)
        << lines[1];
}

TEST(ChainHelpers, DenialMessagesNameTheResource) {
    EXPECT_EQ(denial_message(topic_access(acl_operation::write, "a")),
              "Not authorized to WRITE topic a.");
    EXPECT_EQ(denial_message(cluster_access(acl_operation::alter)),
              "Not authorized to ALTER the cluster.");
    EXPECT_EQ(denial_message(transactional_id_access(acl_operation::write, "x")),
              "Not authorized to WRITE transactional_id x.");
}

TEST(ChainHelpers, AuthorizerHostTakesIpv4OutOfMappedAddresses) {
    EXPECT_EQ(authorizer_host({boost::asio::ip::make_address("::ffff:10.0.0.1"), 1}), "10.0.0.1");
    EXPECT_EQ(authorizer_host({boost::asio::ip::make_address("::1"), 1}), "::1");
}

}  // namespace
}  // namespace sluice::gateway
