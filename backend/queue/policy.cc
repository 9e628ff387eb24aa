#include "backend/queue/policy.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "backend/queue/queue_config.h"
#include "backend/queue/queue_errors.h"
#include "protocol/core/json.h"

namespace sluice::backend::queue {
namespace {

using api::backend_error;
using api::errc;

/// The actions AddPermission may grant (the batch forms are covered by their single forms).
const std::set<std::string, std::less<>> grantable = {
    "*",           "SendMessage", "ReceiveMessage",    "DeleteMessage",
    "ChangeMessageVisibility",    "GetQueueAttributes", "GetQueueUrl",
    "ListDeadLetterSourceQueues", "PurgeQueue"};

bool valid_label(const std::string& label) {
    return !label.empty() && label.size() <= 80 &&
           std::all_of(label.begin(), label.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '-' || c == '_';
           });
}

std::string to_text(const rapidjson::Document& doc) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    doc.Accept(w);
    return std::string(buf.GetString(), buf.GetSize());
}

bool has_sid(const rapidjson::Value& statement, const std::string& label) {
    if (!statement.IsObject()) {
        return false;
    }
    auto it = statement.FindMember("Sid");
    return it != statement.MemberEnd() && it->value.IsString() && label == it->value.GetString();
}

/// The Statement array of `doc`, made an array when missing.
rapidjson::Value& statements(rapidjson::Document& doc) {
    auto it = doc.FindMember("Statement");
    if (it == doc.MemberEnd()) {
        doc.AddMember("Statement", rapidjson::Value(rapidjson::kArrayType), doc.GetAllocator());
        it = doc.FindMember("Statement");
    } else if (!it->value.IsArray()) {
        // A single statement object is legal IAM; normalise it to a list.
        rapidjson::Value one(std::move(it->value), doc.GetAllocator());
        it->value.SetArray();
        it->value.PushBack(std::move(one), doc.GetAllocator());
    }
    return it->value;
}

}  // namespace

api::backend_result<std::string> add_permission_statement(const std::string& policy,
                                                        const std::string& queue_arn,
                                                        const std::string& label,
                                                        const std::vector<std::string>& accounts,
                                                        const std::vector<std::string>& actions) {
    if (!valid_label(label)) {
        return std::unexpected(invalid(fmt::format(
            "Value {} for parameter Label is invalid. Reason: Must be 1 to 80 alphanumeric "
            "characters, hyphens or underscores.",
            label)));
    }
    if (accounts.empty()) {
        return std::unexpected(invalid("The request must contain the parameter AWSAccountIds."));
    }
    if (actions.empty()) {
        return std::unexpected(invalid("The request must contain the parameter Actions."));
    }
    for (const auto& a : actions) {
        if (!grantable.contains(a)) {
            return std::unexpected(invalid(fmt::format(
                "Value SQS:{} for parameter ActionName is invalid. Reason: Only the queue owner "
                "is allowed to invoke this action.",
                a)));
        }
    }
    rapidjson::Document doc;
    if (policy.empty() || !protocol::parse_json(doc, policy) || !doc.IsObject()) {
        doc.SetObject();
        auto& alloc = doc.GetAllocator();
        doc.AddMember("Version", "2012-10-17", alloc);
        doc.AddMember("Id", rapidjson::Value(queue_arn + "/SQSDefaultPolicy", alloc), alloc);
    }
    auto& alloc = doc.GetAllocator();
    auto& list = statements(doc);
    for (const auto& s : list.GetArray()) {
        if (has_sid(s, label)) {
            return std::unexpected(invalid(fmt::format(
                "Value {} for parameter Label is invalid. Reason: Already exists.", label)));
        }
    }
    if (list.Size() >= max_permission_statements) {
        return std::unexpected(backend_error{make_error_code(errc::over_limit),
                                           fmt::format("A queue's policy holds at most {} statements.",
                                                       max_permission_statements)});
    }
    rapidjson::Value principals(rapidjson::kArrayType);
    for (const auto& a : accounts) {
        principals.PushBack(rapidjson::Value(fmt::format("arn:aws:iam::{}:root", a), alloc), alloc);
    }
    rapidjson::Value principal(rapidjson::kObjectType);
    principal.AddMember("AWS", std::move(principals), alloc);
    rapidjson::Value granted(rapidjson::kArrayType);
    for (const auto& a : actions) {
        granted.PushBack(rapidjson::Value("SQS:" + a, alloc), alloc);
    }
    rapidjson::Value statement(rapidjson::kObjectType);
    statement.AddMember("Sid", rapidjson::Value(label, alloc), alloc);
    statement.AddMember("Effect", "Allow", alloc);
    statement.AddMember("Principal", std::move(principal), alloc);
    statement.AddMember("Action", std::move(granted), alloc);
    statement.AddMember("Resource", rapidjson::Value(queue_arn, alloc), alloc);
    list.PushBack(std::move(statement), alloc);
    return to_text(doc);
}

api::backend_result<std::string> remove_permission_statement(const std::string& policy,
                                                           const std::string& label) {
    rapidjson::Document doc;
    const auto not_found = invalid(fmt::format(
        "Value {} for parameter Label is invalid. Reason: can't find label on existing policy.",
        label));
    if (policy.empty() || !protocol::parse_json(doc, policy) || !doc.IsObject()) {
        return std::unexpected(not_found);
    }
    auto& list = statements(doc);
    for (auto it = list.Begin(); it != list.End(); ++it) {
        if (has_sid(*it, label)) {
            list.Erase(it);
            if (list.Empty()) {
                return std::string();
            }
            return to_text(doc);
        }
    }
    return std::unexpected(not_found);
}

}  // namespace sluice::backend::queue
