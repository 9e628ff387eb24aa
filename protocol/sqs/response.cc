#include "protocol/sqs/response.h"

#include <fmt/format.h>

#include "protocol/core/base64.h"

namespace sluice::protocol::sqs {

namespace {
constexpr std::string_view xml_namespace = "http://queue.amazonaws.com/doc/2012-11-05/";
}

void append_xml_escaped(std::string& out, std::string_view text) {
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            case '\r': out += "&#xD;"; break;
            default: out.push_back(c);
        }
    }
}

struct response_writer::impl {
    wire w;
    std::string action;
    bool has_result;
    // JSON
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> json{buf};
    // XML
    std::string xml;
    std::vector<std::string> open_items;  // query item names of the lists being written

    void key(std::string_view member) {
        json.Key(member.data(), static_cast<rapidjson::SizeType>(member.size()));
    }
    void jstring(std::string_view v) {
        json.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
    }
    void element(std::string_view name, std::string_view text) {
        xml += '<';
        xml += name;
        xml += '>';
        append_xml_escaped(xml, text);
        xml += "</";
        xml += name;
        xml += '>';
    }
};

response_writer::response_writer(wire w, std::string_view action, bool has_result)
    : p_(std::make_unique<impl>()) {
    p_->w = w;
    p_->action = std::string(action);
    p_->has_result = has_result;
    if (w == wire::json) {
        p_->json.StartObject();
    } else {
        p_->xml = fmt::format("<?xml version=\"1.0\"?><{}Response xmlns=\"{}\">", action, xml_namespace);
        if (has_result) {
            p_->xml += fmt::format("<{}Result>", action);
        }
    }
}

response_writer::~response_writer() = default;

void response_writer::reserve(std::size_t bytes) {
    if (p_->w == wire::json) {
        p_->buf.Reserve(bytes);
    } else {
        p_->xml.reserve(p_->xml.size() + bytes);
    }
}

const char* response_writer::content_type(wire w) {
    return w == wire::json ? "application/x-amz-json-1.0" : "text/xml";
}

void response_writer::string(std::string_view member, std::string_view value) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->jstring(value);
    } else {
        p_->element(member, value);
    }
}

void response_writer::integer(std::string_view member, std::int64_t value) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->json.Int64(value);
    } else {
        p_->element(member, std::to_string(value));
    }
}

void response_writer::boolean(std::string_view member, bool value) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->json.Bool(value);
    } else {
        p_->element(member, value ? "true" : "false");
    }
}

void response_writer::begin_list(std::string_view member, std::string_view query_item) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->json.StartArray();
    }
    p_->open_items.emplace_back(query_item);
}

void response_writer::list_string(std::string_view value) {
    if (p_->w == wire::json) {
        p_->jstring(value);
    } else {
        p_->element(p_->open_items.back(), value);
    }
}

void response_writer::begin_list_object() {
    if (p_->w == wire::json) {
        p_->json.StartObject();
    } else {
        p_->xml += '<' + p_->open_items.back() + '>';
    }
}

void response_writer::end_list_object() {
    if (p_->w == wire::json) {
        p_->json.EndObject();
    } else {
        p_->xml += "</" + p_->open_items.back() + '>';
    }
}

void response_writer::end_list() {
    if (p_->w == wire::json) {
        p_->json.EndArray();
    }
    p_->open_items.pop_back();
}

void response_writer::string_map(std::string_view member, std::string_view query_entry,
                                 std::string_view key, std::string_view value,
                                 const std::vector<std::pair<std::string, std::string>>& entries) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->json.StartObject();
        for (const auto& [k, v] : entries) {
            p_->key(k);
            p_->jstring(v);
        }
        p_->json.EndObject();
        return;
    }
    for (const auto& [k, v] : entries) {
        p_->xml += '<';
        p_->xml += query_entry;
        p_->xml += '>';
        p_->element(key, k);
        p_->element(value, v);
        p_->xml += "</";
        p_->xml += query_entry;
        p_->xml += '>';
    }
}

void response_writer::attribute_map(std::string_view member, std::string_view query_entry,
                                    const std::vector<attribute_out>& attributes) {
    if (p_->w == wire::json) {
        p_->key(member);
        p_->json.StartObject();
        for (const auto& a : attributes) {
            p_->key(a.name);
            p_->json.StartObject();
            if (a.binary) {
                p_->key("BinaryValue");
                p_->jstring(base64_encode(a.value));
            } else {
                p_->key("StringValue");
                p_->jstring(a.value);
            }
            p_->key("DataType");
            p_->jstring(a.data_type);
            p_->json.EndObject();
        }
        p_->json.EndObject();
        return;
    }
    for (const auto& a : attributes) {
        p_->xml += '<';
        p_->xml += query_entry;
        p_->xml += '>';
        p_->element("Name", a.name);
        p_->xml += "<Value>";
        if (a.binary) {
            p_->element("BinaryValue", base64_encode(a.value));
        } else {
            p_->element("StringValue", a.value);
        }
        p_->element("DataType", a.data_type);
        p_->xml += "</Value></";
        p_->xml += query_entry;
        p_->xml += '>';
    }
}

std::string response_writer::finish(std::string_view request_id) {
    if (p_->w == wire::json) {
        p_->json.EndObject();
        return std::string(p_->buf.GetString(), p_->buf.GetSize());
    }
    if (p_->has_result) {
        p_->xml += fmt::format("</{}Result>", p_->action);
    }
    p_->xml += "<ResponseMetadata>";
    p_->element("RequestId", request_id);
    p_->xml += fmt::format("</ResponseMetadata></{}Response>", p_->action);
    return std::move(p_->xml);
}

std::string error_body(wire w, std::string_view json_type, std::string_view query_code,
                       bool sender_fault, std::string_view message, std::string_view request_id) {
    if (w == wire::json) {
        rapidjson::StringBuffer buf;
        rapidjson::Writer<rapidjson::StringBuffer> j(buf);
        j.StartObject();
        j.Key("__type");
        const std::string type = json_type.find('#') == std::string_view::npos
                                     ? "com.amazonaws.sqs#" + std::string(json_type)
                                     : std::string(json_type);
        j.String(type.data(), static_cast<rapidjson::SizeType>(type.size()));
        j.Key("message");
        j.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
        j.EndObject();
        return std::string(buf.GetString(), buf.GetSize());
    }
    std::string xml = fmt::format("<?xml version=\"1.0\"?><ErrorResponse xmlns=\"{}\"><Error><Type>{}</Type>",
                                  xml_namespace, sender_fault ? "Sender" : "Receiver");
    xml += "<Code>";
    append_xml_escaped(xml, query_code);
    xml += "</Code><Message>";
    append_xml_escaped(xml, message);
    xml += "</Message><Detail/></Error><RequestId>";
    append_xml_escaped(xml, request_id);
    xml += "</RequestId></ErrorResponse>";
    return xml;
}

}  // namespace sluice::protocol::sqs
