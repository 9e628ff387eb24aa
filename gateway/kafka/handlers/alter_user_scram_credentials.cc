// AlterUserScramCredentials (KIP-554): deletes SCRAM credentials and creates or replaces
// others on the running server, at once and persisted (DATA_DIR/credentials). The client
// derives the SaltedPassword itself; a changed user's PLAIN verifier is dropped, and PLAIN
// logins then check the SCRAM credential (the broker never sees the new password). Validation
// follows Kafka's ScramControlManager: one entry per user per request, known mechanism,
// 4096..16384 iterations, an existing credential to delete. Needs ALTER on the cluster; without
// it every user named in the request answers CLUSTER_AUTHORIZATION_FAILED and nothing changes.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "auth/credential_store.h"
#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

namespace {

constexpr int alter_max_iterations = 16384;  // Kafka's ScramMechanism maxIterations

struct alter_outcome {
    kafka::error_code code = kafka::error_code::none;
    std::string message;
};

std::optional<auth::hash_algorithm> alter_mechanism(std::int8_t type) {
    if (type == 1) {
        return auth::hash_algorithm::sha256;
    }
    if (type == 2) {
        return auth::hash_algorithm::sha512;
    }
    return std::nullopt;
}

std::optional<auth::scram_credential>& alter_slot(auth::user_credentials& c,
                                                  auth::hash_algorithm h) {
    return h == auth::hash_algorithm::sha256 ? c.scram_sha_256 : c.scram_sha_512;
}

/// The mechanisms a user's credentials serve, for the audit log.
std::vector<std::string> alter_mechanisms_of(const std::optional<auth::user_credentials>& c) {
    std::vector<std::string> out;
    if (c && c->plain) {
        out.emplace_back("PLAIN");
    }
    if (c && c->scram_sha_256) {
        out.emplace_back("SCRAM-SHA-256");
    }
    if (c && c->scram_sha_512) {
        out.emplace_back("SCRAM-SHA-512");
    }
    return out;
}

std::string alter_bytes_text(const kafka::bytes& b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace

boost::asio::awaitable<alter_user_scram_credentials_handler::response>
alter_user_scram_credentials_handler::handle(request_context& ctx, request req) {
    auto& store = ctx.svc().users;
    std::vector<std::string> order;
    std::map<std::string, int> times;
    std::map<std::string, alter_outcome> outcome;
    auto note = [&](const std::string& name) {
        if (times[name]++ == 0) {
            order.push_back(name);
        }
    };
    for (const auto& d : req.deletions) {
        note(d.name);
    }
    for (const auto& u : req.upsertions) {
        note(u.name);
    }
    if (!authorize_cluster(ctx, auth::acl_operation::alter)) {
        response denied;
        for (const auto& name : order) {
            response::alter_user_scram_credentials_result r;
            r.user = name;
            r.error_code = kafka::error_code::cluster_authorization_failed;
            r.error_message = "AlterUserScramCredentials needs ALTER on the cluster";
            denied.results.push_back(std::move(r));
        }
        co_return denied;
    }
    auto refuse = [&](const std::string& name, kafka::error_code code, std::string message) {
        auto& o = outcome[name];
        if (o.code == kafka::error_code::none) {
            o = alter_outcome{code, std::move(message)};
        }
    };
    for (const auto& [name, n] : times) {
        if (name.empty()) {
            refuse(name, kafka::error_code::unacceptable_credential, "Username must not be empty");
        } else if (!auth::valid_user_name(name)) {
            refuse(name, kafka::error_code::unacceptable_credential,
                   "A user name is 1 to 255 bytes without spaces or control characters");
        } else if (n > 1) {
            refuse(name, kafka::error_code::duplicate_resource,
                   "A user credential cannot be altered twice in the same request");
        }
    }
    // The new state of every user the request changes, computed before anything is applied.
    std::map<std::string, std::optional<auth::user_credentials>> next;
    for (const auto& d : req.deletions) {
        const auto h = alter_mechanism(d.mechanism);
        if (!h) {
            refuse(d.name, kafka::error_code::unsupported_sasl_mechanism,
                   "Unknown SCRAM mechanism");
            continue;
        }
        if (outcome[d.name].code != kafka::error_code::none) {
            continue;
        }
        auto creds = store.find(d.name);
        if (!creds || !alter_slot(*creds, *h)) {
            refuse(d.name, kafka::error_code::resource_not_found,
                   "Attempt to delete a user credential that does not exist");
            continue;
        }
        alter_slot(*creds, *h).reset();
        creds->plain.reset();
        if (creds->scram_sha_256 || creds->scram_sha_512) {
            next[d.name] = std::move(creds);
        } else {
            next[d.name] = std::nullopt;
        }
    }
    for (const auto& u : req.upsertions) {
        const auto h = alter_mechanism(u.mechanism);
        if (!h) {
            refuse(u.name, kafka::error_code::unsupported_sasl_mechanism,
                   "Unknown SCRAM mechanism");
            continue;
        }
        if (u.iterations < auth::min_scram_iterations) {
            refuse(u.name, kafka::error_code::unacceptable_credential, "Too few iterations");
            continue;
        }
        if (u.iterations > alter_max_iterations) {
            refuse(u.name, kafka::error_code::unacceptable_credential, "Too many iterations");
            continue;
        }
        if (u.salt.empty() || u.salted_password.size() != auth::digest_size(*h)) {
            refuse(u.name, kafka::error_code::unacceptable_credential,
                   "The salt must not be empty and the salted password must be one digest long");
            continue;
        }
        if (outcome[u.name].code != kafka::error_code::none) {
            continue;
        }
        auto creds = store.find(u.name).value_or(auth::user_credentials{});
        alter_slot(creds, *h) = auth::scram_credential_from_salted(
            *h, alter_bytes_text(u.salt), alter_bytes_text(u.salted_password), u.iterations);
        creds.plain.reset();
        next[u.name] = std::move(creds);
    }
    // Apply and persist; if the file cannot be written, put the old state back.
    std::map<std::string, std::optional<auth::user_credentials>> before;
    for (auto& [name, creds] : next) {
        before[name] = store.find(name);
        store.replace(name, creds);
    }
    if (!next.empty()) {
        try {
            // A small file, rarely written: saved (with fsync) on this connection's thread.
            store.save();
            for (const auto& [name, creds] : next) {
                auth_log().info("conn {} from {}: {} {} SCRAM credentials of user '{}'",
                                ctx.connection().id, ctx.connection().peer.address().to_string(),
                                ctx.principal(), creds ? "changed" : "deleted the last", name);
                audit_user_changed(audit_source_of(ctx), name, !creds, alter_mechanisms_of(creds),
                                   "AlterUserScramCredentials");
            }
        } catch (const std::exception& e) {
            auth_log().error("AlterUserScramCredentials: cannot save the users: {}", e.what());
            for (auto& [name, creds] : before) {
                store.replace(name, creds);
                refuse(name, kafka::error_code::unknown_server_error,
                       "The credentials could not be saved");
            }
        }
    }
    response resp;
    for (const auto& name : order) {
        response::alter_user_scram_credentials_result r;
        r.user = name;
        const auto& o = outcome[name];
        r.error_code = o.code;
        if (o.code == kafka::error_code::none) {
            r.error_message = std::nullopt;
        } else {
            r.error_message = o.message;
        }
        resp.results.push_back(std::move(r));
    }
    co_return resp;
}

}  // namespace sluice::gateway
