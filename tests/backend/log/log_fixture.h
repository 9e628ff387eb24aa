// A log_manager on the in-memory file system with a manual clock and no background thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/io/memory_file_system.h"
#include "backend/log/log_manager.h"
#include "tests/backend/support.h"

namespace sluice::backend::test {

class LogTest : public ::testing::Test {
protected:
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
    manual_clock clock;

    log::log_options options() {
        log::log_options o;
        o.data_dir = "/data";
        o.fs = fs;
        o.clock = clock.fn();
        o.retention_check_interval = std::chrono::milliseconds(0);
        o.compaction_check_interval = std::chrono::milliseconds(0);
        o.flush_threads = 1;
        return o;
    }

    std::unique_ptr<log::log_manager> open_log(log::log_options o) {
        auto m = log::log_manager::open(std::move(o));
        EXPECT_TRUE(m) << (m ? "" : m.error().message());
        return m ? std::move(*m) : nullptr;
    }
    std::unique_ptr<log::log_manager> open_log() { return open_log(options()); }

    std::shared_ptr<log::partition_log> make_topic(
        log::log_manager& m, const std::string& name,
        const std::map<std::string, std::string>& overrides = {}) {
        auto t = m.create_topic(name, 1, overrides);
        EXPECT_TRUE(t) << (t ? "" : t.error().message());
        return m.partition(name, partition_id(0));
    }

    log::append_result append(log::partition_log& p, std::vector<std::byte> batch) {
        log::append_options o;
        o.now_ms = clock.now();
        auto r = p.append(batch, o);
        EXPECT_TRUE(r) << (r ? "" : r.error().message());
        return r ? *r : log::append_result{};
    }

    /// Every batch from `from` to the log end, as copies.
    std::vector<std::vector<std::byte>> read_all(log::partition_log& p, offset from) {
        std::vector<std::vector<std::byte>> out;
        offset pos = from;
        while (pos < p.log_end_offset()) {
            auto r = p.read(pos, 64 * 1024, {});
            EXPECT_TRUE(r) << (r ? "" : r.error().message());
            if (!r || r->records.size() == 0) {
                break;
            }
            auto bytes = flatten(r->records);
            for (auto b : split_batches(bytes)) {
                out.emplace_back(b.begin(), b.end());
                auto h = protocol::kafka::read_batch_header(b);
                pos = offset(h->last_offset() + 1);
            }
        }
        return out;
    }
};

}  // namespace sluice::backend::test
