#include "backend/queue/message_codec.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

#include "protocol/kafka/compression.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/sqs/text.h"

namespace sluice::backend::queue {
namespace {

constexpr std::string_view type_prefix = "sqs:type:";
constexpr std::string_view visible_at_header = "sqs:visible-at";
constexpr std::string_view dedup_header = "sqs:dedup";
constexpr std::string_view trace_header_name = "sqs:trace";
constexpr std::string_view dlq_source_header = "sqs:dlq-source";

protocol::bytes_view view_of(std::string_view s) { return protocol::as_bytes(s); }

std::string text_of(protocol::bytes_view b) { return std::string(protocol::as_chars(b)); }

}  // namespace

std::size_t stored_message::memory_bytes() const {
    std::size_t n = sizeof(*this) + body.size();
    for (const auto& a : attributes) {
        n += sizeof(a) + a.name.size() + a.data_type.size() + a.value.size();
    }
    for (const auto* o : {&group_id, &deduplication_id, &trace_header, &dead_letter_source_arn}) {
        n += o->has_value() ? (*o)->size() : 0;
    }
    return n;
}

bool valid_message_text(std::string_view text) { return protocol::sqs::allowed_text(text); }

bool valid_attribute_name(std::string_view name) {
    if (name.empty() || name.size() > 256 || name.front() == '.' || name.back() == '.') {
        return false;
    }
    char prev = 0;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '_' || c == '-' || c == '.';
        if (!ok || (c == '.' && prev == '.')) {
            return false;
        }
        prev = c;
    }
    auto starts_with_ci = [&](std::string_view p) {
        if (name.size() < p.size()) {
            return false;
        }
        for (std::size_t i = 0; i < p.size(); ++i) {
            if (std::tolower(static_cast<unsigned char>(name[i])) != p[i]) {
                return false;
            }
        }
        return true;
    };
    return !starts_with_ci("aws.") && !starts_with_ci("amazon.");
}

void add_message_record(protocol::kafka::record_batch_builder& builder, const std::string& body,
                        const std::vector<api::message_attribute>& attributes,
                        const record_fields& fields) {
    // The strings the header views point at live until add() has copied them.
    std::vector<std::string> names;
    names.reserve(attributes.size() + 1);
    std::vector<protocol::kafka::header_view> headers;
    headers.reserve(attributes.size() * 2 + 4);
    for (const auto& a : attributes) {
        headers.push_back({a.name, view_of(a.value)});
    }
    for (const auto& a : attributes) {
        if (a.data_type != "String") {
            names.push_back(std::string(type_prefix) + a.name);
            headers.push_back({names.back(), view_of(a.data_type)});
        }
    }
    std::string visible_at;
    if (fields.visible_from_ms > 0) {
        visible_at = std::to_string(fields.visible_from_ms);
        headers.push_back({visible_at_header, view_of(visible_at)});
    }
    auto add_optional = [&](std::string_view name, const std::optional<std::string>* v) {
        if (v != nullptr && v->has_value()) {
            headers.push_back({name, view_of(**v)});
        }
    };
    add_optional(dedup_header, fields.deduplication_id);
    add_optional(trace_header_name, fields.trace_header);
    add_optional(dlq_source_header, fields.dead_letter_source_arn);
    std::optional<protocol::bytes_view> key;
    if (fields.group_id != nullptr && fields.group_id->has_value()) {
        key = view_of(**fields.group_id);
    }
    builder.add(protocol::kafka::new_record{key, view_of(body), headers, fields.timestamp_ms});
}

stored_message decode_message(const protocol::kafka::record_view& record) {
    stored_message m;
    m.sent_ms = record.timestamp;
    if (record.value) {
        m.body = text_of(*record.value);
    }
    if (record.key) {
        m.group_id = text_of(*record.key);
    }
    std::vector<std::pair<std::string_view, std::string_view>> types;
    for (const auto& h : record.headers) {
        if (h.key.starts_with(type_prefix) && h.value) {
            types.emplace_back(h.key.substr(type_prefix.size()), protocol::as_chars(*h.value));
        }
    }
    for (const auto& h : record.headers) {
        if (!h.value) {
            continue;
        }
        const std::string_view value = protocol::as_chars(*h.value);
        if (h.key == visible_at_header) {
            std::int64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec == std::errc() && p == value.data() + value.size()) {
                m.visible_from_ms = v;
            }
        } else if (h.key == dedup_header) {
            m.deduplication_id = std::string(value);
        } else if (h.key == trace_header_name) {
            m.trace_header = std::string(value);
        } else if (h.key == dlq_source_header) {
            m.dead_letter_source_arn = std::string(value);
        } else if (h.key.find(':') == std::string_view::npos && valid_attribute_name(h.key)) {
            api::message_attribute a;
            a.name = std::string(h.key);
            for (const auto& [name, type] : types) {
                if (name == h.key) {
                    a.data_type = std::string(type);
                }
            }
            if (a.data_type.empty()) {
                // A header written by a Kafka producer: text when SQS can carry it as text.
                a.data_type = valid_message_text(value) && !value.empty() ? "String" : "Binary";
            }
            a.value = std::string(value);
            m.attributes.push_back(std::move(a));
        }
    }
    return m;
}

std::int64_t decode_fetched(protocol::bytes_view bytes,
                            const std::vector<api::aborted_transaction>& aborted,
                            const std::function<void(std::int64_t offset, stored_message m)>& fn,
                            std::size_t* bad) {
    namespace kafka = protocol::kafka;
    // compat: the Java consumer's handling of read_committed fetches: a producer's
    // transactional batches are skipped from the first offset of its aborted transaction up to
    // its abort marker.
    std::vector<api::aborted_transaction> pending = aborted;
    std::sort(pending.begin(), pending.end(),
              [](const auto& a, const auto& b) { return a.first_offset < b.first_offset; });
    std::size_t next_aborted = 0;
    std::set<std::int64_t> aborting;
    std::int64_t end = -1;
    kafka::batch_cursor cursor(bytes);
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        auto h = kafka::read_batch_header(b);
        if (!h) {
            if (bad != nullptr) {
                ++*bad;
            }
            break;
        }
        end = h->last_offset() + 1;
        while (next_aborted < pending.size() &&
               pending[next_aborted].first_offset.value <= h->last_offset()) {
            aborting.insert(pending[next_aborted].producer.value);
            ++next_aborted;
        }
        if (h->is_control()) {
            if (h->is_transactional()) {
                aborting.erase(h->producer_id);  // its marker ends the aborted transaction
            }
            continue;
        }
        if (h->is_transactional() && aborting.contains(h->producer_id)) {
            continue;
        }
        auto it = kafka::record_iterator::open(b, kafka::default_max_decompressed_bytes);
        if (!it) {
            if (bad != nullptr) {
                ++*bad;
            }
            continue;
        }
        kafka::record_view r;
        while (it->next(r)) {
            fn(r.offset, decode_message(r));
        }
        if (it->error() && bad != nullptr) {
            ++*bad;
        }
    }
    return end;
}

}  // namespace sluice::backend::queue
