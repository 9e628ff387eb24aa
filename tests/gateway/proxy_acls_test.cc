// The Kafka proxy's ACLs on forwarded requests (gateway/proxy/request_acls.h): every API the
// codec knows is open, checked or refused, and every version offered with the authorizer on
// decodes and is decided; denied topics of a Produce or Fetch are taken out of the forwarded
// request and added back to the upstream's answer (TOPIC_AUTHORIZATION_FAILED per partition);
// an all-denied request is answered here; a denied group or transactional id fails the whole
// request; an all-topics Metadata answer omits what may not be described.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <unistd.h>

#include "gateway/policy/audit.h"
#include "gateway/proxy/request_acls.h"
#include "protocol/kafka/all_messages.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"

namespace sluice::gateway::proxy {
namespace {
namespace kafka = protocol::kafka;
namespace fs = std::filesystem;
using auth::acl_operation;
using auth::resource_type;
using kafka::error_code;

auth::acl_binding proxy_allow(resource_type type, std::string name, acl_operation op) {
    return auth::acl_binding{type,         std::move(name), auth::pattern_type::literal,
                             "User:alice", "*",             op,
                             auth::acl_permission::allow};
}

/// A request frame after the size prefix (header included), as check_request takes it.
template <typename Request>
std::shared_ptr<protocol::byte_buffer> proxy_acl_frame(const Request& req, std::int16_t version,
                                                       std::int32_t correlation_id = 7) {
    protocol::writer w;
    kafka::request_header h;
    h.api_key = static_cast<std::int16_t>(Request::key);
    h.api_version = version;
    h.correlation_id = correlation_id;
    h.client_id = "test";
    h.header_version = kafka::request_header_version(h.api_key, version);
    kafka::encode_request_header(w, h);
    req.encode(w, version);
    return std::make_shared<protocol::byte_buffer>(w.flatten());
}

/// Decodes a frame (size prefix included) as `Message` after a header of `header_bytes`.
template <typename Message>
Message proxy_acl_decode(const protocol::byte_buffer& frame, std::size_t header_bytes,
                         std::int16_t version) {
    protocol::reader r(frame.view().subspan(4 + header_bytes));
    Message m;
    m.decode(r, version);
    EXPECT_TRUE(r.ok() && r.remaining() == 0);
    return m;
}

template <typename Response>
Response proxy_acl_answer(const acl_decision& d, std::int16_t version) {
    EXPECT_EQ(d.what, acl_decision::action::answer);
    const auto flat = d.frame.flatten();
    EXPECT_EQ(protocol::load_i32(flat.data() + 4), 7);  // the correlation id
    const auto* info = kafka::find_api(Response::key);
    return proxy_acl_decode<Response>(flat, info->response_header_version(version) == 0 ? 4 : 5,
                                      version);
}

/// The forwarded request of a forward_filtered decision.
template <typename Request>
Request proxy_acl_forwarded(const acl_decision& d, std::int16_t version) {
    EXPECT_EQ(d.what, acl_decision::action::forward_filtered);
    const auto flat = d.frame.flatten();
    protocol::reader r(flat.view().subspan(4));
    const auto h = kafka::decode_request_header(r);
    EXPECT_TRUE(h.has_value());
    Request m;
    m.decode(r, version);
    EXPECT_TRUE(r.ok() && r.remaining() == 0);
    return m;
}

/// Runs a decision's merge over an upstream answer `resp` and decodes the result.
template <typename Response>
Response proxy_acl_merged(const acl_decision& d, const Response& resp, std::int16_t version) {
    EXPECT_TRUE(static_cast<bool>(d.merge));
    protocol::writer w;
    resp.encode(w, version);
    auto body = std::make_shared<protocol::byte_buffer>(w.flatten());
    auto merged = d.merge(body->view(), body);
    EXPECT_TRUE(merged.has_value());
    protocol::reader r(merged->view());
    Response out;
    out.decode(r, version);
    EXPECT_TRUE(r.ok() && r.remaining() == 0);
    return out;
}

class ProxyAcls : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("sluice-proxy-acls-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        authz_ = std::make_unique<auth::authorizer>(auth::authorizer_settings{.enabled = true},
                                                    dir_ / "acls");
        // alice may write and read "ok", use group "g", and write transactional id "tx".
        const std::vector<auth::acl_binding> grants{
            proxy_allow(resource_type::topic, "ok", acl_operation::write),
            proxy_allow(resource_type::topic, "ok", acl_operation::read),
            proxy_allow(resource_type::topic, "ok", acl_operation::describe),
            proxy_allow(resource_type::group, "g", acl_operation::read),
            proxy_allow(resource_type::group, "g", acl_operation::describe),
            proxy_allow(resource_type::transactional_id, "tx", acl_operation::write),
        };
        for (const auto& r : authz_->create_acls(grants)) {
            ASSERT_FALSE(r.has_value()) << *r;
        }
        chain_ = policy_chain(authz_.get(), nullptr);
        who_.front = policy_front::kafka;
        who_.principal = "User:alice";
        who_.peer = {boost::asio::ip::make_address("127.0.0.1"), 5555};
    }
    void TearDown() override {
        authz_.reset();
        fs::remove_all(dir_);
    }

    acl_decision decide(const std::shared_ptr<protocol::byte_buffer>& frame) {
        auto d = check_request(chain_, who_, frame->view(), frame);
        EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().message());
        return d ? std::move(*d) : acl_decision{};
    }

    fs::path dir_;
    std::unique_ptr<auth::authorizer> authz_;
    policy_chain chain_;
    requester who_;
};

kafka::produce_request produce_of(std::vector<std::string> topics, std::int16_t acks = -1) {
    kafka::produce_request req;
    req.acks = acks;
    req.timeout_ms = std::chrono::milliseconds(1000);
    for (auto& t : topics) {
        auto& td = req.topic_data.emplace_back();
        td.name = std::move(t);
        td.partition_data.emplace_back().index = partition_id(0);
        td.partition_data.emplace_back().index = partition_id(1);
    }
    return req;
}

TEST_F(ProxyAcls, EveryApiIsOpenCheckedOrRefusedAndEveryOfferedVersionIsDecided) {
    for (const auto& api : kafka::all_apis()) {
        const auto key = static_cast<std::int16_t>(api.key);
        const acl_class c = classify_api(key);
        const auto offered = authorized_versions(key, {api.min_version, api.max_version});
        if (c == acl_class::refused) {
            EXPECT_FALSE(offered.has_value()) << api.name << " is refused yet offered";
            continue;
        }
        ASSERT_TRUE(offered.has_value()) << api.name;
        EXPECT_GE(offered->min, api.min_version) << api.name;
        EXPECT_LE(offered->max, api.max_version) << api.name;
        if (key == static_cast<std::int16_t>(kafka::api_key::sasl_handshake) ||
            key == static_cast<std::int16_t>(kafka::api_key::sasl_authenticate)) {
            continue;  // the login: answered by client_login, never forwarded
        }
        // A request of every offered version decodes and gets a decision (an empty one of the
        // codec's defaults: nothing named, or the default names, which alice has no rights
        // on).
        for (std::int16_t v = offered->min; v <= offered->max; ++v) {
            const bool known = kafka::with_message_types(key, [&]<typename Rq, typename Rs>() {
                const auto frame = proxy_acl_frame(Rq{}, v);
                const auto d = check_request(chain_, who_, frame->view(), frame);
                EXPECT_TRUE(d.has_value()) << api.name << " v" << v << ": "
                                           << (d ? "" : d.error().message());
            });
            EXPECT_TRUE(known) << api.name;
        }
    }
}

TEST_F(ProxyAcls, TheCommonClientApisAreChecked) {
    for (auto k : {kafka::api_key::produce, kafka::api_key::fetch, kafka::api_key::list_offsets,
                   kafka::api_key::metadata, kafka::api_key::offset_commit,
                   kafka::api_key::offset_fetch, kafka::api_key::find_coordinator,
                   kafka::api_key::join_group, kafka::api_key::heartbeat,
                   kafka::api_key::leave_group, kafka::api_key::sync_group,
                   kafka::api_key::create_topics, kafka::api_key::delete_topics,
                   kafka::api_key::delete_records, kafka::api_key::init_producer_id,
                   kafka::api_key::add_partitions_to_txn, kafka::api_key::add_offsets_to_txn,
                   kafka::api_key::end_txn, kafka::api_key::txn_offset_commit}) {
        EXPECT_EQ(classify_api(static_cast<std::int16_t>(k)), acl_class::checked)
            << kafka::api_name(k);
    }
    EXPECT_EQ(classify_api(static_cast<std::int16_t>(kafka::api_key::api_versions)),
              acl_class::open);
    // Not classified: refused (not offered, never forwarded unchecked).
    EXPECT_EQ(classify_api(1000), acl_class::refused);
    EXPECT_EQ(classify_api(-1), acl_class::refused);
    EXPECT_EQ(classify_api(static_cast<std::int16_t>(kafka::api_key::write_txn_markers)),
              acl_class::refused);
    // Versions that name topics by id are not offered.
    const auto fetch = authorized_versions(static_cast<std::int16_t>(kafka::api_key::fetch),
                                           {0, 17});
    ASSERT_TRUE(fetch.has_value());
    EXPECT_EQ(fetch->max, 12);
}

TEST_F(ProxyAcls, AnUnclassifiedRequestIsAnError) {
    const auto frame = proxy_acl_frame(kafka::write_txn_markers_request{}, 0);
    EXPECT_FALSE(check_request(chain_, who_, frame->view(), frame).has_value());
}

TEST_F(ProxyAcls, AnAllowedProduceIsForwardedUntouched) {
    const auto d = decide(proxy_acl_frame(produce_of({"ok"}), 9));
    EXPECT_EQ(d.what, acl_decision::action::forward);
    EXPECT_FALSE(static_cast<bool>(d.merge));
    EXPECT_EQ(d.denied, 0u);
}

TEST_F(ProxyAcls, AProduceWithSomeTopicsDeniedForwardsTheRestAndMergesTheRefusal) {
    for (std::int16_t v : {3, 8, 9}) {
        const auto d = decide(proxy_acl_frame(produce_of({"ok", "secret"}), v));
        EXPECT_EQ(d.denied, 1u);
        const auto sent = proxy_acl_forwarded<kafka::produce_request>(d, v);
        ASSERT_EQ(sent.topic_data.size(), 1u);
        EXPECT_EQ(sent.topic_data[0].name, "ok");
        kafka::produce_response upstream;
        auto& t = upstream.responses.emplace_back();
        t.name = "ok";
        t.partition_responses.emplace_back().index = partition_id(0);
        const auto merged = proxy_acl_merged(d, upstream, v);
        ASSERT_EQ(merged.responses.size(), 2u);
        EXPECT_EQ(merged.responses[0].name, "ok");
        EXPECT_EQ(merged.responses[1].name, "secret");
        ASSERT_EQ(merged.responses[1].partition_responses.size(), 2u);
        for (const auto& p : merged.responses[1].partition_responses) {
            EXPECT_EQ(p.error_code, error_code::topic_authorization_failed);
        }
    }
}

TEST_F(ProxyAcls, AProduceWithEveryTopicDeniedIsAnsweredHere) {
    const auto d = decide(proxy_acl_frame(produce_of({"secret", "other"}), 9));
    const auto resp = proxy_acl_answer<kafka::produce_response>(d, 9);
    ASSERT_EQ(resp.responses.size(), 2u);
    for (const auto& t : resp.responses) {
        ASSERT_EQ(t.partition_responses.size(), 2u);
        for (const auto& p : t.partition_responses) {
            EXPECT_EQ(p.error_code, error_code::topic_authorization_failed);
        }
    }
    // acks=0: no answer is due; the connection closes.
    EXPECT_EQ(decide(proxy_acl_frame(produce_of({"ok", "secret"}, 0), 9)).what,
              acl_decision::action::close);
}

TEST_F(ProxyAcls, ATransactionalProduceOfAnotherIdFailsWhole) {
    auto req = produce_of({"ok"});
    req.transactional_id = "not-mine";
    const auto resp =
        proxy_acl_answer<kafka::produce_response>(decide(proxy_acl_frame(req, 9)), 9);
    ASSERT_EQ(resp.responses.size(), 1u);
    EXPECT_EQ(resp.responses[0].partition_responses[0].error_code,
              error_code::transactional_id_authorization_failed);
    req.transactional_id = "tx";
    EXPECT_EQ(decide(proxy_acl_frame(req, 9)).what, acl_decision::action::forward);
}

TEST_F(ProxyAcls, AFetchOfADeniedTopicGetsTopicAuthorizationFailed) {
    kafka::fetch_request req;
    req.max_wait_ms = std::chrono::milliseconds(100);
    for (const char* name : {"ok", "secret"}) {
        auto& t = req.topics.emplace_back();
        t.topic = name;
        t.partitions.emplace_back().partition = partition_id(0);
    }
    const std::int16_t v = 11;
    const auto d = decide(proxy_acl_frame(req, v));
    const auto sent = proxy_acl_forwarded<kafka::fetch_request>(d, v);
    ASSERT_EQ(sent.topics.size(), 1u);
    EXPECT_EQ(sent.topics[0].topic, "ok");
    kafka::fetch_response upstream;
    upstream.responses.emplace_back().topic = "ok";
    const auto merged = proxy_acl_merged(d, upstream, v);
    ASSERT_EQ(merged.responses.size(), 2u);
    EXPECT_EQ(merged.responses[1].topic, "secret");
    EXPECT_EQ(merged.responses[1].partitions.at(0).error_code,
              error_code::topic_authorization_failed);
    // Only the denied topic: answered here.
    req.topics.erase(req.topics.begin());
    const auto resp = proxy_acl_answer<kafka::fetch_response>(decide(proxy_acl_frame(req, v)), v);
    ASSERT_EQ(resp.responses.size(), 1u);
    EXPECT_EQ(resp.responses[0].partitions.at(0).error_code,
              error_code::topic_authorization_failed);
}

TEST_F(ProxyAcls, AnIncrementalFetchIsDecidedOnWhatItAdds) {
    kafka::fetch_request req;
    req.session_id = 42;
    req.session_epoch = 3;
    auto& t = req.topics.emplace_back();
    t.topic = "secret";
    t.partitions.emplace_back().partition = partition_id(0);
    const std::int16_t v = 11;
    // Every named topic denied: still forwarded (the session is upstream), without it.
    const auto d = decide(proxy_acl_frame(req, v));
    const auto sent = proxy_acl_forwarded<kafka::fetch_request>(d, v);
    EXPECT_TRUE(sent.topics.empty());
    EXPECT_EQ(sent.session_id, 42);
    kafka::fetch_response upstream;
    upstream.session_id = 42;
    const auto merged = proxy_acl_merged(d, upstream, v);
    EXPECT_EQ(merged.session_id, 42);
    ASSERT_EQ(merged.responses.size(), 1u);
    EXPECT_EQ(merged.responses[0].partitions.at(0).error_code,
              error_code::topic_authorization_failed);
}

TEST_F(ProxyAcls, ADeniedGroupFailsTheWholeRequest) {
    kafka::join_group_request join;
    join.group_id = "other";
    join.protocol_type = "consumer";
    const auto resp =
        proxy_acl_answer<kafka::join_group_response>(decide(proxy_acl_frame(join, 5)), 5);
    EXPECT_EQ(resp.error_code, error_code::group_authorization_failed);
    join.group_id = "g";
    EXPECT_EQ(decide(proxy_acl_frame(join, 5)).what, acl_decision::action::forward);

    kafka::heartbeat_request hb;
    hb.group_id = "other";
    EXPECT_EQ(proxy_acl_answer<kafka::heartbeat_response>(decide(proxy_acl_frame(hb, 3)), 3)
                  .error_code,
              error_code::group_authorization_failed);

    kafka::find_coordinator_request fc;
    fc.key_ = "other";
    EXPECT_EQ(proxy_acl_answer<kafka::find_coordinator_response>(decide(proxy_acl_frame(fc, 2)),
                                                                 2)
                  .error_code,
              error_code::group_authorization_failed);
}

TEST_F(ProxyAcls, AnOffsetCommitOfAnotherGroupFailsEveryPartition) {
    kafka::offset_commit_request req;
    req.group_id = "other";
    auto& t = req.topics.emplace_back();
    t.name = "ok";
    t.partitions.emplace_back().partition_index = partition_id(0);
    const auto resp =
        proxy_acl_answer<kafka::offset_commit_response>(decide(proxy_acl_frame(req, 7)), 7);
    ASSERT_EQ(resp.topics.size(), 1u);
    EXPECT_EQ(resp.topics[0].partitions.at(0).error_code, error_code::group_authorization_failed);
}

TEST_F(ProxyAcls, AnInitProducerIdOfAnotherTransactionalIdIsRefused) {
    kafka::init_producer_id_request req;
    req.transactional_id = "not-mine";
    req.transaction_timeout_ms = std::chrono::milliseconds(60000);
    EXPECT_EQ(proxy_acl_answer<kafka::init_producer_id_response>(decide(proxy_acl_frame(req, 4)),
                                                                 4)
                  .error_code,
              error_code::transactional_id_authorization_failed);
    // Idempotent (no transactional id): WRITE on any topic is enough.
    req.transactional_id = std::nullopt;
    EXPECT_EQ(decide(proxy_acl_frame(req, 4)).what, acl_decision::action::forward);
}

TEST_F(ProxyAcls, MetadataOmitsOrMarksWhatMayNotBeDescribed) {
    const std::int16_t v = 9;
    kafka::metadata_response upstream;
    for (const char* name : {"ok", "secret"}) {
        auto& t = upstream.topics.emplace_back();
        t.name = name;
    }
    // All topics: the answer omits "secret".
    kafka::metadata_request all;
    all.topics = std::nullopt;
    auto d = decide(proxy_acl_frame(all, v));
    EXPECT_EQ(d.what, acl_decision::action::forward);
    auto merged = proxy_acl_merged(d, upstream, v);
    ASSERT_EQ(merged.topics.size(), 1u);
    EXPECT_EQ(merged.topics[0].name, "ok");
    // Named: "secret" is not asked upstream and comes back TOPIC_AUTHORIZATION_FAILED.
    kafka::metadata_request named;
    named.topics.emplace();
    for (const char* name : {"ok", "secret"}) {
        named.topics->emplace_back().name = name;
    }
    d = decide(proxy_acl_frame(named, v));
    const auto sent = proxy_acl_forwarded<kafka::metadata_request>(d, v);
    ASSERT_TRUE(sent.topics.has_value());
    ASSERT_EQ(sent.topics->size(), 1u);
    upstream.topics.pop_back();
    merged = proxy_acl_merged(d, upstream, v);
    ASSERT_EQ(merged.topics.size(), 2u);
    EXPECT_EQ(merged.topics[1].name, "secret");
    EXPECT_EQ(merged.topics[1].error_code, error_code::topic_authorization_failed);
}

TEST_F(ProxyAcls, AuthorizedOperationsAreThePrincipals) {
    const std::int16_t v = 10;
    kafka::metadata_request req;
    req.topics.emplace();
    req.topics->emplace_back().name = "ok";
    req.allow_auto_topic_creation = false;
    req.include_topic_authorized_operations = true;
    req.include_cluster_authorized_operations = true;
    const auto d = decide(proxy_acl_frame(req, v));
    kafka::metadata_response upstream;  // the upstream answers for its super user
    upstream.cluster_authorized_operations = 0x7ff8;
    auto& t = upstream.topics.emplace_back();
    t.name = "ok";
    t.topic_authorized_operations = 0x7ff8;
    const auto merged = proxy_acl_merged(d, upstream, v);
    // alice: READ (3), WRITE (4), DESCRIBE (8) on "ok"; nothing on the cluster.
    EXPECT_EQ(merged.topics.at(0).topic_authorized_operations, (1 << 3) | (1 << 4) | (1 << 8));
    EXPECT_EQ(merged.cluster_authorized_operations, 0);

    kafka::describe_cluster_request dc;
    dc.include_cluster_authorized_operations = true;
    const auto dd = decide(proxy_acl_frame(dc, 0));
    kafka::describe_cluster_response dcr;
    dcr.cluster_authorized_operations = 0x7ff8;
    EXPECT_EQ(proxy_acl_merged(dd, dcr, 0).cluster_authorized_operations, 0);

    kafka::describe_groups_request dg;
    dg.groups = {"g"};
    dg.include_authorized_operations = true;
    const auto dgd = decide(proxy_acl_frame(dg, 3));
    kafka::describe_groups_response dgr;
    auto& g = dgr.groups.emplace_back();
    g.group_id = "g";
    g.authorized_operations = 0x7ff8;
    EXPECT_EQ(proxy_acl_merged(dgd, dgr, 3).groups.at(0).authorized_operations,
              (1 << 3) | (1 << 8));
}

TEST_F(ProxyAcls, ConfigResourcesAreDecidedByType) {
    kafka::describe_configs_request req;
    for (const auto& [type, name] : std::vector<std::pair<std::int8_t, std::string>>{
             {2, "ok"}, {2, "secret"}, {4, "1"}, {32, "g"}}) {
        auto& r = req.resources.emplace_back();
        r.resource_type = type;
        r.resource_name = name;
    }
    // alice has no DESCRIBE_CONFIGS anywhere: answered here, each with its type's error.
    const auto resp =
        proxy_acl_answer<kafka::describe_configs_response>(decide(proxy_acl_frame(req, 4)), 4);
    ASSERT_EQ(resp.results.size(), 4u);
    EXPECT_EQ(resp.results[0].error_code, error_code::topic_authorization_failed);
    EXPECT_EQ(resp.results[2].error_code, error_code::cluster_authorization_failed);
    EXPECT_EQ(resp.results[3].error_code, error_code::group_authorization_failed);
    // Granted on "ok": that one goes upstream, the others come back refused.
    std::vector<auth::acl_binding> more{
        proxy_allow(resource_type::topic, "ok", acl_operation::describe_configs)};
    for (const auto& r : authz_->create_acls(more)) {
        ASSERT_FALSE(r.has_value()) << *r;
    }
    const auto d = decide(proxy_acl_frame(req, 4));
    const auto sent = proxy_acl_forwarded<kafka::describe_configs_request>(d, 4);
    ASSERT_EQ(sent.resources.size(), 1u);
    EXPECT_EQ(sent.resources[0].resource_name, "ok");
    kafka::describe_configs_response upstream;
    upstream.results.emplace_back().resource_name = "ok";
    EXPECT_EQ(proxy_acl_merged(d, upstream, 4).results.size(), 4u);
}

}  // namespace
}  // namespace sluice::gateway::proxy
