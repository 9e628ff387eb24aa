#include "backend/upstream/upstream_common.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "protocol/core/base64.h"
#include "protocol/core/json.h"

namespace sluice::backend::upstream {
namespace {

void log_line(const rd_kafka_t* rk, int level, const char* facility, const char* buf) {
    // syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug.
    auto& log = upstream_log();
    const char* name = rk ? rd_kafka_name(rk) : "rdkafka";
    if (level <= 3) {
        log.error("{} {}: {}", name, facility, buf);
    } else if (level == 4) {
        log.warn("{} {}: {}", name, facility, buf);
    } else if (level <= 6) {
        log.info("{} {}: {}", name, facility, buf);
    } else {
        log.debug("{} {}: {}", name, facility, buf);
    }
}

void set_one(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
    char err[512];
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) !=
        RD_KAFKA_CONF_OK) {
        throw std::invalid_argument("upstream." + name + ": " + err);
    }
}

/// The property naming the token file: Kafka's, with a file: URL (KIP-768: "a file containing
/// an access token"). librdkafka knows the name for its OIDC requests only, so with a file: URL
/// it is not handed on; the refresh callback below reads the file instead.
constexpr const char* token_url_property = "sasl.oauthbearer.token.endpoint.url";

/// Hands librdkafka the token in the file named by `oauthbearer_config` (set to the file's
/// path by make_conf), with the lifetime of its `exp` claim and its `sub` as the principal
/// name (both only librdkafka's bookkeeping: the broker checks the token). librdkafka calls it
/// at start and again at 80 % of the lifetime, so a token the file's owner renewed is taken
/// up. Runs on librdkafka's background thread (make_handle).
void token_file_refresh(rd_kafka_t* rk, const char* oauthbearer_config, void* /*opaque*/) {
    const std::string path = oauthbearer_config != nullptr ? oauthbearer_config : "";
    const auto fail = [&](const std::string& why) {
        upstream_log().error("{}: OAUTHBEARER token file {}: {}", rd_kafka_name(rk), path, why);
        rd_kafka_oauthbearer_set_token_failure(rk, ("token file " + path + ": " + why).c_str());
    };
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        fail(std::string("cannot read: ") + std::strerror(errno));
        return;
    }
    std::string text(64 * 1024 + 1, '\0');  // a JWT is a few kilobytes
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    const auto from = text.find_first_not_of(" \t\r\n");
    if (text.size() > 64 * 1024 || from == std::string::npos) {
        fail(text.empty() || from == std::string::npos ? "empty" : "larger than 64 KiB");
        return;
    }
    const std::string token = text.substr(from, text.find_last_not_of(" \t\r\n") - from + 1);
    // header.payload.signature: the payload's exp and sub, read unverified.
    const auto dot1 = token.find('.');
    const auto dot2 = dot1 == std::string::npos ? dot1 : token.find('.', dot1 + 1);
    const auto payload =
        dot2 == std::string::npos
            ? std::nullopt
            : protocol::base64_decode(std::string_view(token).substr(dot1 + 1, dot2 - dot1 - 1),
                                      protocol::base64_alphabet::url,
                                      protocol::base64_padding::optional);
    rapidjson::Document claims;
    if (!payload || !protocol::parse_json(claims, *payload) || !claims.IsObject()) {
        fail("not a JWT (header.payload.signature with a JSON payload)");
        return;
    }
    const auto exp = claims.FindMember("exp");
    if (exp == claims.MemberEnd() || !exp->value.IsNumber()) {
        fail("the token has no numeric exp claim");
        return;
    }
    const auto sub = claims.FindMember("sub");
    const std::string principal =
        sub != claims.MemberEnd() && sub->value.IsString() && sub->value.GetStringLength() > 0
            ? std::string(sub->value.GetString(), sub->value.GetStringLength())
            : std::string("unknown");
    const double exp_seconds = exp->value.GetDouble();
    if (!(exp_seconds > 0 && exp_seconds < 1e11)) {
        fail("the token's exp claim is out of range");
        return;
    }
    char err[512];
    if (rd_kafka_oauthbearer_set_token(rk, token.c_str(),
                                       static_cast<std::int64_t>(exp_seconds * 1000),
                                       principal.c_str(), nullptr, 0, err,
                                       sizeof err) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fail(err);  // e.g. the token has expired
        return;
    }
    upstream_log().debug("{}: OAUTHBEARER token for {} read from {}", rd_kafka_name(rk),
                         principal, path);
}

}  // namespace

conf_ptr make_conf(const std::map<std::string, std::string>& props,
                   const std::map<std::string, std::string>& extra) {
    conf_ptr conf(rd_kafka_conf_new());
    for (const auto& [k, v] : props) {
        if (k == token_url_property && v.starts_with("file:")) {
            // The token file: read by token_file_refresh, its path handed over as
            // sasl.oauthbearer.config (the callback's argument).
            if (props.contains("sasl.oauthbearer.config") ||
                props.contains("enable.sasl.oauthbearer.unsecure.jwt")) {
                throw std::invalid_argument(
                    std::string("upstream.") + token_url_property +
                    ": a file: URL names the token to use; drop upstream.sasl.oauthbearer.config "
                    "and upstream.enable.sasl.oauthbearer.unsecure.jwt");
            }
            std::string path = v.substr(5);
            while (path.starts_with("//")) {
                path.erase(0, 1);
            }
            set_one(conf.get(), "sasl.oauthbearer.config", path);
            rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf.get(), token_file_refresh);
            // Served on librdkafka's background thread (make_handle), since not every client
            // here polls its main queue.
            rd_kafka_conf_enable_sasl_queue(conf.get(), 1);
            continue;
        }
        set_one(conf.get(), k, v);
    }
    for (const auto& [k, v] : extra) {
        set_one(conf.get(), k, v);
    }
    if (!props.contains("debug") && !extra.contains("debug")) {
        auto& log = upstream_log();
        if (log.should_log(spdlog::level::trace)) {
            set_one(conf.get(), "debug", "all");
        } else if (log.should_log(spdlog::level::debug)) {
            set_one(conf.get(), "debug", upstream_debug_contexts);
        }
    }
    rd_kafka_conf_set_log_cb(conf.get(), log_line);
    return conf;
}

handle_ptr make_handle(rd_kafka_type_t type, conf_ptr conf) {
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
    if (!rk) {
        throw std::invalid_argument(std::string("upstream: ") + err);
    }
    conf.release();  // rd_kafka_new took it
    handle_ptr handle(rk);
    // A token refresh callback of make_conf's (the SASL queue is on): served on librdkafka's
    // background thread, so that the first connection gets its token without a poll.
    if (rd_kafka_queue_t* sasl = rd_kafka_queue_get_sasl(rk)) {
        rd_kafka_queue_destroy(sasl);
        if (rd_kafka_error_t* e = rd_kafka_sasl_background_callbacks_enable(rk)) {
            const std::string why = rd_kafka_error_string(e);
            rd_kafka_error_destroy(e);
            throw std::invalid_argument("upstream: OAUTHBEARER token refresh: " + why);
        }
    }
    return handle;
}

fetched_metadata fetch_metadata(rd_kafka_t* rk, metadata_scope scope, const std::string& topic,
                                std::chrono::milliseconds timeout) {
    fetched_metadata out;
    topic_handle_ptr rkt;
    if (scope == metadata_scope::one) {
        rkt.reset(rd_kafka_topic_new(rk, topic.c_str(), nullptr));
        if (!rkt) {
            out.err = rd_kafka_last_error();
            return out;
        }
    }
    out.err = ask_in_slices(timeout, [&](int ms) {
        const rd_kafka_metadata_t* md = nullptr;
        const auto err =
            rd_kafka_metadata(rk, scope == metadata_scope::all ? 1 : 0, rkt.get(), &md, ms);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            out.md.reset(md);
        }
        return err;
    });
    return out;
}

std::error_code to_error_code(rd_kafka_resp_err_t err) noexcept {
    using api::errc;
    auto e = [](errc c) { return api::make_error_code(c); };
    switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return {};
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        return e(errc::unknown_topic_or_partition);
    case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
        return e(errc::topic_already_exists);
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        return e(errc::invalid_topic_name);
    case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
    case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
    case RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT:
        return e(errc::invalid_partitions);
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
        return e(errc::invalid_config);
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        return e(errc::policy_violation);
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
        return e(errc::offset_out_of_range);
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        return e(errc::message_too_large);
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        return e(errc::record_list_too_large);
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR__BAD_MSG:
        return e(errc::corrupt_message);
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        return e(errc::invalid_record);
    case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
        return e(errc::storage_error);
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_FENCED_LEADER_EPOCH:
        return e(errc::not_leader);
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
        return e(errc::out_of_order_sequence);
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
        return e(errc::invalid_producer_epoch);
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        return e(errc::coordinator_loading);
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
        return e(errc::coordinator_not_available);
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
        return e(errc::not_coordinator);
    case RD_KAFKA_RESP_ERR_INVALID_GROUP_ID:
        return e(errc::invalid_group_id);
    case RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND:
        return e(errc::group_id_not_found);
    case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
        return e(errc::unknown_member_id);
    case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
        return e(errc::illegal_generation);
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
        return e(errc::rebalance_in_progress);
    case RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID:
        return e(errc::fenced_instance_id);
    case RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP:
        return e(errc::non_empty_group);
    case RD_KAFKA_RESP_ERR_GROUP_SUBSCRIBED_TO_TOPIC:
        return e(errc::group_subscribed_to_topic);
    case RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE:
        return e(errc::offset_metadata_too_large);
    case RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT:
        return e(errc::unstable_offset_commit);
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
    case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
    case RD_KAFKA_RESP_ERR_SECURITY_DISABLED:
        return e(errc::unsupported);
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
        return e(errc::request_timed_out);
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
        return e(errc::backend_unavailable);
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR_ILLEGAL_SASL_STATE:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM:
    case RD_KAFKA_RESP_ERR__SSL:
        return e(errc::backend_authentication_failed);
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED:
        return e(errc::backend_authorization_failed);
    case RD_KAFKA_RESP_ERR_INVALID_REQUEST:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
        return e(errc::invalid_request);
    default:
        return e(errc::unknown);
    }
}

api::backend_error to_backend_error(rd_kafka_resp_err_t err, const char* message) {
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        return {};
    }
    std::string text = (message && *message) ? message : rd_kafka_err2str(err);
    return api::backend_error(to_error_code(err), std::move(text));
}

}  // namespace sluice::backend::upstream
