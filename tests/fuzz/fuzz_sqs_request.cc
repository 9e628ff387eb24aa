// Fuzzes the reading of SQS requests in both wire protocols (protocol/sqs/request.h), what
// every SQS action does with the body a client sent: AWS JSON 1.0 (parsed as the front parses
// it) and the Query protocol's flattened fields. Every accessor the actions use is called with
// the member and element names of SendMessageBatch, ReceiveMessage, DeleteMessageBatch,
// SetQueueAttributes and TagQueue; any input must read cleanly (values or a param_error).
//
// The first byte picks the wire: even, JSON; odd, Query fields as `name=value` pairs joined
// by '&' (not percent-decoded: the front decodes before this point).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/sqs/request.h"

using namespace sluice::protocol;
using namespace sluice::protocol::sqs;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

void read_attributes(const request_view& v, std::string_view member, std::string_view entry) {
    for (const auto& [name, value] : v.attribute_map(member, entry)) {
        (void)name;
        (void)value;
    }
}

void read_entry(const request_view& e) {
    (void)e.string("Id");
    (void)e.string("MessageBody");
    (void)e.string("ReceiptHandle");
    (void)e.integer("DelaySeconds");
    (void)e.integer("VisibilityTimeout");
    (void)e.string("MessageGroupId");
    (void)e.string("MessageDeduplicationId");
    read_attributes(e, "MessageAttributes", "MessageAttribute");
    read_attributes(e, "MessageSystemAttributes", "MessageSystemAttribute");
}

void read_request(const request_view& v) {
    (void)v.string("QueueUrl");
    (void)v.string("QueueName");
    (void)v.string("MessageBody");
    (void)v.integer("MaxNumberOfMessages");
    (void)v.integer("WaitTimeSeconds");
    (void)v.integer("VisibilityTimeout");
    (void)v.has("Attributes");
    (void)v.string_list("AttributeNames", "AttributeName");
    (void)v.string_list("MessageAttributeNames", "MessageAttributeName");
    (void)v.string_list("TagKeys", "TagKey");
    (void)v.string_map("Attributes", "Attribute", "Name", "Value");
    (void)v.string_map("tags", "Tag", "Key", "Value");
    read_attributes(v, "MessageAttributes", "MessageAttribute");
    for (const auto& e : v.entries("Entries", "SendMessageBatchRequestEntry")) {
        read_entry(e);
    }
    for (const auto& e : v.entries("Entries", "DeleteMessageBatchRequestEntry")) {
        read_entry(e);
    }
    // The sticky error, once read, stays (the first one wins).
    if (v.error()) {
        const auto first = *v.error();
        v.fail("InvalidParameterValue", "again");
        check(v.error()->code == first.code && v.error()->message == first.message);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 256 * 1024) {
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] % 2 == 0) {
        rapidjson::Document doc;
        if (!parse_json(doc, text) || !doc.IsObject()) {
            return 0;
        }
        read_request(request_view::of_json(doc));
        return 0;
    }
    form_fields fields;
    std::size_t at = 0;
    while (at <= text.size()) {
        const auto amp = text.find('&', at);
        const auto pair = text.substr(at, amp == std::string_view::npos ? std::string_view::npos
                                                                         : amp - at);
        const auto eq = pair.find('=');
        fields.emplace(std::string(pair.substr(0, eq)),
                       eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
        if (amp == std::string_view::npos) {
            break;
        }
        at = amp + 1;
    }
    read_request(request_view::of_query(fields));
    return 0;
}
