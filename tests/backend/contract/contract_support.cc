// Helpers of the backend conformance suite (contract_fixture.h): batches built and fetched
// answers decoded with the protocol module's record format code only.
#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

#include "backend/api/records_memory.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/contract/contract_fixture.h"

namespace sluice::backend::contract {
namespace {

namespace kafka = protocol::kafka;

std::optional<std::string> to_string(const std::optional<protocol::bytes_view>& b) {
    if (!b) {
        return std::nullopt;
    }
    return std::string(protocol::as_chars(*b));
}

/// Every batch of a fetched partition as {header, records}.
struct fetched_batch {
    kafka::batch_header header;
    std::vector<fetched_record> records;
};

std::vector<fetched_batch> decode_batches(const api::fetched_partition& part) {
    std::vector<fetched_batch> out;
    auto bytes = api::read_records_into_memory(part.records);
    if (!bytes) {
        ADD_FAILURE() << "reading fetched records: " << bytes.error().message();
        return out;
    }
    kafka::batch_cursor cursor(bytes->view());
    for (auto batch = cursor.next(); !batch.empty(); batch = cursor.next()) {
        auto decoded = kafka::decode_batch(batch, 64 << 20);
        if (!decoded) {
            ADD_FAILURE() << "a fetched batch does not decode: " << decoded.error().message();
            return out;
        }
        fetched_batch fb;
        fb.header = decoded->header;
        for (const auto& r : decoded->records) {
            fetched_record rec;
            rec.offset = r.offset;
            rec.timestamp = r.timestamp;
            rec.key = to_string(r.key);
            rec.value = to_string(r.value);
            rec.producer_id = decoded->header.producer_id;
            rec.transactional = decoded->header.is_transactional();
            rec.control = decoded->header.is_control();
            rec.log_append_time = decoded->header.uses_log_append_time();
            fb.records.push_back(std::move(rec));
        }
        out.push_back(std::move(fb));
    }
    if (cursor.malformed()) {
        ADD_FAILURE() << "fetched records hold a malformed batch header";
    }
    return out;
}

}  // namespace

protocol::byte_buffer make_batch(const std::vector<std::string>& values, std::int64_t timestamp_ms,
                                 producer_fields producer) {
    kafka::batch_options o;
    o.producer_id = producer.id;
    o.producer_epoch = producer.epoch;
    o.base_sequence = producer.base_sequence;
    o.transactional = producer.transactional;
    kafka::record_batch_builder b(o);
    for (const auto& v : values) {
        b.add(std::nullopt, protocol::as_bytes(v), timestamp_ms);
    }
    auto out = b.finish();
    if (!out) {
        throw std::runtime_error("make_batch: " + out.error().message());
    }
    return std::move(*out);
}

protocol::byte_buffer make_sized_batch(int count, std::size_t value_bytes,
                                       std::int64_t timestamp_ms) {
    std::vector<std::string> values(static_cast<std::size_t>(count),
                                    std::string(value_bytes, 'v'));
    return make_batch(values, timestamp_ms);
}

std::vector<fetched_record> decode_fetched(const api::fetched_partition& part) {
    std::vector<fetched_record> out;
    for (auto& b : decode_batches(part)) {
        for (auto& r : b.records) {
            out.push_back(std::move(r));
        }
    }
    return out;
}

std::size_t count_batches(const api::fetched_partition& part) {
    return decode_batches(part).size();
}

std::vector<std::string> committed_values(const api::fetched_partition& part) {
    // compat: Kafka's consumer (CompletedFetch): a producer's transactional batches are
    // skipped from the first offset of an aborted transaction up to its abort marker.
    auto aborted = part.aborted;
    std::sort(aborted.begin(), aborted.end(),
              [](const auto& a, const auto& b) { return a.first_offset < b.first_offset; });
    std::set<std::int64_t> aborting;
    std::vector<std::string> out;
    std::size_t next_aborted = 0;
    for (auto& b : decode_batches(part)) {
        while (next_aborted < aborted.size() &&
               aborted[next_aborted].first_offset.value <= b.header.last_offset()) {
            aborting.insert(aborted[next_aborted].producer.value);
            ++next_aborted;
        }
        if (b.header.is_control()) {
            // A marker (commit or abort) ends the producer's transaction.
            aborting.erase(b.header.producer_id);
            continue;
        }
        if (b.header.is_transactional() && aborting.contains(b.header.producer_id)) {
            continue;
        }
        for (auto& r : b.records) {
            out.push_back(r.value.value_or(""));
        }
    }
    return out;
}

std::vector<std::string> values_of(const std::vector<fetched_record>& records) {
    std::vector<std::string> out;
    for (const auto& r : records) {
        if (!r.control) {
            out.push_back(r.value.value_or(""));
        }
    }
    return out;
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

api::errc reason_of(const api::backend_error& e) {
    return e ? e.reason() : api::errc{};
}

}  // namespace sluice::backend::contract
