#include "backend/queue/queue_append.h"

#include <map>

#include "protocol/core/errc.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::queue {
namespace kafka = protocol::kafka;

std::uint32_t kafka_murmur2(std::string_view key) {
    // compat: org.apache.kafka.common.utils.Utils.murmur2 and toPositive.
    constexpr std::uint32_t seed = 0x9747b28c;
    constexpr std::uint32_t m = 0x5bd1e995;
    constexpr int r = 24;
    const auto* data = reinterpret_cast<const std::uint8_t*>(key.data());
    const auto length = static_cast<std::uint32_t>(key.size());
    std::uint32_t h = seed ^ length;
    const std::uint32_t blocks = length / 4;
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::uint32_t j = i * 4;
        std::uint32_t k = static_cast<std::uint32_t>(data[j]) |
                          static_cast<std::uint32_t>(data[j + 1]) << 8 |
                          static_cast<std::uint32_t>(data[j + 2]) << 16 |
                          static_cast<std::uint32_t>(data[j + 3]) << 24;
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const std::uint32_t tail = blocks * 4;
    switch (length % 4) {
        case 3:
            h ^= static_cast<std::uint32_t>(data[tail + 2]) << 16;
            [[fallthrough]];
        case 2:
            h ^= static_cast<std::uint32_t>(data[tail + 1]) << 8;
            [[fallthrough]];
        case 1:
            h ^= static_cast<std::uint32_t>(data[tail]);
            h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h & 0x7fffffff;
}

std::int32_t partition_for(const std::optional<std::string>& group_id, std::int32_t partitions,
                           std::uint32_t& round_robin) {
    if (partitions <= 1) {
        return 0;
    }
    if (group_id) {
        return static_cast<std::int32_t>(kafka_murmur2(*group_id) %
                                         static_cast<std::uint32_t>(partitions));
    }
    return static_cast<std::int32_t>(round_robin++ % static_cast<std::uint32_t>(partitions));
}

namespace {

/// One message as the record a producer sends: the record add_message_record builds, read
/// back, so that both paths write the same bytes.
std::optional<api::outgoing_record> to_outgoing_record(const append_item& it) {
    kafka::record_batch_builder b;
    add_message_record(b, *it.body, *it.attributes, it.fields);
    auto batch = b.finish();
    if (!batch) {
        return std::nullopt;
    }
    auto decoded = kafka::decode_batch(batch->view(), batch->size() + it.body->size() + 1024);
    if (!decoded || decoded->records.size() != 1) {
        return std::nullopt;
    }
    const auto& r = decoded->records.front();
    auto text = [](protocol::bytes_view v) {
        return std::string(reinterpret_cast<const char*>(v.data()), v.size());
    };
    api::outgoing_record out;
    if (r.key) {
        out.key = text(*r.key);
    }
    if (r.value) {
        out.value = text(*r.value);
    }
    for (const auto& h : r.headers) {
        out.headers.emplace_back(std::string(h.key),
                                 h.value ? std::optional<std::string>(text(*h.value))
                                         : std::nullopt);
    }
    out.partition = it.partition;
    out.timestamp = r.timestamp;
    return out;
}

}  // namespace

api::awaitable<std::vector<result<std::int64_t>>> send_messages_through(
    api::producer& producer, std::string topic, const std::vector<append_item>& items) {
    std::vector<result<std::int64_t>> out(items.size(), fail(protocol::errc::invalid_value));
    std::vector<api::outgoing_record> records;
    records.reserve(items.size());
    for (const auto& it : items) {
        auto r = to_outgoing_record(it);
        if (!r) {
            co_return out;  // a record too large for the format: every answer is an error
        }
        records.push_back(std::move(*r));
    }
    auto sent = co_await producer.send(topic_name(std::move(topic)), std::move(records),
                                       api::send_options{});
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (!sent) {
            out[i] = fail(sent.error().code);
        } else if (i < sent->size() && !(*sent)[i].error) {
            out[i] = (*sent)[i].offset;
        } else if (i < sent->size()) {
            out[i] = fail((*sent)[i].error.code);
        }
    }
    co_return out;
}

api::awaitable<std::vector<result<std::int64_t>>> append_messages(
    api::records& records, api::producer* producer, std::string topic,
    const std::vector<append_item>& items, std::size_t max_batch_bytes) {
    if (producer != nullptr) {
        co_return co_await send_messages_through(*producer, std::move(topic), items);
    }
    std::vector<result<std::int64_t>> out(items.size(), fail(protocol::errc::invalid_value));
    // Per partition: its batches (concatenated) and which item each record is.
    struct partition_batches {
        protocol::byte_buffer bytes;
        std::vector<std::size_t> items;
    };
    std::map<std::int32_t, partition_batches> parts;
    std::map<std::int32_t, kafka::record_batch_builder> builders;
    auto seal = [&](std::int32_t p) {
        auto& b = builders[p];
        if (b.record_count() == 0) {
            return true;
        }
        auto batch = b.finish();
        if (!batch) {
            return false;
        }
        parts[p].bytes.append(batch->view());
        return true;
    };
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& it = items[i];
        auto& b = builders[it.partition];
        if (b.record_count() > 0 && b.uncompressed_size() + it.body->size() > max_batch_bytes) {
            seal(it.partition);
        }
        add_message_record(b, *it.body, *it.attributes, it.fields);
        parts[it.partition].items.push_back(i);
    }
    for (auto& [p, b] : builders) {
        if (!seal(p)) {
            co_return out;  // a record too large for the format: every answer is an error
        }
    }
    api::produce_request req;
    req.acks = api::acks::all;
    api::produce_topic pt;
    pt.topic = topic_name(topic);
    for (auto& [p, pb] : parts) {
        pt.partitions.push_back({partition_id(p), pb.bytes.mutable_view()});
    }
    req.topics.push_back(std::move(pt));
    auto resp = co_await records.produce(std::move(req));
    for (const auto& t : resp.topics) {
        for (const auto& pp : t.partitions) {
            const auto& pb = parts[pp.partition.value];
            for (std::size_t k = 0; k < pb.items.size(); ++k) {
                if (pp.error) {
                    out[pb.items[k]] = fail(pp.error.code);
                } else {
                    out[pb.items[k]] = pp.base_offset.value + static_cast<std::int64_t>(k);
                }
            }
        }
    }
    co_return out;
}

}  // namespace sluice::backend::queue
