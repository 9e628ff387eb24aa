// The compaction tests' fixture: a compacted topic, writes of keyed records, and the records
// a read returns after compaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {

namespace kafka = protocol::kafka;

struct stored_record {
    std::int64_t offset;
    std::string key;
    std::optional<std::string> value;
};

class Compaction : public LogTest {
protected:
    std::shared_ptr<log::partition_log> compacted_topic(
        log::log_manager& m, std::map<std::string, std::string> extra = {}) {
        std::map<std::string, std::string> o = {{"cleanup.policy", "compact"},
                                                {"segment.bytes", "1200"},
                                                {"index.interval.bytes", "100"}};
        for (auto& [k, v] : extra) {
            o[k] = v;
        }
        return make_topic(m, "c", o);
    }

    void put(log::partition_log& p, const std::string& key, std::optional<std::string> value,
             std::int64_t ts) {
        append(p, make_batch({{key, std::move(value), ts}}));
    }

    // Every record from the log start, decoded (compressed batches included).
    std::vector<stored_record> records(log::partition_log& p) {
        std::vector<stored_record> out;
        for (const auto& b : read_all(p, p.log_start_offset())) {
            auto d = kafka::decode_batch(b, 1 << 20);
            EXPECT_TRUE(d) << "bad batch after compaction";
            if (!d) {
                continue;
            }
            for (const auto& r : d->records) {
                stored_record s;
                s.offset = r.offset;
                s.key = r.key ? std::string(protocol::as_chars(*r.key)) : "";
                if (r.value) {
                    s.value = std::string(protocol::as_chars(*r.value));
                }
                out.push_back(s);
            }
        }
        return out;
    }
};

}  // namespace sluice::backend::test
