#include "gateway/http/record_producer.h"

#include <map>

#include <fmt/format.h>

#include "protocol/kafka/record_batch_builder.h"

namespace sluice::gateway {
namespace api = backend::api;
namespace kafka = protocol::kafka;

namespace {

/// compat: org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c), which the Java
/// producer's default partitioner applies to the serialized key.
std::uint32_t murmur2(std::string_view data) {
    constexpr std::uint32_t seed = 0x9747b28c;
    constexpr std::uint32_t m = 0x5bd1e995;
    constexpr int r = 24;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t length = data.size();
    std::uint32_t h = seed ^ static_cast<std::uint32_t>(length);
    const std::size_t blocks = length / 4;
    for (std::size_t i = 0; i < blocks; ++i) {
        const std::size_t j = i * 4;
        std::uint32_t k = static_cast<std::uint32_t>(p[j]) |
                          (static_cast<std::uint32_t>(p[j + 1]) << 8) |
                          (static_cast<std::uint32_t>(p[j + 2]) << 16) |
                          (static_cast<std::uint32_t>(p[j + 3]) << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const std::size_t tail = length & ~static_cast<std::size_t>(3);
    switch (length % 4) {
        case 3: h ^= static_cast<std::uint32_t>(p[tail + 2]) << 16; [[fallthrough]];
        case 2: h ^= static_cast<std::uint32_t>(p[tail + 1]) << 8; [[fallthrough]];
        case 1:
            h ^= static_cast<std::uint32_t>(p[tail]);
            h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

protocol::bytes_view bytes_of(const std::string& s) { return protocol::as_bytes(s); }

}  // namespace

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int32_t partition_for_key(std::string_view key, std::int32_t partitions) {
    return static_cast<std::int32_t>((murmur2(key) & 0x7fffffffu) %
                                     static_cast<std::uint32_t>(partitions));
}

boost::asio::awaitable<std::optional<api::topic_description>> record_producer::find_or_create(
    const topic_name& topic, const producer_identity* who, produce_outcome& out) {
    auto described = co_await topics_.describe(topic);
    if (described) {
        co_return described;
    }
    if (!creation_.enabled || who == nullptr) {
        out.refusal = produce_refusal::unknown_topic;
        co_return std::nullopt;
    }
    // Kafka's rule: CREATE on the cluster, else CREATE on the topic.
    const auto& chain = who->chain;
    if (chain.authorizing() &&
        !chain.visible(who->who, auth::acl_operation::create, auth::resource_type::cluster,
                       auth::cluster_resource_name) &&
        !chain.visible(who->who, auth::acl_operation::create, auth::resource_type::topic,
                       topic.value)) {
        out.refusal = produce_refusal::create_denied;
        out.denied = acl_check{auth::acl_operation::create, auth::resource_type::topic, topic.value};
        co_return std::nullopt;
    }
    auto created = co_await auto_create_topic(
        topics_, topic, creation_.partitions,
        fmt::format("{} {} from {}", audit_front_name(who->who.front), who->who.principal,
                    authorizer_host(who->who.peer)));
    if (!created) {
        out.refusal = produce_refusal::create_failed;
        out.create_error = created.error().code;
        co_return std::nullopt;
    }
    co_return std::move(*created);
}

boost::asio::awaitable<produce_outcome> record_producer::ensure_topic(
    topic_name topic, const producer_identity* who) {
    produce_outcome out;
    (void)co_await find_or_create(topic, who, out);
    co_return out;
}

boost::asio::awaitable<produce_outcome> record_producer::produce(
    topic_name topic, std::vector<outgoing_record> records, const producer_identity* who) {
    produce_outcome out;
    auto described = co_await find_or_create(topic, who, out);
    if (!described) {
        co_return out;
    }
    if (described->partitions < 1) {
        out.refusal = produce_refusal::unknown_topic;
        co_return out;
    }
    const std::int32_t partitions = described->partitions;

    // Each record's partition, and its index within that partition's batch.
    std::vector<std::int32_t> chosen(records.size());
    std::optional<std::int32_t> sticky;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        if (r.partition) {
            if (*r.partition < 0 || *r.partition >= partitions) {
                out.refusal = produce_refusal::unknown_partition;
                out.bad_partition = *r.partition;
                co_return out;
            }
            chosen[i] = *r.partition;
        } else if (r.key) {
            chosen[i] = partition_for_key(*r.key, partitions);
        } else {
            if (!sticky) {
                sticky = static_cast<std::int32_t>(
                    next_partition_.fetch_add(1, std::memory_order_relaxed) %
                    static_cast<std::uint32_t>(partitions));
            }
            chosen[i] = *sticky;
        }
    }

    struct partition_batch {
        kafka::record_batch_builder builder;
        std::vector<std::size_t> members;  // record indexes, in batch order
        protocol::byte_buffer bytes;
    };
    std::map<std::int32_t, partition_batch> batches;
    const std::int64_t now = now_ms();
    std::vector<kafka::header_view> headers;
    for (std::size_t i = 0; i < records.size(); ++i) {
        auto& r = records[i];
        auto& b = batches[chosen[i]];
        headers.clear();
        for (const auto& [name, value] : r.headers) {
            headers.push_back(kafka::header_view{
                name, value ? std::optional<protocol::bytes_view>(bytes_of(*value))
                            : std::nullopt});
        }
        if (r.timestamp < 0) {
            r.timestamp = now;
        }
        b.builder.add(r.key ? std::optional<protocol::bytes_view>(bytes_of(*r.key)) : std::nullopt,
                      r.value ? std::optional<protocol::bytes_view>(bytes_of(*r.value))
                              : std::nullopt,
                      r.timestamp, headers);
        b.members.push_back(i);
    }

    out.records.resize(records.size());
    api::produce_request req;
    req.acks = acks_;
    auto& t = req.topics.emplace_back();
    t.topic = topic;
    for (auto& [p, b] : batches) {
        auto finished = b.builder.finish();
        if (!finished) {
            for (auto i : b.members) {
                out.records[i].error = make_error_code(api::errc::message_too_large);
                out.records[i].partition = p;
            }
            continue;
        }
        b.bytes = std::move(*finished);
        t.partitions.push_back(api::produce_partition{partition_id(p), b.bytes.mutable_view()});
    }
    if (t.partitions.empty()) {
        co_return out;
    }
    api::produce_result res = co_await records_.produce(std::move(req));
    for (const auto& rt : res.topics) {
        for (const auto& rp : rt.partitions) {
            auto it = batches.find(rp.partition.value);
            if (it == batches.end()) {
                continue;
            }
            for (std::size_t k = 0; k < it->second.members.size(); ++k) {
                const std::size_t i = it->second.members[k];
                auto& o = out.records[i];
                o.partition = rp.partition.value;
                o.error = rp.error.code;
                if (!rp.error) {
                    o.offset = rp.base_offset.value + static_cast<std::int64_t>(k);
                    o.timestamp =
                        rp.log_append_time_ms >= 0 ? rp.log_append_time_ms : records[i].timestamp;
                }
            }
        }
    }
    co_return out;
}

}  // namespace sluice::gateway
