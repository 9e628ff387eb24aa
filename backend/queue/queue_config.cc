#include "backend/queue/queue_config.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "protocol/core/json.h"

namespace sluice::backend::queue {
namespace {

using api::backend_error;
using api::errc;

backend_error invalid_value(const std::string& name, const std::string& why) {
    return {make_error_code(errc::invalid_attribute_value),
            fmt::format("Invalid value for the parameter {}. Reason: {}", name, why)};
}

backend_error unknown_name(const std::string& name) {
    return {make_error_code(errc::invalid_attribute_name),
            fmt::format("Unknown Attribute {}.", name)};
}

/// A decimal integer of digits only (SQS takes no sign, no spaces).
std::optional<std::int64_t> parse_integer(const std::string& s) {
    if (s.empty() || s.size() > 18 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

std::optional<bool> parse_bool(const std::string& s) {
    std::string lower = s;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "true") {
        return true;
    }
    if (lower == "false") {
        return false;
    }
    return std::nullopt;
}

std::string compact_json(const rapidjson::Value& v) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    v.Accept(w);
    return std::string(buf.GetString(), buf.GetSize());
}

/// RedrivePolicy: {"deadLetterTargetArn": "<arn>", "maxReceiveCount": 1-1000 (a number or a
/// string of digits)}.
api::backend_result<redrive_policy> parse_redrive(const std::string& text, const arn_scheme& arns,
                                                std::string& normalized) {
    const std::string name = "RedrivePolicy";
    rapidjson::Document doc;
    if (!protocol::parse_json(doc, text) || !doc.IsObject()) {
        return std::unexpected(invalid_value(name, "Redrive policy is not a valid JSON map."));
    }
    redrive_policy p;
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string key(it->name.GetString(), it->name.GetStringLength());
        if (key == "deadLetterTargetArn") {
            if (!it->value.IsString()) {
                return std::unexpected(invalid_value(name, "deadLetterTargetArn must be a string."));
            }
            p.dead_letter_target_arn.assign(it->value.GetString(), it->value.GetStringLength());
        } else if (key == "maxReceiveCount") {
            std::optional<std::int64_t> n;
            if (it->value.IsInt64()) {
                n = it->value.GetInt64();
            } else if (it->value.IsString()) {
                n = parse_integer(std::string(it->value.GetString(), it->value.GetStringLength()));
            }
            if (!n || *n < 1 || *n > 1000) {
                return std::unexpected(
                    invalid_value(name, "Value of maxReceiveCount must be an integer from 1 to 1000."));
            }
            p.max_receive_count = static_cast<std::int32_t>(*n);
        } else {
            return std::unexpected(
                invalid_value(name, fmt::format("Unknown redrive policy attribute {}.", key)));
        }
    }
    if (p.dead_letter_target_arn.empty() || p.max_receive_count == 0) {
        return std::unexpected(invalid_value(
            name, "Redrive policy must contain deadLetterTargetArn and maxReceiveCount."));
    }
    auto target = arns.queue_of(p.dead_letter_target_arn);
    if (!target) {
        return std::unexpected(invalid_value(
            name, fmt::format("Invalid value for deadLetterTargetArn: {}.", p.dead_letter_target_arn)));
    }
    p.dead_letter_queue = *target;
    normalized = fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":{}}})",
                             p.dead_letter_target_arn, p.max_receive_count);
    return p;
}

api::backend_result<redrive_allow_policy> parse_redrive_allow(const std::string& text,
                                                            const arn_scheme& arns,
                                                            std::string& normalized) {
    const std::string name = "RedriveAllowPolicy";
    rapidjson::Document doc;
    if (!protocol::parse_json(doc, text) || !doc.IsObject()) {
        return std::unexpected(invalid_value(name, "Redrive allow policy is not a valid JSON map."));
    }
    redrive_allow_policy p;
    bool has_permission = false;
    bool has_sources = false;
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string key(it->name.GetString(), it->name.GetStringLength());
        if (key == "redrivePermission") {
            const std::string v = it->value.IsString() ? it->value.GetString() : "";
            if (v == "allowAll") {
                p.redrive_permission = redrive_allow_policy::permission::allow_all;
            } else if (v == "denyAll") {
                p.redrive_permission = redrive_allow_policy::permission::deny_all;
            } else if (v == "byQueue") {
                p.redrive_permission = redrive_allow_policy::permission::by_queue;
            } else {
                return std::unexpected(invalid_value(
                    name, "redrivePermission must be one of allowAll, denyAll, byQueue."));
            }
            has_permission = true;
        } else if (key == "sourceQueueArns") {
            if (!it->value.IsArray()) {
                return std::unexpected(invalid_value(name, "sourceQueueArns must be a list."));
            }
            for (const auto& a : it->value.GetArray()) {
                if (!a.IsString() || !arns.queue_of(a.GetString())) {
                    return std::unexpected(
                        invalid_value(name, "sourceQueueArns must hold queue ARNs."));
                }
                p.source_queue_arns.emplace_back(a.GetString(), a.GetStringLength());
            }
            has_sources = true;
        } else {
            return std::unexpected(invalid_value(
                name, fmt::format("Unknown redrive allow policy attribute {}.", key)));
        }
    }
    if (!has_permission) {
        return std::unexpected(invalid_value(name, "redrivePermission is required."));
    }
    const bool by_queue = p.redrive_permission == redrive_allow_policy::permission::by_queue;
    if (by_queue && (p.source_queue_arns.empty() || p.source_queue_arns.size() > 10)) {
        return std::unexpected(
            invalid_value(name, "byQueue needs between 1 and 10 sourceQueueArns."));
    }
    if (!by_queue && has_sources) {
        return std::unexpected(
            invalid_value(name, "sourceQueueArns may only be given with byQueue."));
    }
    normalized = compact_json(doc);
    return p;
}

struct int_rule {
    const char* name;
    std::int64_t min;
    std::int64_t max;
    std::int64_t queue_config::*field;
};

constexpr int_rule int_rules[] = {
    {"DelaySeconds", 0, max_delay_s, &queue_config::delay_s},
    {"MaximumMessageSize", 1024, 1048576, &queue_config::maximum_message_size},
    {"MessageRetentionPeriod", 60, 1209600, &queue_config::retention_s},
    {"ReceiveMessageWaitTimeSeconds", 0, max_wait_s, &queue_config::receive_wait_s},
    {"VisibilityTimeout", 0, max_visibility_timeout_s, &queue_config::visibility_timeout_s},
    {"KmsDataKeyReusePeriodSeconds", 60, 86400, &queue_config::kms_data_key_reuse_s},
};

const std::set<std::string, std::less<>> read_only_names = {
    "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp",
    "QueueArn"};

const std::set<std::string, std::less<>> fifo_only_names = {
    "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"};

}  // namespace

std::string arn_scheme::arn(const std::string& queue) const {
    return fmt::format("arn:aws:sqs:{}:{}:{}", region, account, queue);
}

std::optional<std::string> arn_scheme::queue_of(const std::string& a) const {
    const std::string prefix = fmt::format("arn:aws:sqs:{}:{}:", region, account);
    if (a.size() <= prefix.size() || a.compare(0, prefix.size(), prefix) != 0) {
        return std::nullopt;
    }
    std::string name = a.substr(prefix.size());
    if (name.find(':') != std::string::npos || name.find('/') != std::string::npos) {
        return std::nullopt;
    }
    return name;
}

bool valid_new_queue_name(const std::string& name, bool fifo) {
    std::string_view base = name;
    if (fifo) {
        if (base.size() <= 5 || base.substr(base.size() - 5) != ".fifo") {
            return false;
        }
        base.remove_suffix(5);
    }
    if (name.empty() || name.size() > 80) {
        return false;
    }
    return std::all_of(base.begin(), base.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    });
}

bool known_attribute_name(const std::string& name) {
    static const std::set<std::string, std::less<>> names = {
        "All", "Policy", "VisibilityTimeout", "MaximumMessageSize", "MessageRetentionPeriod",
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
        "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn",
        "ApproximateNumberOfMessagesDelayed", "DelaySeconds", "ReceiveMessageWaitTimeSeconds",
        "RedrivePolicy", "FifoQueue", "ContentBasedDeduplication", "KmsMasterKeyId",
        "KmsDataKeyReusePeriodSeconds", "DeduplicationScope", "FifoThroughputLimit",
        "RedriveAllowPolicy", "SqsManagedSseEnabled"};
    return names.contains(name);
}

api::backend_result<queue_config> apply_attributes(const queue_config& base,
                                                 const api::attribute_map& attributes,
                                                 bool creating, const arn_scheme& arns,
                                                 api::attribute_map& stored) {
    queue_config c = base;
    for (const auto& [name, value] : attributes) {
        if (const auto* rule = std::find_if(std::begin(int_rules), std::end(int_rules),
                                            [&](const int_rule& r) { return name == r.name; });
            rule != std::end(int_rules)) {
            auto v = parse_integer(value);
            if (!v || *v < rule->min || *v > rule->max) {
                return std::unexpected(invalid_value(
                    name, fmt::format("must be an integer from {} to {}.", rule->min, rule->max)));
            }
            c.*(rule->field) = *v;
            stored[name] = std::to_string(*v);
        } else if (name == "FifoQueue") {
            auto v = parse_bool(value);
            if (!creating) {
                return std::unexpected(unknown_name(name));  // set at creation only
            }
            if (!v || *v != base.fifo) {
                return std::unexpected(backend_error{
                    make_error_code(errc::invalid_parameter_value),
                    base.fifo ? "FifoQueue must be true for a queue whose name ends in .fifo."
                              : "A FIFO queue's name must end with the .fifo suffix."});
            }
        } else if (fifo_only_names.contains(name)) {
            if (!base.fifo) {
                return std::unexpected(unknown_name(name));
            }
            if (name == "ContentBasedDeduplication") {
                auto v = parse_bool(value);
                if (!v) {
                    return std::unexpected(invalid_value(name, "must be true or false."));
                }
                c.content_based_deduplication = *v;
                stored[name] = *v ? "true" : "false";
            } else if (name == "DeduplicationScope") {
                if (value != "queue" && value != "messageGroup") {
                    return std::unexpected(invalid_value(name, "must be queue or messageGroup."));
                }
                c.deduplicate_per_group = value == "messageGroup";
                stored[name] = value;
            } else {
                if (value != "perQueue" && value != "perMessageGroupId") {
                    return std::unexpected(
                        invalid_value(name, "must be perQueue or perMessageGroupId."));
                }
                c.throughput_per_group = value == "perMessageGroupId";
                stored[name] = value;
            }
        } else if (name == "RedrivePolicy") {
            if (value.empty()) {
                c.redrive.reset();
                stored.erase(name);
                continue;
            }
            std::string normalized;
            auto p = parse_redrive(value, arns, normalized);
            if (!p) {
                return std::unexpected(p.error());
            }
            c.redrive = std::move(*p);
            stored[name] = std::move(normalized);
        } else if (name == "RedriveAllowPolicy") {
            if (value.empty()) {
                c.redrive_allow.reset();
                stored.erase(name);
                continue;
            }
            std::string normalized;
            auto p = parse_redrive_allow(value, arns, normalized);
            if (!p) {
                return std::unexpected(p.error());
            }
            c.redrive_allow = std::move(*p);
            stored[name] = std::move(normalized);
        } else if (name == "Policy") {
            if (value.empty()) {
                c.policy.clear();
                stored.erase(name);
                continue;
            }
            rapidjson::Document doc;
            if (!protocol::parse_json(doc, value) || !doc.IsObject()) {
                return std::unexpected(invalid_value(name, "Policy is not a valid JSON document."));
            }
            if (value.size() > 20480) {
                return std::unexpected(invalid_value(name, "Policy is longer than 20480 bytes."));
            }
            c.policy = value;
            stored[name] = value;
        } else if (name == "KmsMasterKeyId") {
            c.kms_master_key_id = value;
            if (value.empty()) {
                stored.erase(name);
            } else {
                stored[name] = value;
            }
        } else if (name == "SqsManagedSseEnabled") {
            auto v = parse_bool(value);
            if (!v) {
                return std::unexpected(invalid_value(name, "must be true or false."));
            }
            c.sqs_managed_sse = *v;
            stored[name] = *v ? "true" : "false";
        } else if (read_only_names.contains(name)) {
            return std::unexpected(backend_error{make_error_code(errc::invalid_attribute_name),
                                               fmt::format("Attribute {} is read-only.", name)});
        } else {
            return std::unexpected(unknown_name(name));
        }
    }
    if (c.throughput_per_group && !c.deduplicate_per_group) {
        return std::unexpected(invalid_value(
            "FifoThroughputLimit",
            "perMessageGroupId is allowed only with DeduplicationScope messageGroup."));
    }
    return c;
}

queue_config config_from_stored(bool fifo, const api::attribute_map& stored, const arn_scheme& arns) {
    queue_config base;
    base.fifo = fifo;
    api::attribute_map ignored;
    auto c = apply_attributes(base, stored, false, arns, ignored);
    // Stored values were checked when they were written; an unreadable one (a newer version's
    // attribute) falls back to the defaults rather than losing the queue.
    return c ? *c : base;
}

api::attribute_map render_settable(const queue_config& c) {
    api::attribute_map out;
    out["VisibilityTimeout"] = std::to_string(c.visibility_timeout_s);
    out["MaximumMessageSize"] = std::to_string(c.maximum_message_size);
    out["MessageRetentionPeriod"] = std::to_string(c.retention_s);
    out["DelaySeconds"] = std::to_string(c.delay_s);
    out["ReceiveMessageWaitTimeSeconds"] = std::to_string(c.receive_wait_s);
    out["SqsManagedSseEnabled"] = c.sqs_managed_sse ? "true" : "false";
    if (!c.policy.empty()) {
        out["Policy"] = c.policy;
    }
    if (c.redrive) {
        out["RedrivePolicy"] =
            fmt::format(R"({{"deadLetterTargetArn":"{}","maxReceiveCount":{}}})",
                        c.redrive->dead_letter_target_arn, c.redrive->max_receive_count);
    }
    if (c.redrive_allow) {
        std::string arns;
        for (const auto& a : c.redrive_allow->source_queue_arns) {
            arns += (arns.empty() ? "\"" : ",\"") + a + "\"";
        }
        switch (c.redrive_allow->redrive_permission) {
            case redrive_allow_policy::permission::allow_all:
                out["RedriveAllowPolicy"] = R"({"redrivePermission":"allowAll"})";
                break;
            case redrive_allow_policy::permission::deny_all:
                out["RedriveAllowPolicy"] = R"({"redrivePermission":"denyAll"})";
                break;
            case redrive_allow_policy::permission::by_queue:
                out["RedriveAllowPolicy"] = fmt::format(
                    R"({{"redrivePermission":"byQueue","sourceQueueArns":[{}]}})", arns);
                break;
        }
    }
    if (!c.kms_master_key_id.empty()) {
        out["KmsMasterKeyId"] = c.kms_master_key_id;
        out["KmsDataKeyReusePeriodSeconds"] = std::to_string(c.kms_data_key_reuse_s);
    }
    if (c.fifo) {
        out["FifoQueue"] = "true";
        out["ContentBasedDeduplication"] = c.content_based_deduplication ? "true" : "false";
        out["DeduplicationScope"] = c.deduplicate_per_group ? "messageGroup" : "queue";
        out["FifoThroughputLimit"] = c.throughput_per_group ? "perMessageGroupId" : "perQueue";
    }
    return out;
}

api::backend_error check_tag(const std::string& key, const std::string& value) {
    if (key.empty() || key.size() > 128) {
        return {make_error_code(errc::invalid_parameter_value),
                "Tag keys must be between 1 and 128 characters."};
    }
    if (value.size() > 256) {
        return {make_error_code(errc::invalid_parameter_value),
                "Tag values must be at most 256 characters."};
    }
    return {};
}

}  // namespace sluice::backend::queue
