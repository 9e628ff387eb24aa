// Reading SQS requests of both wire protocols through one interface (owned by protocol/sqs):
// AWS JSON 1.0 (a JSON object per request, members by their model names) and the Query
// protocol (form fields, lists and maps flattened as `Name.N` and `Name.N.Key`/`Name.N.Value`,
// with the element names of the API model: `AttributeName.1`, `Attribute.1.Name`,
// `MessageAttribute.1.Value.StringValue`, `SendMessageBatchRequestEntry.1.Id`, ...). An action
// reads its parameters with the JSON member name and, for containers, the Query element name.
//
// Bad input is a value, never an exception: a parameter of the wrong type or format records a
// param_error (the first one wins) and reads as absent; the action checks error() once it has
// read everything, as protocol::reader's sticky error works.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/core/json.h"

namespace sluice::protocol::sqs {

enum class wire : std::uint8_t { json, query };

/// Form fields by name (the Query protocol), already percent-decoded.
using form_fields = std::map<std::string, std::string, std::less<>>;

/// A message attribute value as a client sent it.
struct attribute_value {
    std::string data_type;
    std::optional<std::string> string_value;
    std::optional<std::string> binary_value;  // base64-decoded
    bool has_list_values = false;             // StringListValues / BinaryListValues (reserved)
};

/// Why a parameter could not be read: an SQS error code (InvalidParameterValue,
/// MissingParameter) and a message naming the parameter.
struct param_error {
    std::string code;
    std::string message;
};

/// One structure of a request: the request itself, or one batch entry. Cheap to copy; views
/// into the request, which must outlive it. Not thread-safe.
class request_view {
public:
    static request_view of_json(const rapidjson::Value& object);
    static request_view of_query(const form_fields& fields);

    /// A string member; nullopt when absent (or null).
    std::optional<std::string> string(std::string_view member) const;
    /// An integer member (JSON: a number or a string of digits; Query: digits).
    std::optional<std::int64_t> integer(std::string_view member) const;
    /// A list of strings; Query: `<query_item>.N`.
    std::vector<std::string> string_list(std::string_view member, std::string_view query_item) const;
    /// A map of strings; Query: `<query_entry>.N.<key>` and `<query_entry>.N.<value>`.
    std::vector<std::pair<std::string, std::string>> string_map(std::string_view member,
                                                                std::string_view query_entry,
                                                                std::string_view key,
                                                                std::string_view value) const;
    /// Message attributes; Query: `<query_entry>.N.Name`, `<query_entry>.N.Value.DataType`,
    /// `.Value.StringValue`, `.Value.BinaryValue` (base64).
    std::vector<std::pair<std::string, attribute_value>> attribute_map(std::string_view member,
                                                                       std::string_view query_entry) const;
    /// A list of structures (batch entries); Query: `<query_entry>.N.<member>`.
    std::vector<request_view> entries(std::string_view member, std::string_view query_entry) const;
    /// True when the member is present (any type).
    bool has(std::string_view member) const;

    void fail(std::string code, std::string message) const;
    const std::optional<param_error>& error() const { return *error_; }

private:
    request_view() = default;
    std::optional<std::string> query_value(const std::string& name) const;
    /// Some field's name starts with `name` (followed by '.' or nothing).
    bool has_prefix_field(const std::string& name) const;
    /// The indexes N of `<name>.N...` fields, sorted, and the prefix each starts with.
    std::vector<std::pair<std::uint64_t, std::string>> query_indexes(std::string_view name) const;
    const rapidjson::Value* member_value(std::string_view member) const;

    wire wire_ = wire::json;
    const rapidjson::Value* json_ = nullptr;
    const form_fields* fields_ = nullptr;
    std::string prefix_;
    std::shared_ptr<std::optional<param_error>> error_ =
        std::make_shared<std::optional<param_error>>();
};

}  // namespace sluice::protocol::sqs
