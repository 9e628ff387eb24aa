// DescribeUserScramCredentials (KIP-554): which SCRAM mechanisms, with which iteration counts,
// each user has; never salts or keys. A null or empty list describes every user.
// Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED for the whole request).
#include <map>
#include <string>
#include <vector>

#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

namespace {

// Kafka's ScramMechanism types on the wire.
constexpr std::int8_t describe_scram_sha_256 = 1;
constexpr std::int8_t describe_scram_sha_512 = 2;

}  // namespace

/// DESCRIBE on the cluster.
void describe_user_scram_credentials_handler::declare(std::int16_t, const request&, access_list& out) {
    out.add_cluster(auth::acl_operation::describe);
}

boost::asio::awaitable<describe_user_scram_credentials_handler::response>
describe_user_scram_credentials_handler::handle(request_context& ctx, request req) {
    const auto& users = ctx.svc().users;
    response resp;
    resp.error_code = kafka::error_code::none;
    resp.error_message = std::nullopt;
    if (ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::cluster_authorization_failed;
        resp.error_message = "DescribeUserScramCredentials needs DESCRIBE on the cluster";
        co_return resp;
    }
    const bool all = !req.users || req.users->empty();
    std::vector<std::string> names;
    std::map<std::string, int> times;
    if (all) {
        names = users.users();
    } else {
        for (auto& u : *req.users) {
            if (times[u.name]++ == 0) {
                names.push_back(u.name);
            }
        }
    }
    for (const auto& name : names) {
        response::describe_user_scram_credentials_result r;
        r.user = name;
        r.error_code = kafka::error_code::none;
        r.error_message = std::nullopt;
        if (!all && times[name] > 1) {
            r.error_code = kafka::error_code::duplicate_resource;
            r.error_message =
                "Cannot describe SCRAM credentials for the same user twice in a single request";
            resp.results.push_back(std::move(r));
            continue;
        }
        auto creds = users.find(name);
        if (!creds || (!creds->scram_sha_256 && !creds->scram_sha_512)) {
            if (all) {
                continue;
            }
            r.error_code = kafka::error_code::resource_not_found;
            r.error_message = "Attempt to describe a user credential that does not exist";
            resp.results.push_back(std::move(r));
            continue;
        }
        if (creds->scram_sha_256) {
            r.credential_infos.push_back(
                {describe_scram_sha_256, creds->scram_sha_256->iterations, {}});
        }
        if (creds->scram_sha_512) {
            r.credential_infos.push_back(
                {describe_scram_sha_512, creds->scram_sha_512->iterations, {}});
        }
        resp.results.push_back(std::move(r));
    }
    co_return resp;
}

}  // namespace sluice::gateway
