#include "gateway/proxy/request_acls.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/add_offsets_to_txn.h"
#include "protocol/kafka/messages/add_partitions_to_txn.h"
#include "protocol/kafka/messages/alter_configs.h"
#include "protocol/kafka/messages/consumer_group_heartbeat.h"
#include "protocol/kafka/messages/create_partitions.h"
#include "protocol/kafka/messages/create_topics.h"
#include "protocol/kafka/messages/delete_groups.h"
#include "protocol/kafka/messages/delete_records.h"
#include "protocol/kafka/messages/delete_topics.h"
#include "protocol/kafka/messages/describe_cluster.h"
#include "protocol/kafka/messages/describe_configs.h"
#include "protocol/kafka/messages/describe_groups.h"
#include "protocol/kafka/messages/end_txn.h"
#include "protocol/kafka/messages/fetch.h"
#include "protocol/kafka/messages/find_coordinator.h"
#include "protocol/kafka/messages/heartbeat.h"
#include "protocol/kafka/messages/incremental_alter_configs.h"
#include "protocol/kafka/messages/init_producer_id.h"
#include "protocol/kafka/messages/join_group.h"
#include "protocol/kafka/messages/leave_group.h"
#include "protocol/kafka/messages/list_groups.h"
#include "protocol/kafka/messages/list_offsets.h"
#include "protocol/kafka/messages/metadata.h"
#include "protocol/kafka/messages/offset_commit.h"
#include "protocol/kafka/messages/offset_fetch.h"
#include "protocol/kafka/messages/offset_for_leader_epoch.h"
#include "protocol/kafka/messages/produce.h"
#include "protocol/kafka/messages/sync_group.h"
#include "protocol/kafka/messages/txn_offset_commit.h"

namespace sluice::gateway::proxy {
namespace kafka = protocol::kafka;
using auth::acl_operation;
using auth::resource_type;
using kafka::api_key;
using kafka::error_code;

namespace {

/// One request being decided.
struct acl_request {
    const policy_chain& chain;
    requester who;
    kafka::request_header header;
    protocol::bytes_view body;
    std::shared_ptr<const void> owner;

    std::int16_t version() const { return header.api_version; }
};

/// Asks the chain for every access (each refused one is audited); whether each was allowed.
std::vector<bool> acl_decide(const acl_request& rq, std::vector<access>& accesses) {
    std::vector<bool> out;
    if (accesses.empty()) {
        return out;
    }
    request_facts facts;
    facts.who = rq.who;
    facts.action = kafka::api_name(static_cast<api_key>(rq.header.api_key));
    facts.accesses = accesses;
    (void)rq.chain.decide(facts);
    out.reserve(accesses.size());
    for (const auto& a : accesses) {
        out.push_back(a.allowed());
    }
    return out;
}

bool acl_allowed(const acl_request& rq, access a) {
    std::vector<access> one{a};
    return acl_decide(rq, one).front();
}

std::size_t acl_count_denied(const std::vector<bool>& allowed) {
    return static_cast<std::size_t>(std::count(allowed.begin(), allowed.end(), false));
}

template <typename Message>
result<Message> acl_decode(const acl_request& rq) {
    protocol::reader r(rq.body, rq.owner);
    Message m;
    m.decode(r, rq.version());
    if (!r.ok()) {
        return std::unexpected(r.error());
    }
    return m;
}

template <typename Response>
protocol::writer acl_answer_frame(const kafka::request_header& h, const Response& resp) {
    protocol::writer w;
    const std::size_t size_at = w.reserve_i32();
    kafka::encode_response_header(w, h.correlation_id,
                                  kafka::find_api(h.api_key)->response_header_version(
                                      h.api_version));
    resp.encode(w, h.api_version);
    w.patch_i32(size_at, static_cast<std::int32_t>(w.size() - 4));
    return w;
}

template <typename Request>
protocol::writer acl_request_frame(const kafka::request_header& h, const Request& req) {
    protocol::writer w;
    const std::size_t size_at = w.reserve_i32();
    kafka::encode_request_header(w, h);
    req.encode(w, h.api_version);
    w.patch_i32(size_at, static_cast<std::int32_t>(w.size() - 4));
    return w;
}

template <typename Response>
acl_decision acl_local(const acl_request& rq, const Response& resp, std::size_t denied) {
    acl_decision d;
    d.what = acl_decision::action::answer;
    d.frame = acl_answer_frame(rq.header, resp);
    d.denied = denied;
    return d;
}

/// Decodes the upstream's response, lets `edit` change it, and encodes it again.
template <typename Response, typename Edit>
response_merge acl_edit_response(std::int16_t version, Edit edit) {
    return [version, edit = std::move(edit)](
               protocol::bytes_view body,
               std::shared_ptr<const void> owner) -> result<protocol::byte_buffer> {
        protocol::reader r(body, std::move(owner));
        Response resp;
        resp.decode(r, version);
        if (!r.ok()) {
            return std::unexpected(r.error());
        }
        edit(resp);
        protocol::writer w;
        resp.encode(w, version);
        return w.flatten();
    };
}

/// A request whose `in` entries are one access each (`allowed`, in order): denied entries are
/// left out of the forwarded request and answered by deny(entry), added to the response's
/// `out` list; all denied: answered here with `base` and them, unless `forward_empty` (the
/// request then goes up with no entries: an incremental fetch, whose session is upstream).
template <typename Request, typename Response, typename In, typename Out, typename Deny>
acl_decision acl_split(const acl_request& rq, Request& req, std::vector<In> Request::*in,
                       const std::vector<bool>& allowed, std::vector<Out> Response::*out,
                       Deny deny, Response base = {}, bool forward_empty = false) {
    const std::size_t denied = acl_count_denied(allowed);
    if (denied == 0) {
        return {};
    }
    auto& entries = req.*in;
    std::vector<In> kept;
    std::vector<Out> refused;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (allowed[i]) {
            kept.push_back(std::move(entries[i]));
        } else {
            refused.push_back(deny(entries[i]));
        }
    }
    if (kept.empty() && !forward_empty) {
        base.*out = std::move(refused);
        return acl_local(rq, base, denied);
    }
    entries = std::move(kept);
    acl_decision d;
    d.what = acl_decision::action::forward_filtered;
    d.frame = acl_request_frame(rq.header, req);
    d.denied = denied;
    auto extra = std::make_shared<std::vector<Out>>(std::move(refused));
    d.merge = acl_edit_response<Response>(rq.version(), [extra, out](Response& resp) {
        auto& list = resp.*out;
        list.insert(list.end(), extra->begin(), extra->end());
    });
    return d;
}

template <typename Partition, typename Make>
std::vector<Partition> acl_partitions_of(const auto& indexes, Make make) {
    std::vector<Partition> out;
    out.reserve(indexes.size());
    for (const auto& p : indexes) {
        out.push_back(make(p));
    }
    return out;
}

/// The requester of an answer edited after the request's call returned: owns its strings.
struct acl_owned_requester {
    std::string principal;
    std::string host;
    boost::asio::ip::tcp::endpoint peer;

    explicit acl_owned_requester(const requester& who)
        : principal(who.principal), host(authorizer_host(who.peer)), peer(who.peer) {}
    requester view() const {
        requester who;
        who.principal = principal;
        who.host = host;
        who.peer = peer;
        return who;
    }
};

/// `first` (may be empty), then `edit` on the Response it produced.
template <typename Response, typename Edit>
response_merge acl_then(response_merge first, std::int16_t version, Edit edit) {
    auto second = acl_edit_response<Response>(version, std::move(edit));
    if (!first) {
        return second;
    }
    return [first = std::move(first), second = std::move(second)](
               protocol::bytes_view body,
               std::shared_ptr<const void> owner) -> result<protocol::byte_buffer> {
        auto r = first(body, std::move(owner));
        if (!r) {
            return r;
        }
        auto kept = std::make_shared<protocol::byte_buffer>(std::move(*r));
        return second(kept->view(), kept);
    };
}

/// The operations Kafka reports as authorized for a topic, a group and the cluster (the broker
/// mode's lists, gateway/kafka/kafka_policy.h): the upstream computed them for the gateway's
/// own account, so with the authorizer on the proxy answers them for the client's principal.
constexpr std::array<acl_operation, 8> acl_topic_operations = {
    acl_operation::read,   acl_operation::write,    acl_operation::create,
    acl_operation::remove, acl_operation::alter,    acl_operation::describe,
    acl_operation::describe_configs, acl_operation::alter_configs};
constexpr std::array<acl_operation, 3> acl_group_operations = {
    acl_operation::read, acl_operation::describe, acl_operation::remove};
constexpr std::array<acl_operation, 7> acl_cluster_operations = {
    acl_operation::create,           acl_operation::alter,         acl_operation::describe,
    acl_operation::cluster_action,   acl_operation::describe_configs,
    acl_operation::alter_configs,    acl_operation::idempotent_write};

/// The cluster's authorized operations for `who`: none without DESCRIBE on it (Kafka's rule).
std::int32_t acl_cluster_ops(const policy_chain& chain, const requester& who) {
    return chain.visible(who, acl_operation::describe, resource_type::cluster,
                         auth::cluster_resource_name)
               ? chain.authorized_operations(who, resource_type::cluster,
                                             auth::cluster_resource_name, acl_cluster_operations)
               : 0;
}

// --- Produce ----------------------------------------------------------------------------------

result<acl_decision> acl_produce(const acl_request& rq) {
    using request = kafka::produce_request;
    using response = kafka::produce_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    auto fail_all = [&](error_code e, std::size_t denied) {
        if (req->acks == 0) {
            acl_decision d;
            d.what = acl_decision::action::close;
            d.denied = denied;
            return d;
        }
        response resp;
        for (const auto& t : req->topic_data) {
            auto& out = resp.responses.emplace_back();
            out.name = t.name;
            out.topic_id = t.topic_id;
            for (const auto& p : t.partition_data) {
                auto& r = out.partition_responses.emplace_back();
                r.index = p.index;
                r.error_code = e;
                r.base_offset = offset(-1);
            }
        }
        return acl_local(rq, resp, denied);
    };
    // Kafka checks the transactional id first and, when it is refused, no topic.
    if (req->transactional_id &&
        !acl_allowed(rq, transactional_id_access(acl_operation::write, *req->transactional_id))) {
        return fail_all(error_code::transactional_id_authorization_failed, 1);
    }
    std::vector<access> accesses;
    for (const auto& t : req->topic_data) {
        accesses.push_back(topic_access(acl_operation::write, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    const std::size_t denied = acl_count_denied(allowed);
    if (denied == 0) {
        return acl_decision{};
    }
    if (req->acks == 0 || denied == allowed.size()) {
        return fail_all(error_code::topic_authorization_failed, denied);
    }
    return acl_split(rq, *req, &request::topic_data, allowed, &response::responses,
                     [](const request::topic_produce_data& t) {
                         response::topic_produce_response out;
                         out.name = t.name;
                         out.topic_id = t.topic_id;
                         out.partition_responses =
                             acl_partitions_of<response::partition_produce_response>(
                                 t.partition_data, [](const auto& p) {
                                     response::partition_produce_response r;
                                     r.index = p.index;
                                     r.error_code = error_code::topic_authorization_failed;
                                     r.base_offset = offset(-1);
                                     return r;
                                 });
                         return out;
                     });
}

// --- Fetch ------------------------------------------------------------------------------------

result<acl_decision> acl_fetch(const acl_request& rq) {
    using request = kafka::fetch_request;
    using response = kafka::fetch_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    // An incremental fetch (KIP-227) names the partitions it adds or changes: those are
    // decided, the session's others were when they were added; the request goes up even when
    // every one it names is denied (the session lives upstream).
    const bool incremental = rq.version() >= 7 && req->session_id != 0;
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::read, t.topic));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::responses,
                     [](const request::fetch_topic& t) {
                         response::fetchable_topic_response out;
                         out.topic = t.topic;
                         out.topic_id = t.topic_id;
                         out.partitions = acl_partitions_of<response::partition_data>(
                             t.partitions, [](const auto& p) {
                                 response::partition_data r;
                                 r.partition_index = p.partition;
                                 r.error_code = error_code::topic_authorization_failed;
                                 r.high_watermark = offset(-1);
                                 return r;
                             });
                         return out;
                     },
                     response{}, incremental);
}

// --- ListOffsets, DeleteRecords, OffsetForLeaderEpoch -------------------------------------------

result<acl_decision> acl_list_offsets(const acl_request& rq) {
    using request = kafka::list_offsets_request;
    using response = kafka::list_offsets_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::describe, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [](const request::list_offsets_topic& t) {
                         response::list_offsets_topic_response out;
                         out.name = t.name;
                         out.partitions =
                             acl_partitions_of<response::list_offsets_partition_response>(
                                 t.partitions, [](const auto& p) {
                                     response::list_offsets_partition_response r;
                                     r.partition_index = p.partition_index;
                                     r.error_code = error_code::topic_authorization_failed;
                                     return r;
                                 });
                         return out;
                     });
}

result<acl_decision> acl_delete_records(const acl_request& rq) {
    using request = kafka::delete_records_request;
    using response = kafka::delete_records_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::remove, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [](const request::delete_records_topic& t) {
                         response::delete_records_topic_result out;
                         out.name = t.name;
                         out.partitions =
                             acl_partitions_of<response::delete_records_partition_result>(
                                 t.partitions, [](const auto& p) {
                                     response::delete_records_partition_result r;
                                     r.partition_index = p.partition_index;
                                     r.low_watermark = offset(-1);
                                     r.error_code = error_code::topic_authorization_failed;
                                     return r;
                                 });
                         return out;
                     });
}

result<acl_decision> acl_offset_for_leader_epoch(const acl_request& rq) {
    using request = kafka::offset_for_leader_epoch_request;
    using response = kafka::offset_for_leader_epoch_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    // A follower's quiet CLUSTER_ACTION lets it describe every topic (the broker mode's rule).
    if (rq.chain.visible(rq.who, acl_operation::cluster_action, resource_type::cluster,
                         auth::cluster_resource_name)) {
        return acl_decision{};
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::describe, t.topic));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [](const request::offset_for_leader_topic& t) {
                         response::offset_for_leader_topic_result out;
                         out.topic = t.topic;
                         out.partitions = acl_partitions_of<response::epoch_end_offset>(
                             t.partitions, [](const auto& p) {
                                 response::epoch_end_offset r;
                                 r.partition = p.partition;
                                 r.error_code = error_code::topic_authorization_failed;
                                 return r;
                             });
                         return out;
                     });
}

// --- Metadata ---------------------------------------------------------------------------------

result<acl_decision> acl_metadata_topics(const acl_request& rq) {
    using request = kafka::metadata_request;
    using response = kafka::metadata_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    const bool all_topics = !req->topics || (rq.version() == 0 && req->topics->empty());
    acl_decision d;
    if (all_topics) {
        // Kafka leaves out of an all-topics answer what the principal may not describe
        // (quietly: no audit line).
        const policy_chain chain = rq.chain;
        auto principal = std::make_shared<std::string>(rq.who.principal);
        auto host = std::make_shared<std::string>(authorizer_host(rq.who.peer));
        const auto peer = rq.who.peer;
        d.merge = acl_edit_response<response>(
            rq.version(), [chain, principal, host, peer](response& resp) {
                requester who;
                who.principal = *principal;
                who.host = *host;
                who.peer = peer;
                std::erase_if(resp.topics, [&](const response::metadata_response_topic& t) {
                    return !chain.visible(who, acl_operation::describe, resource_type::topic,
                                          t.name.value_or(""));
                });
            });
        return d;
    }
    std::vector<access> accesses;
    for (const auto& t : *req->topics) {
        accesses.push_back(
            topic_access(acl_operation::describe, t.name ? std::string_view(*t.name) : ""));
    }
    const auto allowed = acl_decide(rq, accesses);
    const std::size_t denied = acl_count_denied(allowed);
    // Auto-creation (v4+ asks for it): Kafka creates a missing topic only for a principal with
    // CREATE on the cluster or the topic, and answers the others TOPIC_AUTHORIZATION_FAILED.
    // The upstream would create it with the gateway's rights, so when a topic asked for may
    // not be created the request goes up without auto-creation and a missing one among those
    // comes back TOPIC_AUTHORIZATION_FAILED (the others of that request are not created
    // either: UNKNOWN_TOPIC_OR_PARTITION, as with auto-creation off).
    auto uncreatable = std::make_shared<std::vector<std::string>>();
    if (rq.version() >= 4 && req->allow_auto_topic_creation &&
        !rq.chain.visible(rq.who, acl_operation::create, resource_type::cluster,
                          auth::cluster_resource_name)) {
        for (std::size_t i = 0; i < allowed.size(); ++i) {
            const std::string name = (*req->topics)[i].name.value_or("");
            if (allowed[i] &&
                !rq.chain.visible(rq.who, acl_operation::create, resource_type::topic, name)) {
                uncreatable->push_back(name);
            }
        }
    }
    if (denied == 0 && uncreatable->empty()) {
        return d;
    }
    // Named topics denied DESCRIBE come back with TOPIC_AUTHORIZATION_FAILED; they are left
    // out of the forwarded request (so that the upstream does not auto-create them) except in
    // v0, where an empty list means every topic.
    auto refused = std::make_shared<std::vector<std::string>>();
    std::vector<request::metadata_request_topic> kept;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        auto& t = (*req->topics)[i];
        if (allowed[i]) {
            kept.push_back(std::move(t));
        } else {
            refused->push_back(t.name.value_or(""));
        }
    }
    d.denied = denied;
    if (rq.version() > 0 && (denied > 0 || !uncreatable->empty())) {
        req->topics = std::move(kept);
        if (!uncreatable->empty()) {
            req->allow_auto_topic_creation = false;
        }
        d.what = acl_decision::action::forward_filtered;
        d.frame = acl_request_frame(rq.header, *req);
    }
    d.merge = acl_edit_response<response>(rq.version(), [refused, uncreatable](response& resp) {
        auto among = [](const std::vector<std::string>& names, const std::string& name) {
            return std::find(names.begin(), names.end(), name) != names.end();
        };
        std::erase_if(resp.topics, [&](const response::metadata_response_topic& t) {
            return among(*refused, t.name.value_or(""));
        });
        for (auto& t : resp.topics) {
            if (t.error_code == error_code::unknown_topic_or_partition &&
                among(*uncreatable, t.name.value_or(""))) {
                t.error_code = error_code::topic_authorization_failed;
            }
        }
        for (const auto& name : *refused) {
            auto& t = resp.topics.emplace_back();
            t.error_code = error_code::topic_authorization_failed;
            t.name = name;
        }
    });
    return d;
}

/// Metadata: the topics (acl_metadata_topics), then the authorized operations asked for,
/// answered for the client's principal.
result<acl_decision> acl_metadata(const acl_request& rq) {
    using response = kafka::metadata_response;
    auto d = acl_metadata_topics(rq);
    if (!d || d->what == acl_decision::action::answer) {
        return d;
    }
    auto req = acl_decode<kafka::metadata_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    const bool topic_ops = req->include_topic_authorized_operations;
    const bool cluster_ops = req->include_cluster_authorized_operations;
    if (!topic_ops && !cluster_ops) {
        return d;
    }
    const policy_chain chain = rq.chain;
    auto who = std::make_shared<acl_owned_requester>(rq.who);
    d->merge = acl_then<response>(
        std::move(d->merge), rq.version(), [chain, who, topic_ops, cluster_ops](response& resp) {
            const requester w = who->view();
            if (topic_ops) {
                for (auto& t : resp.topics) {
                    if (t.error_code == error_code::none && t.name) {
                        t.topic_authorized_operations = chain.authorized_operations(
                            w, resource_type::topic, *t.name, acl_topic_operations);
                    }
                }
            }
            if (cluster_ops) {
                resp.cluster_authorized_operations = acl_cluster_ops(chain, w);
            }
        });
    return d;
}

/// DescribeCluster names nothing; its cluster operations, when asked for, are the principal's.
result<acl_decision> acl_describe_cluster(const acl_request& rq) {
    using response = kafka::describe_cluster_response;
    auto req = acl_decode<kafka::describe_cluster_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    acl_decision d;
    if (req->include_cluster_authorized_operations) {
        const policy_chain chain = rq.chain;
        auto who = std::make_shared<acl_owned_requester>(rq.who);
        d.merge = acl_edit_response<response>(rq.version(), [chain, who](response& resp) {
            resp.cluster_authorized_operations = acl_cluster_ops(chain, who->view());
        });
    }
    return d;
}

// --- groups -----------------------------------------------------------------------------------

/// A request of one group: denied, the whole request fails with GROUP_AUTHORIZATION_FAILED.
template <typename Request, typename Response>
result<acl_decision> acl_one_group(const acl_request& rq, acl_operation op) {
    auto req = acl_decode<Request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (acl_allowed(rq, group_access(op, req->group_id))) {
        return acl_decision{};
    }
    Response resp;
    resp.error_code = error_code::group_authorization_failed;
    return acl_local(rq, resp, 1);
}

result<acl_decision> acl_join_group(const acl_request& rq) {
    auto req = acl_decode<kafka::join_group_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (acl_allowed(rq, group_access(acl_operation::read, req->group_id))) {
        return acl_decision{};
    }
    kafka::join_group_response resp;
    resp.error_code = error_code::group_authorization_failed;
    resp.generation_id = -1;
    resp.member_id = req->member_id;
    return acl_local(rq, resp, 1);
}

result<acl_decision> acl_offset_commit(const acl_request& rq) {
    using request = kafka::offset_commit_request;
    using response = kafka::offset_commit_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    auto fail_each = [&](const request::offset_commit_request_topic& t, error_code e) {
        response::offset_commit_response_topic out;
        out.name = t.name;
        out.partitions = acl_partitions_of<response::offset_commit_response_partition>(
            t.partitions, [e](const auto& p) {
                response::offset_commit_response_partition r;
                r.partition_index = p.partition_index;
                r.error_code = e;
                return r;
            });
        return out;
    };
    if (!acl_allowed(rq, group_access(acl_operation::read, req->group_id))) {
        response resp;
        for (const auto& t : req->topics) {
            resp.topics.push_back(fail_each(t, error_code::group_authorization_failed));
        }
        return acl_local(rq, resp, 1);
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::read, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [&](const request::offset_commit_request_topic& t) {
                         return fail_each(t, error_code::topic_authorization_failed);
                     });
}

result<acl_decision> acl_offset_fetch(const acl_request& rq) {
    using request = kafka::offset_fetch_request;
    using response = kafka::offset_fetch_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    auto fail_each = [](const request::offset_fetch_request_topic& t, error_code e) {
        response::offset_fetch_response_topic out;
        out.name = t.name;
        out.partitions = acl_partitions_of<response::offset_fetch_response_partition>(
            t.partition_indexes, [e](const auto& p) {
                response::offset_fetch_response_partition r;
                r.partition_index = p;
                r.committed_offset = offset(-1);
                r.metadata = "";
                r.error_code = e;
                return r;
            });
        return out;
    };
    if (!acl_allowed(rq, group_access(acl_operation::describe, req->group_id))) {
        response resp;
        resp.error_code = error_code::group_authorization_failed;
        if (req->topics && rq.version() < 2) {
            for (const auto& t : *req->topics) {
                resp.topics.push_back(fail_each(t, error_code::group_authorization_failed));
            }
        }
        return acl_local(rq, resp, 1);
    }
    if (!req->topics) {
        return acl_decision{};
    }
    std::vector<access> accesses;
    for (const auto& t : *req->topics) {
        accesses.push_back(topic_access(acl_operation::describe, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    const std::size_t denied = acl_count_denied(allowed);
    if (denied == 0) {
        return acl_decision{};
    }
    std::vector<request::offset_fetch_request_topic> kept;
    std::vector<response::offset_fetch_response_topic> refused;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        auto& t = (*req->topics)[i];
        if (allowed[i]) {
            kept.push_back(std::move(t));
        } else {
            refused.push_back(fail_each(t, error_code::topic_authorization_failed));
        }
    }
    if (kept.empty()) {
        response resp;
        resp.topics = std::move(refused);
        return acl_local(rq, resp, denied);
    }
    req->topics = std::move(kept);
    acl_decision d;
    d.what = acl_decision::action::forward_filtered;
    d.frame = acl_request_frame(rq.header, *req);
    d.denied = denied;
    auto extra = std::make_shared<std::vector<response::offset_fetch_response_topic>>(
        std::move(refused));
    d.merge = acl_edit_response<response>(rq.version(), [extra](response& resp) {
        resp.topics.insert(resp.topics.end(), extra->begin(), extra->end());
    });
    return d;
}

result<acl_decision> acl_describe_groups_named(const acl_request& rq) {
    using request = kafka::describe_groups_request;
    using response = kafka::describe_groups_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& g : req->groups) {
        accesses.push_back(group_access(acl_operation::describe, g));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::groups, allowed, &response::groups,
                     [](const std::string& g) {
                         response::described_group out;
                         out.error_code = error_code::group_authorization_failed;
                         out.group_id = g;
                         return out;
                     });
}

/// DescribeGroups: the groups (acl_describe_groups_named), then their authorized operations
/// when asked for, answered for the client's principal.
result<acl_decision> acl_describe_groups(const acl_request& rq) {
    using response = kafka::describe_groups_response;
    auto d = acl_describe_groups_named(rq);
    if (!d || d->what == acl_decision::action::answer) {
        return d;
    }
    auto req = acl_decode<kafka::describe_groups_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (!req->include_authorized_operations) {
        return d;
    }
    const policy_chain chain = rq.chain;
    auto who = std::make_shared<acl_owned_requester>(rq.who);
    d->merge = acl_then<response>(std::move(d->merge), rq.version(), [chain, who](response& resp) {
        const requester w = who->view();
        for (auto& g : resp.groups) {
            if (g.error_code == error_code::none) {
                g.authorized_operations = chain.authorized_operations(
                    w, resource_type::group, g.group_id, acl_group_operations);
            }
        }
    });
    return d;
}

result<acl_decision> acl_delete_groups(const acl_request& rq) {
    using request = kafka::delete_groups_request;
    using response = kafka::delete_groups_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& g : req->groups_names) {
        accesses.push_back(group_access(acl_operation::remove, g));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::groups_names, allowed, &response::results,
                     [](const std::string& g) {
                         response::deletable_group_result out;
                         out.group_id = g;
                         out.error_code = error_code::group_authorization_failed;
                         return out;
                     });
}

result<acl_decision> acl_list_groups(const acl_request& rq) {
    if (rq.chain.visible(rq.who, acl_operation::describe, resource_type::cluster,
                         auth::cluster_resource_name)) {
        return acl_decision{};
    }
    // Without DESCRIBE on the cluster, Kafka lists the groups the principal may describe.
    using response = kafka::list_groups_response;
    const policy_chain chain = rq.chain;
    auto principal = std::make_shared<std::string>(rq.who.principal);
    auto host = std::make_shared<std::string>(authorizer_host(rq.who.peer));
    const auto peer = rq.who.peer;
    acl_decision d;
    d.merge = acl_edit_response<response>(
        rq.version(), [chain, principal, host, peer](response& resp) {
            requester who;
            who.principal = *principal;
            who.host = *host;
            who.peer = peer;
            std::erase_if(resp.groups, [&](const response::listed_group& g) {
                return !chain.visible(who, acl_operation::describe, resource_type::group,
                                      g.group_id);
            });
        });
    return d;
}

result<acl_decision> acl_consumer_group_heartbeat(const acl_request& rq) {
    auto req = acl_decode<kafka::consumer_group_heartbeat_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (acl_allowed(rq, group_access(acl_operation::read, req->group_id))) {
        if (req->subscribed_topic_names) {
            std::vector<access> accesses;
            for (const auto& n : *req->subscribed_topic_names) {
                accesses.push_back(topic_access(acl_operation::describe, n));
            }
            const auto allowed = acl_decide(rq, accesses);
            if (acl_count_denied(allowed) != 0) {
                kafka::consumer_group_heartbeat_response resp;
                resp.error_code = error_code::topic_authorization_failed;
                return acl_local(rq, resp, acl_count_denied(allowed));
            }
        }
        return acl_decision{};
    }
    kafka::consumer_group_heartbeat_response resp;
    resp.error_code = error_code::group_authorization_failed;
    return acl_local(rq, resp, 1);
}

// --- FindCoordinator --------------------------------------------------------------------------

result<acl_decision> acl_find_coordinator(const acl_request& rq) {
    using request = kafka::find_coordinator_request;
    using response = kafka::find_coordinator_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (req->key_type != 0 && req->key_type != 1) {
        return acl_decision{};  // the upstream answers an unknown key type
    }
    const auto type = req->key_type == 0 ? resource_type::group : resource_type::transactional_id;
    const auto error = req->key_type == 0 ? error_code::group_authorization_failed
                                          : error_code::transactional_id_authorization_failed;
    if (rq.version() < 4) {
        if (acl_allowed(rq, access{acl_operation::describe, type, req->key_})) {
            return acl_decision{};
        }
        response resp;
        resp.error_code = error;
        resp.error_message = std::nullopt;
        resp.node_id = node_id(-1);
        resp.port = -1;
        return acl_local(rq, resp, 1);
    }
    std::vector<access> accesses;
    for (const auto& k : req->coordinator_keys) {
        accesses.push_back(access{acl_operation::describe, type, k});
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::coordinator_keys, allowed, &response::coordinators,
                     [error](const std::string& k) {
                         response::coordinator out;
                         out.key = k;
                         out.node_id = node_id(-1);
                         out.port = -1;
                         out.error_code = error;
                         out.error_message = std::nullopt;
                         return out;
                     });
}

// --- transactions -----------------------------------------------------------------------------

result<acl_decision> acl_init_producer_id(const acl_request& rq) {
    auto req = acl_decode<kafka::init_producer_id_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    kafka::init_producer_id_response resp;
    resp.producer_id = producer_id(-1);
    resp.producer_epoch = producer_epoch(-1);
    if (req->transactional_id) {
        if (acl_allowed(rq,
                        transactional_id_access(acl_operation::write, *req->transactional_id))) {
            return acl_decision{};
        }
        resp.error_code = error_code::transactional_id_authorization_failed;
        return acl_local(rq, resp, 1);
    }
    // Kafka's rule since 2.8: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic.
    access a = cluster_access(acl_operation::idempotent_write);
    a.alternative = also_passes::write_on_any_topic;
    if (acl_allowed(rq, a)) {
        return acl_decision{};
    }
    resp.error_code = error_code::cluster_authorization_failed;
    return acl_local(rq, resp, 1);
}

result<acl_decision> acl_end_txn(const acl_request& rq) {
    auto req = acl_decode<kafka::end_txn_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    if (acl_allowed(rq, transactional_id_access(acl_operation::write, req->transactional_id))) {
        return acl_decision{};
    }
    kafka::end_txn_response resp;
    resp.error_code = error_code::transactional_id_authorization_failed;
    return acl_local(rq, resp, 1);
}

result<acl_decision> acl_add_offsets_to_txn(const acl_request& rq) {
    auto req = acl_decode<kafka::add_offsets_to_txn_request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    kafka::add_offsets_to_txn_response resp;
    if (!acl_allowed(rq, transactional_id_access(acl_operation::write, req->transactional_id))) {
        resp.error_code = error_code::transactional_id_authorization_failed;
        return acl_local(rq, resp, 1);
    }
    if (!acl_allowed(rq, group_access(acl_operation::read, req->group_id))) {
        resp.error_code = error_code::group_authorization_failed;
        return acl_local(rq, resp, 1);
    }
    return acl_decision{};
}

result<acl_decision> acl_add_partitions_to_txn(const acl_request& rq) {
    using request = kafka::add_partitions_to_txn_request;
    using response = kafka::add_partitions_to_txn_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    // v0-v3 only (authorized_versions): one transaction.
    auto answer = [&](auto error_of) {
        response resp;
        for (const auto& t : req->v3_and_below_topics) {
            auto& out = resp.results_by_topic_v3_and_below.emplace_back();
            out.name = t.name;
            for (const auto& p : t.partitions) {
                out.results_by_partition.push_back({p, error_of(t.name), {}});
            }
        }
        return resp;
    };
    if (!acl_allowed(rq, transactional_id_access(acl_operation::write,
                                                 req->v3_and_below_transactional_id))) {
        return acl_local(rq, answer([](const std::string&) {
                             return error_code::transactional_id_authorization_failed;
                         }),
                         1);
    }
    std::vector<access> accesses;
    for (const auto& t : req->v3_and_below_topics) {
        accesses.push_back(topic_access(acl_operation::write, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    const std::size_t denied = acl_count_denied(allowed);
    if (denied == 0) {
        return acl_decision{};
    }
    // Kafka adds none of them: the denied topics fail, the others are not attempted.
    std::set<std::string> refused;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        if (!allowed[i]) {
            refused.insert(req->v3_and_below_topics[i].name);
        }
    }
    return acl_local(rq, answer([&](const std::string& name) {
                         return refused.count(name) != 0 ? error_code::topic_authorization_failed
                                                         : error_code::operation_not_attempted;
                     }),
                     denied);
}

result<acl_decision> acl_txn_offset_commit(const acl_request& rq) {
    using request = kafka::txn_offset_commit_request;
    using response = kafka::txn_offset_commit_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    auto fail_each = [](const request::txn_offset_commit_request_topic& t, error_code e) {
        response::txn_offset_commit_response_topic out;
        out.name = t.name;
        out.partitions = acl_partitions_of<response::txn_offset_commit_response_partition>(
            t.partitions, [e](const auto& p) {
                response::txn_offset_commit_response_partition r;
                r.partition_index = p.partition_index;
                r.error_code = e;
                return r;
            });
        return out;
    };
    auto fail_all = [&](error_code e) {
        response resp;
        for (const auto& t : req->topics) {
            resp.topics.push_back(fail_each(t, e));
        }
        return acl_local(rq, resp, 1);
    };
    if (!acl_allowed(rq, transactional_id_access(acl_operation::write, req->transactional_id))) {
        return fail_all(error_code::transactional_id_authorization_failed);
    }
    if (!acl_allowed(rq, group_access(acl_operation::read, req->group_id))) {
        return fail_all(error_code::group_authorization_failed);
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::read, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [&](const request::txn_offset_commit_request_topic& t) {
                         return fail_each(t, error_code::topic_authorization_failed);
                     });
}

// --- topics admin -----------------------------------------------------------------------------

result<acl_decision> acl_create_topics(const acl_request& rq) {
    using request = kafka::create_topics_request;
    using response = kafka::create_topics_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        access a = topic_access(acl_operation::create, t.name);
        a.alternative = also_passes::cluster;
        accesses.push_back(a);
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::topics,
                     [](const request::creatable_topic& t) {
                         response::creatable_topic_result out;
                         out.name = t.name;
                         out.error_code = error_code::topic_authorization_failed;
                         out.error_message = std::nullopt;
                         out.configs = std::nullopt;
                         return out;
                     });
}

result<acl_decision> acl_delete_topics(const acl_request& rq) {
    using request = kafka::delete_topics_request;
    using response = kafka::delete_topics_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    // v0-v5 only (authorized_versions): topics by name.
    std::vector<access> accesses;
    for (const auto& n : req->topic_names) {
        accesses.push_back(topic_access(acl_operation::remove, n));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topic_names, allowed, &response::responses,
                     [](const std::string& n) {
                         response::deletable_topic_result out;
                         out.name = n;
                         out.error_code = error_code::topic_authorization_failed;
                         return out;
                     });
}

result<acl_decision> acl_create_partitions(const acl_request& rq) {
    using request = kafka::create_partitions_request;
    using response = kafka::create_partitions_response;
    auto req = acl_decode<request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    for (const auto& t : req->topics) {
        accesses.push_back(topic_access(acl_operation::alter, t.name));
    }
    const auto allowed = acl_decide(rq, accesses);
    return acl_split(rq, *req, &request::topics, allowed, &response::results,
                     [](const request::create_partitions_topic& t) {
                         response::create_partitions_topic_result out;
                         out.name = t.name;
                         out.error_code = error_code::topic_authorization_failed;
                         out.error_message = std::nullopt;
                         return out;
                     });
}

// --- configs ----------------------------------------------------------------------------------

/// Kafka's ConfigResource types (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs).
constexpr std::int8_t acl_config_topic = 2;
constexpr std::int8_t acl_config_broker = 4;
constexpr std::int8_t acl_config_broker_logger = 8;
constexpr std::int8_t acl_config_group = 32;

/// The access a config resource needs (the broker mode's declare_config_resource): topics and
/// groups by name, brokers and their loggers on the cluster; an unknown type needs none (the
/// upstream answers it).
access acl_config_access(acl_operation op, std::int8_t type, std::string_view name) {
    switch (type) {
        case acl_config_topic:
            return topic_access(op, name);
        case acl_config_broker:
        case acl_config_broker_logger:
            return cluster_access(op);
        case acl_config_group:
            return group_access(op, name);
        default:
            return access{};
    }
}

error_code acl_config_error(std::int8_t type) {
    switch (type) {
        case acl_config_topic:
            return error_code::topic_authorization_failed;
        case acl_config_group:
            return error_code::group_authorization_failed;
        default:
            return error_code::cluster_authorization_failed;
    }
}

/// DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: one access per resource; denied
/// resources come back with their type's authorization error, the others go upstream.
template <typename Request, typename Response, typename In, typename Out>
result<acl_decision> acl_configs(const acl_request& rq, acl_operation op,
                                 std::vector<In> Request::*in, std::vector<Out> Response::*out) {
    auto req = acl_decode<Request>(rq);
    if (!req) {
        return std::unexpected(req.error());
    }
    std::vector<access> accesses;
    std::vector<std::size_t> checked;  // index in the request of each access
    for (std::size_t i = 0; i < ((*req).*in).size(); ++i) {
        const auto& res = ((*req).*in)[i];
        const access a = acl_config_access(op, res.resource_type, res.resource_name);
        if (a.type != resource_type::unknown) {
            accesses.push_back(a);
            checked.push_back(i);
        }
    }
    const auto verdicts = acl_decide(rq, accesses);
    std::vector<bool> allowed(((*req).*in).size(), true);
    for (std::size_t i = 0; i < checked.size(); ++i) {
        allowed[checked[i]] = verdicts[i];
    }
    return acl_split(rq, *req, in, allowed, out, [op](const In& res) {
        Out r;
        r.error_code = acl_config_error(res.resource_type);
        r.error_message = std::string(op == acl_operation::describe_configs
                                          ? "not authorized to describe the configs of "
                                          : "not authorized to alter the configs of ") +
                          res.resource_name;
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name;
        return r;
    });
}

}  // namespace

acl_class classify_api(std::int16_t key) {
    switch (static_cast<api_key>(key)) {
        case api_key::api_versions:
        case api_key::sasl_handshake:
        case api_key::sasl_authenticate:
            return acl_class::open;
        case api_key::produce:
        case api_key::fetch:
        case api_key::list_offsets:
        case api_key::metadata:
        case api_key::offset_commit:
        case api_key::offset_fetch:
        case api_key::find_coordinator:
        case api_key::join_group:
        case api_key::heartbeat:
        case api_key::leave_group:
        case api_key::sync_group:
        case api_key::describe_groups:
        case api_key::list_groups:
        case api_key::create_topics:
        case api_key::delete_topics:
        case api_key::delete_records:
        case api_key::init_producer_id:
        case api_key::offset_for_leader_epoch:
        case api_key::add_partitions_to_txn:
        case api_key::add_offsets_to_txn:
        case api_key::end_txn:
        case api_key::txn_offset_commit:
        case api_key::delete_groups:
        case api_key::consumer_group_heartbeat:
        case api_key::describe_cluster:  // brokers and the cluster id; its operations
        case api_key::create_partitions:
        case api_key::describe_configs:
        case api_key::alter_configs:
        case api_key::incremental_alter_configs:
            return acl_class::checked;
        default:
            return acl_class::refused;
    }
}

std::optional<version_range> authorized_versions(std::int16_t key, version_range r) {
    const acl_class c = classify_api(key);
    if (c == acl_class::refused) {
        return std::nullopt;
    }
    std::int16_t max = r.max;
    switch (static_cast<api_key>(key)) {
        case api_key::fetch:  // v13+ names topics by id
            max = std::min<std::int16_t>(max, 12);
            break;
        case api_key::delete_topics:  // v6+ may name topics by id
            max = std::min<std::int16_t>(max, 5);
            break;
        case api_key::offset_fetch:  // v8+ batches groups
            max = std::min<std::int16_t>(max, 7);
            break;
        case api_key::add_partitions_to_txn:  // v4+ batches transactions
            max = std::min<std::int16_t>(max, 3);
            break;
        default:
            break;
    }
    if (max < r.min) {
        return std::nullopt;
    }
    return version_range{r.min, max};
}

result<acl_decision> check_request(const policy_chain& chain, requester who,
                                   protocol::bytes_view request,
                                   std::shared_ptr<const void> owner) {
    protocol::reader r(request);
    auto header = kafka::decode_request_header(r);
    if (!header) {
        return std::unexpected(header.error());
    }
    const std::string client_id = header->client_id.value_or("");
    who.client_id = client_id;
    const acl_request rq{chain, who, *header, r.rest(), std::move(owner)};
    switch (static_cast<api_key>(header->api_key)) {
        case api_key::produce:
            return acl_produce(rq);
        case api_key::fetch:
            return acl_fetch(rq);
        case api_key::list_offsets:
            return acl_list_offsets(rq);
        case api_key::metadata:
            return acl_metadata(rq);
        case api_key::offset_commit:
            return acl_offset_commit(rq);
        case api_key::offset_fetch:
            return acl_offset_fetch(rq);
        case api_key::find_coordinator:
            return acl_find_coordinator(rq);
        case api_key::join_group:
            return acl_join_group(rq);
        case api_key::heartbeat:
            return acl_one_group<kafka::heartbeat_request, kafka::heartbeat_response>(
                rq, acl_operation::read);
        case api_key::leave_group:
            return acl_one_group<kafka::leave_group_request, kafka::leave_group_response>(
                rq, acl_operation::read);
        case api_key::sync_group:
            return acl_one_group<kafka::sync_group_request, kafka::sync_group_response>(
                rq, acl_operation::read);
        case api_key::describe_groups:
            return acl_describe_groups(rq);
        case api_key::list_groups:
            return acl_list_groups(rq);
        case api_key::delete_groups:
            return acl_delete_groups(rq);
        case api_key::consumer_group_heartbeat:
            return acl_consumer_group_heartbeat(rq);
        case api_key::create_topics:
            return acl_create_topics(rq);
        case api_key::delete_topics:
            return acl_delete_topics(rq);
        case api_key::delete_records:
            return acl_delete_records(rq);
        case api_key::offset_for_leader_epoch:
            return acl_offset_for_leader_epoch(rq);
        case api_key::init_producer_id:
            return acl_init_producer_id(rq);
        case api_key::end_txn:
            return acl_end_txn(rq);
        case api_key::add_offsets_to_txn:
            return acl_add_offsets_to_txn(rq);
        case api_key::add_partitions_to_txn:
            return acl_add_partitions_to_txn(rq);
        case api_key::txn_offset_commit:
            return acl_txn_offset_commit(rq);
        case api_key::create_partitions:
            return acl_create_partitions(rq);
        case api_key::describe_cluster:
            return acl_describe_cluster(rq);
        case api_key::describe_configs:
            return acl_configs<kafka::describe_configs_request, kafka::describe_configs_response>(
                rq, acl_operation::describe_configs, &kafka::describe_configs_request::resources,
                &kafka::describe_configs_response::results);
        case api_key::alter_configs:
            return acl_configs<kafka::alter_configs_request, kafka::alter_configs_response>(
                rq, acl_operation::alter_configs, &kafka::alter_configs_request::resources,
                &kafka::alter_configs_response::responses);
        case api_key::incremental_alter_configs:
            return acl_configs<kafka::incremental_alter_configs_request,
                               kafka::incremental_alter_configs_response>(
                rq, acl_operation::alter_configs,
                &kafka::incremental_alter_configs_request::resources,
                &kafka::incremental_alter_configs_response::responses);
        default:
            break;
    }
    if (classify_api(header->api_key) == acl_class::open) {
        return acl_decision{};
    }
    // Never forwarded unchecked (the caller does not offer refused APIs; this is the net).
    return std::unexpected(make_error_code(protocol::errc::unsupported_version));
}

}  // namespace sluice::gateway::proxy
