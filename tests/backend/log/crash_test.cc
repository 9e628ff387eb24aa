// Real crash tests: real files in a temporary folder, a writer child process killed with SIGKILL
// at random points, then recovery and checks in this process. Also torn and corrupt tails made
// by hand on real segment files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/log/errc.h"
#include "backend/log/log_manager.h"
#include "protocol/kafka/record_batch.h"
#include "tests/backend/support.h"

namespace sluice::backend::test {

namespace kafka = protocol::kafka;

namespace {

constexpr int crash_partitions = 2;
constexpr int writers_per_partition = 2;
const char* const crash_topic = "crash";

// The records of batch `seq` are fully determined by (partition, seq): the checker rebuilds
// them and compares byte for byte.
std::vector<test_record> crash_records(int partition, std::uint64_t seq) {
    std::vector<test_record> recs;
    int count = 1 + static_cast<int>(seq % 4);
    for (int i = 0; i < count; ++i) {
        std::string v =
            std::to_string(partition) + ":" + std::to_string(seq) + ":" + std::to_string(i) + ":";
        v.resize(50 + (seq * 37 + static_cast<std::uint64_t>(i) * 11) % 400,
                 static_cast<char>('a' + (seq + static_cast<std::uint64_t>(i)) % 26));
        recs.push_back({std::nullopt, v, static_cast<std::int64_t>(1'700'000'000'000 + seq)});
    }
    return recs;
}

log::log_options crash_options(const std::string& dir) {
    log::log_options o;
    o.data_dir = dir;
    o.flush = log::flush_policy::always;
    o.flush_threads = 2;
    o.retention_check_interval = std::chrono::milliseconds(0);
    o.compaction_check_interval = std::chrono::milliseconds(0);
    return o;
}

struct writer_state {
    std::shared_ptr<log::log_manager> log;
    std::atomic<std::uint64_t> next_seq{0};
};

void write_line(const std::string& line) {
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(STDOUT_FILENO, p, left);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            std::_Exit(3);  // the parent is gone
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

boost::asio::awaitable<void> writer_loop(std::shared_ptr<writer_state> st, int partition) {
    auto p = st->log->partition(crash_topic, partition_id(partition));
    while (true) {
        std::uint64_t seq = st->next_seq++;
        auto batch = make_batch(crash_records(partition, seq));
        log::append_options o;
        o.now_ms = 1'700'000'000'000;
        auto r = p->append(batch, o);
        if (!r) {
            write_line("error append " + r.error().message() + "\n");
            std::_Exit(4);
        }
        auto f = co_await p->flush_to(r->last_offset + 1);
        if (!f) {
            write_line("error flush " + f.error().message() + "\n");
            std::_Exit(5);
        }
        // Acknowledged: the batch is fsynced.
        write_line("ack " + std::to_string(partition) + " " + std::to_string(r->base_offset.value) +
                   " " + std::to_string(r->last_offset.value) + " " + std::to_string(seq) + "\n");
    }
}

std::string make_temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-crash-XXXXXX").string();
    char* d = ::mkdtemp(tmpl.data());
    if (d == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    return d;
}

struct ack {
    std::int64_t last = 0;
    std::uint64_t seq = 0;
};

}  // namespace

/// The child: appends with acks=all semantics on every partition until killed. Prints one
/// "ack <partition> <base> <last> <seq>" line per fsynced batch.
int crash_writer_main(int argc, char** argv) {
    if (argc < 4) {
        return 2;
    }
    auto st = std::make_shared<writer_state>();
    st->next_seq = std::strtoull(argv[3], nullptr, 10);
    auto opened = log::log_manager::open(crash_options(argv[2]));
    if (!opened) {
        write_line("error open " + opened.error().message() + "\n");
        return 6;
    }
    st->log = std::move(*opened);
    if (!st->log->find_topic(crash_topic)) {
        auto t =
            st->log->create_topic(crash_topic, crash_partitions,
                                  {{"segment.bytes", "65536"}, {"index.interval.bytes", "1024"}});
        if (!t) {
            write_line("error create " + t.error().message() + "\n");
            return 7;
        }
    }
    write_line("ready\n");
    boost::asio::io_context io;
    for (int p = 0; p < crash_partitions; ++p) {
        for (int w = 0; w < writers_per_partition; ++w) {
            boost::asio::co_spawn(io, writer_loop(st, p), boost::asio::detached);
        }
    }
    io.run();
    return 0;
}

namespace {

class RealFiles : public ::testing::Test {
protected:
    void SetUp() override { dir_ = make_temp_dir(); }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string dir_;
};

using CrashTest = RealFiles;

TEST_F(CrashTest, AcknowledgedBatchesSurviveSigkillAtRandomPoints) {
    const char* seed_env = std::getenv("SLUICE_TEST_SEED");
    std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 7);
    const std::string data = dir_ + "/data";
    std::map<std::pair<int, std::int64_t>, ack> acked;  // (partition, base) -> ack
    std::uint64_t total_acks = 0;
    std::int64_t truncated = 0;
    const int kills = 25;
    for (int run = 0; run < kills; ++run) {
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        std::string seq_start = std::to_string(static_cast<std::uint64_t>(run) * 1'000'000);
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            ::close(fds[0]);
            ::close(fds[1]);
            const char* args[] = {"backend_tests", "--crash-writer", data.c_str(),
                                  seq_start.c_str(), nullptr};
            ::execv("/proc/self/exe", const_cast<char* const*>(args));
            std::_Exit(127);
        }
        ::close(fds[1]);
        // Kill after a random number of acknowledgements (0: during start-up and recovery).
        const int kill_after = run == 0 ? 20 : std::uniform_int_distribution<int>(0, 120)(rng);
        int acks_this_run = 0;
        std::string buf;
        bool killed = false;
        char chunk[4096];
        while (true) {
            if (!killed && acks_this_run >= kill_after) {
                ::kill(pid, SIGKILL);
                killed = true;
            }
            ssize_t n = ::read(fds[0], chunk, sizeof chunk);
            if (n <= 0) {
                break;  // the child is dead and the pipe drained
            }
            buf.append(chunk, static_cast<std::size_t>(n));
            std::size_t nl;
            while ((nl = buf.find('\n')) != std::string::npos) {
                std::string line = buf.substr(0, nl);
                buf.erase(0, nl + 1);
                ASSERT_NE(line.rfind("error", 0), 0u) << "child: " << line;
                if (line.rfind("ack ", 0) == 0) {
                    std::istringstream in(line.substr(4));
                    int p = 0;
                    std::int64_t base = 0;
                    ack a;
                    in >> p >> base >> a.last >> a.seq;
                    acked[{p, base}] = a;
                    ++acks_this_run;
                    ++total_acks;
                }
            }
        }
        ::close(fds[0]);
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            << "run " << run << " status " << status;

        // Recover in this process and check every acknowledged batch.
        auto opened = log::log_manager::open(crash_options(data));
        ASSERT_TRUE(opened) << opened.error().message();
        auto& m = **opened;
        if (!m.find_topic(crash_topic)) {
            ASSERT_TRUE(acked.empty());  // killed before the topic was created
            continue;
        }
        for (int p = 0; p < crash_partitions; ++p) {
            auto part = m.partition(crash_topic, partition_id(p));
            ASSERT_TRUE(part);
            truncated += part->recovery().truncated_bytes;
            std::map<std::int64_t, std::pair<std::int64_t, std::vector<std::byte>>> stored;
            offset pos{0};
            while (pos < part->log_end_offset()) {
                auto r = part->read(pos, 1 << 20, {});
                ASSERT_TRUE(r) << r.error().message();
                auto bytes = flatten(r->records);
                for (auto b : split_batches(bytes)) {
                    auto h = kafka::validate_batch(b);
                    ASSERT_TRUE(h) << "run " << run << ": damaged batch at " << pos.value;
                    ASSERT_EQ(h->base_offset, pos.value) << "run " << run << ": offset gap";
                    stored[h->base_offset] = {h->last_offset(),
                                              std::vector<std::byte>(b.begin(), b.end())};
                    pos = offset(h->last_offset() + 1);
                }
            }
            for (const auto& [key, a] : acked) {
                if (key.first != p) {
                    continue;
                }
                auto it = stored.find(key.second);
                ASSERT_NE(it, stored.end()) << "run " << run << ": acknowledged batch " << p << "/"
                                            << key.second << " is missing";
                ASSERT_EQ(it->second.first, a.last);
                auto got = decode_records(it->second.second);
                auto want = crash_records(p, a.seq);
                ASSERT_EQ(got.size(), want.size());
                for (std::size_t i = 0; i < got.size(); ++i) {
                    ASSERT_EQ(got[i].value, want[i].value) << "run " << run;
                }
            }
        }
        m.close();
    }
    EXPECT_GT(total_acks, 200u);
    RecordProperty("acknowledged_batches", static_cast<int>(total_acks));
    RecordProperty("truncated_bytes", static_cast<int>(truncated));
}

// Helpers for the hand-made damage below.
std::string segment_path(const std::string& data, int partition) {
    return data + "/t-" + std::to_string(partition) + "/00000000000000000000.log";
}

class RealTail : public RealFiles {
protected:
    // Writes `n` acknowledged batches to t-0 and closes the log; returns their sizes.
    std::vector<std::size_t> write_batches(int n) {
        std::vector<std::size_t> sizes;
        auto m = log::log_manager::open(crash_options(dir_ + "/data"));
        EXPECT_TRUE(m);
        EXPECT_TRUE((*m)->create_topic("t", 1, {}));
        auto p = (*m)->partition("t", partition_id(0));
        for (int i = 0; i < n; ++i) {
            auto b = make_batch(2, 120, 1000 + i);
            sizes.push_back(b.size());
            EXPECT_TRUE(append_durably(*p, b, 0));
        }
        (*m)->close();
        return sizes;
    }
    std::unique_ptr<log::log_manager> reopen() {
        auto m = log::log_manager::open(crash_options(dir_ + "/data"));
        EXPECT_TRUE(m);
        return std::move(*m);
    }
};

TEST_F(RealTail, TruncatedLastBatchIsCutOnOpen) {
    auto sizes = write_batches(5);
    const std::string path = segment_path(dir_ + "/data", 0);
    auto full = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, full - sizes.back() / 2);

    auto m = reopen();
    auto p = m->partition("t", partition_id(0));

    EXPECT_EQ(p->recovery().truncated_bytes,
              static_cast<std::int64_t>(sizes.back() - sizes.back() / 2));
    EXPECT_EQ(p->log_end_offset(), offset(8));
    EXPECT_EQ(std::filesystem::file_size(path), full - sizes.back());
    auto r = p->read(offset(6), 1 << 20, {});
    ASSERT_TRUE(r);
    ASSERT_FALSE(r->records.chunks().empty());
    EXPECT_TRUE(std::holds_alternative<protocol::file_region>(r->records.chunks()[0]));
}

TEST_F(RealTail, CorruptByteInLastBatchIsCutOnOpen) {
    auto sizes = write_batches(5);
    const std::string path = segment_path(dir_ + "/data", 0);
    auto full = std::filesystem::file_size(path);
    {
        int fd = ::open(path.c_str(), O_RDWR);
        ASSERT_GE(fd, 0);
        char c = 0;
        ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(full - 7)), 1);
        c ^= 0x21;
        ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(full - 7)), 1);
        ::close(fd);
    }
    auto m = reopen();
    auto p = m->partition("t", partition_id(0));
    EXPECT_EQ(p->recovery().truncated_bytes, static_cast<std::int64_t>(sizes.back()));
    EXPECT_EQ(p->log_end_offset(), offset(8));
}

TEST_F(RealTail, ZeroFilledTailIsCutOnOpen) {
    write_batches(3);
    const std::string path = segment_path(dir_ + "/data", 0);
    auto full = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, full + 4096);  // as after a crash with zeros ahead
    auto m = reopen();
    auto p = m->partition("t", partition_id(0));
    EXPECT_EQ(p->recovery().truncated_bytes, 0);  // zeros are no torn data
    EXPECT_EQ(p->log_end_offset(), offset(6));
    EXPECT_EQ(std::filesystem::file_size(path), full);
}

}  // namespace
}  // namespace sluice::backend::test
