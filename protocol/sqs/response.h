// Writing SQS responses of both wire protocols through one interface (owned by protocol/sqs):
// AWS JSON 1.0 (one JSON object, members by their model names) and the Query protocol's XML
// (`<ActionResponse><ActionResult>...</ActionResult><ResponseMetadata>`, lists and maps
// flattened with the model's element names: `<Message>`, `<Attribute><Name>..</Name><Value>`,
// `<MessageAttribute>...<Value><StringValue>`, `<QueueUrl>`), and the error bodies of both.
//
// Text is written as given: callers pass valid UTF-8 made of characters XML allows
// (text_sanitizer.h makes any bytes so). Not thread-safe; one writer per response.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/sqs/request.h"

namespace sluice::protocol::sqs {

/// A message attribute to write (the value raw: text, or bytes for Binary types).
struct attribute_out {
    std::string_view name;
    std::string_view data_type;
    std::string_view value;
    bool binary = false;
};

class response_writer {
public:
    /// `action`'s response; `has_result` when the action has an output shape (the Query
    /// protocol then wraps members in `<ActionResult>`).
    response_writer(wire w, std::string_view action, bool has_result);
    ~response_writer();
    response_writer(const response_writer&) = delete;
    response_writer& operator=(const response_writer&) = delete;

    void string(std::string_view member, std::string_view value);
    void integer(std::string_view member, std::int64_t value);
    void boolean(std::string_view member, bool value);

    /// A list; Query: each item is an element named `query_item`, with no wrapper.
    void begin_list(std::string_view member, std::string_view query_item);
    void list_string(std::string_view value);
    void begin_list_object();
    void end_list_object();
    void end_list();

    /// A map of strings; Query: `<query_entry><key>k</key><value>v</value></query_entry>` each.
    void string_map(std::string_view member, std::string_view query_entry, std::string_view key,
                    std::string_view value,
                    const std::vector<std::pair<std::string, std::string>>& entries);
    /// Message attributes; Query: `<query_entry><Name>..</Name><Value>...</Value></query_entry>`.
    void attribute_map(std::string_view member, std::string_view query_entry,
                       const std::vector<attribute_out>& attributes);

    /// Room for about `bytes` more of the body, so that a large answer (ReceiveMessage) does
    /// not regrow its buffer member by member.
    void reserve(std::size_t bytes);

    /// The whole body.
    std::string finish(std::string_view request_id);

    static const char* content_type(wire w);

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

/// An error body: JSON {"__type": "<json_namespace>#<json_type>", "message": ...}; Query
/// <ErrorResponse><Error><Type>Sender|Receiver</Type><Code>..</Code><Message>..</Message>
/// <Detail/></Error><RequestId>..</RequestId></ErrorResponse>.
std::string error_body(wire w, std::string_view json_type, std::string_view query_code,
                       bool sender_fault, std::string_view message, std::string_view request_id);

/// XML text escaping (&, <, >, ", ' and \r, which XML readers would fold).
void append_xml_escaped(std::string& out, std::string_view text);

}  // namespace sluice::protocol::sqs
