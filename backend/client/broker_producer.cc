#include "backend/client/broker_producer.h"

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "protocol/kafka/record_batch_builder.h"

namespace sluice::backend::client {
namespace {

namespace kafka = protocol::kafka;

/// compat: org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c), which the Java
/// producer's default partitioner applies to the serialized key.
std::uint32_t producer_murmur2(std::string_view data) {
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

std::int64_t producer_now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::optional<protocol::bytes_view> producer_bytes(const std::optional<std::string>& s) {
    if (!s) {
        return std::nullopt;
    }
    return protocol::as_bytes(*s);
}

/// One partition's share of a send: its records (indexes into the call, in order) and the
/// batch built of them.
struct partition_share {
    std::vector<std::size_t> members;
    protocol::byte_buffer bytes;
};

/// Builds one v2 batch of `records[members]`; nullopt when it cannot be encoded.
std::optional<protocol::byte_buffer> build_share_batch(
    const std::vector<api::outgoing_record>& records, const std::vector<std::size_t>& members,
    std::vector<kafka::header_view>& headers) {
    kafka::record_batch_builder builder;
    for (const auto i : members) {
        const auto& r = records[i];
        headers.clear();
        for (const auto& [name, value] : r.headers) {
            headers.push_back(kafka::header_view{name, producer_bytes(value)});
        }
        builder.add(producer_bytes(r.key), producer_bytes(r.value), r.timestamp, headers);
    }
    auto finished = builder.finish();
    if (!finished) {
        return std::nullopt;
    }
    return std::move(*finished);
}

/// Fills the deliveries of `members` from one partition's answer.
void fill_deliveries(std::vector<api::delivery>& out, const std::vector<api::outgoing_record>& records,
                     const std::vector<std::size_t>& members, const api::produced_partition& rp) {
    for (std::size_t k = 0; k < members.size(); ++k) {
        const std::size_t i = members[k];
        auto& d = out[i];
        d.partition = rp.partition.value;
        d.error = rp.error;
        if (!rp.error) {
            d.offset = rp.base_offset.value + static_cast<std::int64_t>(k);
            d.timestamp = rp.log_append_time_ms >= 0 ? rp.log_append_time_ms : records[i].timestamp;
        }
    }
}

/// The native producer. The broker level appends and answers without parking beyond its own
/// flush (acks=all: the fsync of the flush policy), so a send has no timer of its own: the
/// deadline of send_options is never reached before the answer (a remote client level is
/// where it bites).
class broker_producer final : public api::producer {
public:
    broker_producer(api::topics& topics, api::records& records)
        : topics_(topics), records_(records) {}

    api::awaitable<api::backend_result<std::vector<api::delivery>>> send(
        topic_name topic, std::vector<api::outgoing_record> records,
        api::send_options opts) override {
        auto described = co_await topics_.describe(topic);
        if (!described || described->partitions < 1) {
            co_return api::backend_failure(
                api::errc::unknown_topic_or_partition,
                fmt::format("Topic '{}' does not exist", topic.value));
        }
        const std::int32_t partitions = described->partitions;

        std::map<std::int32_t, partition_share> shares;
        std::optional<std::int32_t> sticky;
        for (std::size_t i = 0; i < records.size(); ++i) {
            const auto& r = records[i];
            std::int32_t p = 0;
            if (r.partition) {
                if (*r.partition < 0 || *r.partition >= partitions) {
                    co_return api::backend_failure(
                        api::errc::unknown_topic_or_partition,
                        fmt::format("Partition {} of topic '{}' does not exist (it has {})",
                                    *r.partition, topic.value, partitions));
                }
                p = *r.partition;
            } else if (r.key) {
                p = partition_for_key(*r.key, partitions);
            } else {
                if (!sticky) {
                    sticky = static_cast<std::int32_t>(
                        next_partition_.fetch_add(1, std::memory_order_relaxed) %
                        static_cast<std::uint32_t>(partitions));
                }
                p = *sticky;
            }
            shares[p].members.push_back(i);
        }

        const std::int64_t now = producer_now_ms();
        for (auto& r : records) {
            if (r.timestamp < 0) {
                r.timestamp = now;
            }
        }

        std::vector<api::delivery> out(records.size());
        api::produce_request req;
        req.acks = opts.acks;
        auto& t = req.topics.emplace_back();
        t.topic = topic;
        std::vector<kafka::header_view> headers;
        for (auto& [p, share] : shares) {
            auto batch = build_share_batch(records, share.members, headers);
            if (!batch) {
                for (const auto i : share.members) {
                    out[i].partition = p;
                    out[i].error = api::backend_error(
                        api::errc::message_too_large,
                        "The records do not fit in one record batch");
                }
                continue;
            }
            share.bytes = std::move(*batch);
            t.partitions.push_back(api::produce_partition{partition_id(p), share.bytes.mutable_view()});
        }
        if (t.partitions.empty()) {
            co_return out;
        }
        const api::produce_result res = co_await records_.produce(std::move(req));
        std::vector<std::int32_t> too_large;  // partitions whose batch of several was refused
        for (const auto& rt : res.topics) {
            for (const auto& rp : rt.partitions) {
                auto it = shares.find(rp.partition.value);
                if (it == shares.end()) {
                    continue;
                }
                if (rp.error && rp.error.reason() == api::errc::message_too_large &&
                    it->second.members.size() > 1) {
                    too_large.push_back(rp.partition.value);
                    continue;
                }
                fill_deliveries(out, records, it->second.members, rp);
            }
        }
        for (const auto p : too_large) {
            co_await send_one_by_one(topic, records, shares[p].members, p, opts.acks, out);
        }
        co_return out;
    }

    api::awaitable<api::backend_result<std::int32_t>> partitions(topic_name topic) override {
        auto described = co_await topics_.describe(topic);
        if (!described || described->partitions < 1) {
            co_return api::backend_failure(
                api::errc::unknown_topic_or_partition,
                fmt::format("Topic '{}' does not exist", topic.value));
        }
        co_return described->partitions;
    }

private:
    /// A batch of several records was over the topic's max.message.bytes: each record is sent
    /// as a batch of its own, in order, so that only the records too large by themselves fail
    /// (the error path only; a send that fits is one produce call).
    api::awaitable<void> send_one_by_one(const topic_name& topic,
                                         const std::vector<api::outgoing_record>& records,
                                         const std::vector<std::size_t>& members, std::int32_t p,
                                         api::acks acks, std::vector<api::delivery>& out) {
        std::vector<kafka::header_view> headers;
        for (const auto i : members) {
            const std::vector<std::size_t> one{i};
            auto batch = build_share_batch(records, one, headers);
            if (!batch) {
                out[i].partition = p;
                out[i].error = api::backend_error(api::errc::message_too_large,
                                                  "The record does not fit in a record batch");
                continue;
            }
            api::produce_request req;
            req.acks = acks;
            req.topics.push_back(api::produce_topic{
                topic, {api::produce_partition{partition_id(p), batch->mutable_view()}}});
            const api::produce_result res = co_await records_.produce(std::move(req));
            for (const auto& rt : res.topics) {
                for (const auto& rp : rt.partitions) {
                    fill_deliveries(out, records, one, rp);
                }
            }
        }
    }

    api::topics& topics_;
    api::records& records_;
    std::atomic<std::uint32_t> next_partition_{0};
};

}  // namespace

std::int32_t partition_for_key(std::string_view key, std::int32_t partitions) {
    return static_cast<std::int32_t>((producer_murmur2(key) & 0x7fffffffu) %
                                     static_cast<std::uint32_t>(partitions));
}

std::unique_ptr<api::producer> make_broker_producer(api::topics& topics, api::records& records) {
    return std::make_unique<broker_producer>(topics, records);
}

}  // namespace sluice::backend::client
