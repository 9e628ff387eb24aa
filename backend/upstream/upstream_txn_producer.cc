#include "backend/upstream/upstream_txn_producer.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "backend/api/errc.h"
#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

/// The error of a failed transactional call in api terms; fatal errors (a fenced producer)
/// are producer_fenced whatever librdkafka's code says.
api::backend_error txn_error(rd_kafka_error_t* e, bool fatal) {
    api::backend_error out = to_backend_error(rd_kafka_error_code(e), rd_kafka_error_string(e));
    if (fatal) {
        out.code = make_error_code(api::errc::producer_fenced);
    }
    return out;
}

class upstream_txn_producer final : public api::transactional_producer {
  public:
    upstream_txn_producer(const std::map<std::string, std::string>& props,
                          const std::string& transactional_id)
        : id_(transactional_id) {
        std::map<std::string, std::string> all = props;
        all["transactional.id"] = transactional_id;
        all["enable.idempotence"] = "true";
        all["acks"] = "all";
        all["linger.ms"] = "0";
        // A transaction's AddPartitionsToTxn right after the previous commit meets
        // CONCURRENT_TRANSACTIONS while the coordinator writes the markers; librdkafka retries
        // it after retry.backoff.ms (100 ms by default): one transaction at a time would wait
        // that long every time.
        if (!props.contains("retry.backoff.ms")) {
            all["retry.backoff.ms"] = "5";
        }
        handle_ = make_handle(RD_KAFKA_PRODUCER, make_conf(all));
    }

    ~upstream_txn_producer() override {
        rd_kafka_t* rk = handle_.get();
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(rk, 1000);
        pool_.join();
    }

    api::awaitable<api::backend_result<void>> init(milliseconds timeout) override {
        auto fn = [this, timeout]() -> api::backend_result<void> {
            rd_kafka_error_t* e =
                rd_kafka_init_transactions(handle_.get(), static_cast<int>(timeout.count()));
            if (!e) {
                upstream_log().info("transactional id {}: initialised (earlier producers of it "
                                    "are fenced)",
                                    id_);
                return {};
            }
            const bool fatal = rd_kafka_error_is_fatal(e);
            auto err = txn_error(e, fatal);
            rd_kafka_error_destroy(e);
            if (fatal) {
                fatal_.store(true);
            }
            return api::backend_failure(std::move(err));
        };
        co_return co_await run_blocking(pool_, std::move(fn));
    }

    api::awaitable<api::backend_result<void>> send_committed(
        topic_name topic, std::vector<api::outgoing_record> records,
        milliseconds timeout) override {
        auto fn = [this, t = std::move(topic), recs = std::move(records),
                   timeout]() -> api::backend_result<void> {
            return run_transaction(t, recs, timeout);
        };
        co_return co_await run_blocking(pool_, std::move(fn));
    }

  private:
    api::backend_result<void> failed(rd_kafka_error_t* e) {
        const bool fatal = rd_kafka_error_is_fatal(e);
        const bool abort = rd_kafka_error_txn_requires_abort(e);
        auto err = txn_error(e, fatal);
        rd_kafka_error_destroy(e);
        if (fatal) {
            fatal_.store(true);
        } else if (abort) {
            if (rd_kafka_error_t* a = rd_kafka_abort_transaction(handle_.get(), 10000)) {
                if (rd_kafka_error_is_fatal(a)) {
                    fatal_.store(true);
                    err.code = make_error_code(api::errc::producer_fenced);
                }
                rd_kafka_error_destroy(a);
            }
        }
        return api::backend_failure(std::move(err));
    }

    api::backend_result<void> run_transaction(const topic_name& topic,
                                              const std::vector<api::outgoing_record>& records,
                                              milliseconds timeout) {
        if (fatal_.load()) {
            return api::backend_failure(make_error_code(api::errc::producer_fenced),
                                        "transactional id " + id_ + " is fenced");
        }
        rd_kafka_t* rk = handle_.get();
        const auto deadline = steady_clock::now() + timeout;
        if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk)) {
            return failed(e);
        }
        for (const auto& r : records) {
            std::vector<rd_kafka_vu_t> vus;
            auto add = [&vus](rd_kafka_vtype_t t) -> rd_kafka_vu_t& {
                vus.emplace_back();
                vus.back().vtype = t;
                return vus.back();
            };
            add(RD_KAFKA_VTYPE_TOPIC).u.cstr = topic.value.c_str();
            if (r.partition) {
                add(RD_KAFKA_VTYPE_PARTITION).u.i32 = *r.partition;
            }
            add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
            if (r.key) {
                auto& k = add(RD_KAFKA_VTYPE_KEY).u.mem;
                k.ptr = const_cast<char*>(r.key->data());
                k.size = r.key->size();
            }
            if (r.value) {
                auto& v = add(RD_KAFKA_VTYPE_VALUE).u.mem;
                v.ptr = const_cast<char*>(r.value->data());
                v.size = r.value->size();
            }
            for (;;) {
                rd_kafka_error_t* e = rd_kafka_produceva(rk, vus.data(), vus.size());
                if (!e) {
                    break;
                }
                if (rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__QUEUE_FULL &&
                    steady_clock::now() < deadline) {
                    rd_kafka_error_destroy(e);
                    rd_kafka_poll(rk, 5);
                    continue;
                }
                // A produce refused locally leaves the transaction to abort.
                auto err = txn_error(e, rd_kafka_error_is_fatal(e));
                rd_kafka_error_destroy(e);
                if (rd_kafka_error_t* a = rd_kafka_abort_transaction(rk, 10000)) {
                    if (rd_kafka_error_is_fatal(a)) {
                        fatal_.store(true);
                        err.code = make_error_code(api::errc::producer_fenced);
                    }
                    rd_kafka_error_destroy(a);
                }
                return api::backend_failure(std::move(err));
            }
        }
        for (;;) {
            const auto left = std::chrono::duration_cast<milliseconds>(deadline -
                                                                       steady_clock::now());
            rd_kafka_error_t* e =
                rd_kafka_commit_transaction(rk, static_cast<int>(std::max<std::int64_t>(
                                                    left.count(), 1)));
            if (!e) {
                return {};
            }
            // A retriable commit (a timeout) is retried while time is left: the commit may
            // have been sent already, and only commit_transaction again tells.
            if (rd_kafka_error_is_retriable(e) && steady_clock::now() < deadline) {
                rd_kafka_error_destroy(e);
                continue;
            }
            return failed(e);
        }
    }

    std::string id_;
    // A thread of its own: its calls are serial, and behind the client's shared pool of
    // blocking calls (consumers' offset lookups and commits) every commit waited its turn
    // (receive+delete through one gateway ran at a quarter of its rate).
    blocking_pool pool_{1};
    handle_ptr handle_;
    std::atomic<bool> fatal_{false};
};

}  // namespace

std::unique_ptr<api::transactional_producer> make_upstream_txn_producer(
    const std::map<std::string, std::string>& props, const std::string& transactional_id) {
    return std::make_unique<upstream_txn_producer>(props, transactional_id);
}

}  // namespace sluice::backend::upstream
