// Storage micro-benchmarks: append and read throughput of the native log, next to the disk's
// own sequential-write bandwidth and fsync rate measured in the same run.
//
// Run: see docs/benchmarks.md (storage). SLUICE_BENCH_DIR picks the folder (default: the
// system temp folder); it must be on the disk you want to measure.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "backend/log/log_manager.h"
#include "backend/logger.h"
#include "protocol/kafka/record_batch_builder.h"

namespace {

namespace log = sluice::backend::log;
namespace kafka = sluice::protocol::kafka;
using sluice::offset;
using sluice::partition_id;

std::string bench_root() {
    const char* env = std::getenv("SLUICE_BENCH_DIR");
    std::string base = env != nullptr ? env : std::filesystem::temp_directory_path().string();
    static const std::string root = [&] {
        std::string tmpl = base + "/sluice-bench-XXXXXX";
        char* d = ::mkdtemp(tmpl.data());
        if (d == nullptr) {
            std::perror("mkdtemp");
            std::exit(1);
        }
        return std::string(d);
    }();
    return root;
}

struct cleanup {
    ~cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(bench_root(), ec);
    }
} cleanup_at_exit;

// --- the disk itself ------------------------------------------------------------------------

double g_disk_write_bps = 0;  // sequential write, fdatasync at the end included

void BM_DiskSequentialWrite(benchmark::State& state) {
    const std::size_t chunk = 1 << 20;
    const std::size_t total = static_cast<std::size_t>(state.range(0)) << 20;
    std::vector<char> buf(chunk, 'd');
    const std::string path = bench_root() + "/disk-write";
    double bytes = 0;
    double seconds = 0;
    for (auto _ : state) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        auto start = std::chrono::steady_clock::now();
        for (std::size_t done = 0; done < total; done += chunk) {
            if (::write(fd, buf.data(), chunk) != static_cast<ssize_t>(chunk)) {
                state.SkipWithError("write failed");
                break;
            }
        }
        ::fdatasync(fd);
        auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
        ::close(fd);
        state.SetIterationTime(elapsed.count());
        bytes += static_cast<double>(total);
        seconds += elapsed.count();
    }
    ::unlink(path.c_str());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    g_disk_write_bps = bytes / seconds;
}
BENCHMARK(BM_DiskSequentialWrite)
    ->Arg(512)
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_DiskFsync(benchmark::State& state) {
    const std::string path = bench_root() + "/disk-fsync";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char> buf(static_cast<std::size_t>(state.range(0)), 'f');
    for (auto _ : state) {
        if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) {
            state.SkipWithError("write failed");
        }
        ::fdatasync(fd);
    }
    ::close(fd);
    ::unlink(path.c_str());
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DiskFsync)->Arg(200)->MinTime(2.0)->UseRealTime()->Unit(benchmark::kMicrosecond);

// --- the log ----------------------------------------------------------------------------------

struct bench_log {
    std::unique_ptr<log::log_manager> m;
    std::shared_ptr<log::partition_log> p;
};

bench_log open_bench_log(const std::string& name, log::flush_policy policy) {
    static int counter = 0;
    log::log_options o;
    o.data_dir = bench_root() + "/" + name + "-" + std::to_string(counter++);
    o.flush = policy;
    o.retention_check_interval = std::chrono::milliseconds(0);
    o.compaction_check_interval = std::chrono::milliseconds(0);
    auto m = log::log_manager::open(o);
    if (!m) {
        std::fprintf(stderr, "open failed: %s\n", m.error().message().c_str());
        std::exit(1);
    }
    bench_log out;
    out.m = std::move(*m);
    auto t = out.m->create_topic("bench", 1, {{"segment.bytes", "268435456"}});
    if (!t) {
        std::fprintf(stderr, "create failed\n");
        std::exit(1);
    }
    out.p = out.m->partition("bench", partition_id(0));
    return out;
}

std::vector<std::byte> make_batch(std::size_t record_size, int records) {
    kafka::record_batch_builder b;
    std::string value(record_size, 'v');
    for (int i = 0; i < records; ++i) {
        value[0] = static_cast<char>('a' + i % 26);
        b.add(std::nullopt, sluice::protocol::as_bytes(value), 1'700'000'000'000 + i);
    }
    auto out = b.finish();
    return {out->view().begin(), out->view().end()};
}

// Throughput in MB/s of wall time, the disk's sequential write bandwidth from this run, and
// their ratio.
void add_disk_counters(benchmark::State& state, double bytes, double seconds) {
    double bps = seconds > 0 ? bytes / seconds : 0;
    state.counters["MB/s"] = bps / 1e6;
    if (g_disk_write_bps > 0) {
        state.counters["disk_MB/s"] = g_disk_write_bps / 1e6;
        state.counters["x_disk"] = bps / g_disk_write_bps;
    }
}

// Each benchmark gets a fresh folder and deletes it afterwards: deleted files take their dirty
// pages with them, so one benchmark's write-back does not slow the next one down.
void finish(bench_log& l) {
    std::string dir = l.m->data_dir();
    l.p.reset();
    l.m->close();
    l.m.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

boost::asio::awaitable<void> flush(std::shared_ptr<log::partition_log> p, offset end, bool* ok) {
    *ok = static_cast<bool>(co_await p->flush_to(end));
}

// Args: record size, records per batch, fsync (acks=all) or not.
void BM_Append(benchmark::State& state) {
    const auto record_size = static_cast<std::size_t>(state.range(0));
    const int records = static_cast<int>(state.range(1));
    const bool durable = state.range(2) != 0;
    ::sync();
    auto l = open_bench_log("append", log::flush_policy::always);
    auto batch = make_batch(record_size, records);
    boost::asio::io_context io;
    log::append_options o;
    o.now_ms = 1'700'000'000'000;
    double bytes = 0;
    auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        // The batch buffer is rewritten in place (base offset) each time, as a produce's is.
        auto r = l.p->append(batch, o);
        if (!r) {
            state.SkipWithError(r.error().message().c_str());
            break;
        }
        if (durable) {
            bool ok = false;
            boost::asio::co_spawn(io, flush(l.p, r->last_offset + 1, &ok), boost::asio::detached);
            io.restart();
            io.run();
            if (!ok) {
                state.SkipWithError("flush failed");
                break;
            }
        }
        bytes += static_cast<double>(batch.size());
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.SetItemsProcessed(state.iterations() * records);
    add_disk_counters(state, bytes, seconds);
    finish(l);
}

// Many producers appending with acks=all at once: one fsync serves them all (group commit).
boost::asio::awaitable<void> producer(std::shared_ptr<log::partition_log> p,
                                      std::vector<std::byte> batch, int count, bool* failed) {
    log::append_options o;
    for (int i = 0; i < count; ++i) {
        auto r = p->append(batch, o);
        if (!r || !co_await p->flush_to(r->last_offset + 1)) {
            *failed = true;
            co_return;
        }
    }
}

void BM_AppendGroupCommit(benchmark::State& state) {
    const int producers = static_cast<int>(state.range(0));
    ::sync();
    auto l = open_bench_log("group", log::flush_policy::always);
    auto batch = make_batch(100, 1);
    const int per_producer = 50;
    bool failed = false;
    for (auto _ : state) {
        boost::asio::io_context io;
        for (int i = 0; i < producers; ++i) {
            boost::asio::co_spawn(io, producer(l.p, batch, per_producer, &failed),
                                  boost::asio::detached);
        }
        io.run();
    }
    if (failed) {
        state.SkipWithError("append failed");
    }
    state.SetItemsProcessed(state.iterations() * producers * per_producer);
    state.SetBytesProcessed(state.iterations() * producers * per_producer *
                            static_cast<std::int64_t>(batch.size()));
    finish(l);
}

// Args: record size, records per batch. Reads 1 MiB fetches sequentially and copies the bytes
// out of the file (what a TLS connection does; plain TCP would sendfile them instead).
void BM_Read(benchmark::State& state) {
    const auto record_size = static_cast<std::size_t>(state.range(0));
    const int records = static_cast<int>(state.range(1));
    auto l = open_bench_log("read", log::flush_policy::os);
    auto batch = make_batch(record_size, records);
    log::append_options o;
    const std::size_t fill = std::size_t{256} << 20;
    for (std::size_t done = 0; done < fill; done += batch.size()) {
        if (!l.p->append(batch, o)) {
            state.SkipWithError("fill failed");
            return;
        }
    }
    std::vector<std::byte> sink(2 << 20);
    offset pos{0};
    double bytes = 0;
    for (auto _ : state) {
        if (pos >= l.p->log_end_offset()) {
            pos = offset(0);
        }
        auto r = l.p->read(pos, 1 << 20, {});
        if (!r) {
            state.SkipWithError(r.error().message().c_str());
            break;
        }
        std::size_t n = 0;
        for (const auto& c : r->records.chunks()) {
            const auto& region = std::get<sluice::protocol::file_region>(c);
            if (region.length > sink.size()) {
                sink.resize(region.length);
            }
            n += static_cast<std::size_t>(::pread(region.fd, sink.data(), region.length,
                                                  static_cast<off_t>(region.position)));
        }
        bytes += static_cast<double>(n);
        // The next fetch starts after the last whole batch returned.
        pos = pos + static_cast<std::int64_t>(n / batch.size()) * records;
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.SetItemsProcessed(static_cast<std::int64_t>(bytes / static_cast<double>(batch.size())) *
                            records);
    finish(l);
}

void append_args(benchmark::internal::Benchmark* b) {
    for (int durable : {0, 1}) {
        for (int size : {100, 1024}) {
            for (int records : {1, 100, 1000}) {
                b->Args({size, records, durable});
            }
        }
    }
    b->ArgNames({"record_bytes", "batch", "fsync"});
}

// Compaction of one sealed segment of keyed records, as __queue_state's: 25-byte keys, each
// written `repeat` times (a message's received and deleted records), 60-byte values. Args: keys,
// repeats. Items are records read by the compactor; the time is the whole compact() call.
void BM_Compact(benchmark::State& state) {
    const int keys = static_cast<int>(state.range(0));
    const int repeat = static_cast<int>(state.range(1));
    std::int64_t records = 0;
    for (auto _ : state) {
        state.PauseTiming();
        static int counter = 0;
        log::log_options o;
        o.data_dir = bench_root() + "/compact-" + std::to_string(counter++);
        o.flush = log::flush_policy::os;
        o.retention_check_interval = std::chrono::milliseconds(0);
        o.compaction_check_interval = std::chrono::milliseconds(0);
        auto m = log::log_manager::open(o);
        if (!m || !(*m)->create_topic("state", 1, {{"cleanup.policy", "compact"},
                                                   {"segment.ms", "1000"},
                                                   {"min.cleanable.dirty.ratio", "0.01"}})) {
            state.SkipWithError("open failed");
            break;
        }
        auto p = (*m)->partition("state", partition_id(0));
        log::append_options ao;
        ao.now_ms = 1'700'000'000'000;
        const std::string value(60, 'v');
        // Keys first..last-1 ("msg:queue-one:0000000042"), or the one key "last" when first < 0.
        auto append_keys = [&](int first, int last) {
            kafka::record_batch_builder b;
            char key[32];
            for (int i = first; i < last || (first < 0 && i == first); ++i) {
                std::snprintf(key, sizeof key, first < 0 ? "last" : "msg:queue-one:%010d", i);
                b.add(sluice::protocol::as_bytes(std::string_view(key)),
                      sluice::protocol::as_bytes(value), ao.now_ms);
            }
            auto batch = b.finish();
            std::vector<std::byte> bytes(batch->view().begin(), batch->view().end());
            return static_cast<bool>(p->append(bytes, ao));
        };
        bool ok = true;
        for (int r = 0; r < repeat && ok; ++r) {
            for (int k = 0; k < keys && ok; k += 100) {
                ok = append_keys(k, std::min(keys, k + 100));
            }
        }
        ao.now_ms += 2000;  // past segment.ms: this batch starts a new segment
        if (!ok || !append_keys(-1, 0)) {
            state.SkipWithError("append failed");
            return;
        }
        state.ResumeTiming();
        auto r = p->compact(ao.now_ms + 1);
        state.PauseTiming();
        if (!r) {
            state.SkipWithError(r.error().message().c_str());
            break;
        }
        records += static_cast<std::int64_t>(keys) * repeat;
        std::string dir = (*m)->data_dir();
        p.reset();
        (*m)->close();
        m->reset();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        state.ResumeTiming();
    }
    state.SetItemsProcessed(records);
}

}  // namespace

// Rates are per wall-clock second (UseRealTime): the disk, not the CPU, is what is measured.
BENCHMARK(BM_Append)
    ->Apply(append_args)
    ->MinTime(1.0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AppendGroupCommit)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->ArgName("producers")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Read)
    ->ArgsProduct({{100, 1024}, {1, 100, 1000}})
    ->ArgNames({"record_bytes", "batch"})
    ->MinTime(1.0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_Compact)
    ->Args({200000, 2})
    ->ArgNames({"keys", "repeat"})
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    // Segment rolls are logged at info; keep the table readable.
    sluice::backend::storage_log().set_level(spdlog::level::warn);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
