#include "backend/upstream/upstream_txn_producer.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
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
            unfinished_ = unfinished::abort;
            if (auto a = finish(steady_clock::now() + milliseconds(10000)); !a) {
                if (api::reason(a.error().code) == api::errc::producer_fenced) {
                    err.code = a.error().code;
                }
            }
        }
        return api::backend_failure(std::move(err));
    }

    /// Ends a commit or an abort that an earlier call left unfinished (its wait timed out:
    /// librdkafka goes on with it in the background, and refuses to begin another
    /// transaction until the same call is made again), by `deadline`. An error while it
    /// cannot end yet (the next transaction tries again).
    api::backend_result<void> finish(steady_clock::time_point deadline) {
        rd_kafka_t* rk = handle_.get();
        std::optional<api::backend_error> outcome;  // the error to answer once ended
        while (unfinished_ != unfinished::none) {
            const bool committing = unfinished_ == unfinished::commit;
            const auto left = std::chrono::duration_cast<milliseconds>(deadline -
                                                                       steady_clock::now());
            const int wait = static_cast<int>(std::max<std::int64_t>(left.count(), 1));
            rd_kafka_error_t* e = committing ? rd_kafka_commit_transaction(rk, wait)
                                             : rd_kafka_abort_transaction(rk, wait);
            if (!e) {
                unfinished_ = unfinished::none;
                break;
            }
            const bool fatal = rd_kafka_error_is_fatal(e);
            const bool retriable = rd_kafka_error_is_retriable(e);
            const bool abort = rd_kafka_error_txn_requires_abort(e);
            auto err = txn_error(e, fatal);
            rd_kafka_error_destroy(e);
            if (fatal) {
                fatal_.store(true);
                unfinished_ = unfinished::none;
                return api::backend_failure(std::move(err));
            }
            if (retriable) {
                // Still under way (a coordinator not reachable yet): asked again while time
                // is left, else by the next transaction.
                if (steady_clock::now() < deadline) {
                    continue;
                }
                if (!reported_unfinished_) {
                    reported_unfinished_ = true;
                    upstream_log().warn("transactional id {}: the {} of a transaction did not "
                                        "end in time ({}); the next transaction ends it first",
                                        id_, committing ? "commit" : "abort", err.message);
                }
                return api::backend_failure(std::move(err));
            }
            if (!outcome) {
                outcome = err;
            }
            // A commit that failed so leaves the transaction to abort; anything else leaves
            // nothing to end.
            unfinished_ = committing && abort ? unfinished::abort : unfinished::none;
        }
        if (reported_unfinished_) {
            reported_unfinished_ = false;
            upstream_log().info("transactional id {}: the unfinished transaction ended", id_);
        }
        if (outcome) {
            return api::backend_failure(std::move(*outcome));
        }
        return {};
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
        // What an earlier call left unfinished ends first; how it ended (committed or
        // aborted) is that call's business (its caller sent the records again).
        if (auto ended = finish(deadline);
            !ended && (fatal_.load() || unfinished_ != unfinished::none)) {
            return ended;
        }
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
                unfinished_ = unfinished::abort;
                if (auto a = finish(steady_clock::now() + milliseconds(10000)); !a) {
                    if (api::reason(a.error().code) == api::errc::producer_fenced) {
                        err.code = a.error().code;
                    }
                }
                return api::backend_failure(std::move(err));
            }
        }
        // A retriable commit (a timeout) is asked again while time is left: the commit may
        // have been sent already, and only commit_transaction again tells. Past the deadline
        // it stays unfinished: the next transaction ends it first (this one's records are
        // then committed, or aborted, and the caller's retry writes them again either way).
        unfinished_ = unfinished::commit;
        return finish(deadline);
    }

    std::string id_;
    // A thread of its own: its calls are serial, and behind the client's shared pool of
    // blocking calls (consumers' offset lookups and commits) every commit waited its turn
    // (receive+delete through one gateway ran at a quarter of its rate).
    blocking_pool pool_{1};
    handle_ptr handle_;
    std::atomic<bool> fatal_{false};
    // A commit or abort whose wait ended before it did (on the pool's one thread only).
    enum class unfinished { none, commit, abort };
    unfinished unfinished_ = unfinished::none;
    bool reported_unfinished_ = false;
};

}  // namespace

std::unique_ptr<api::transactional_producer> make_upstream_txn_producer(
    const std::map<std::string, std::string>& props, const std::string& transactional_id) {
    return std::make_unique<upstream_txn_producer>(props, transactional_id);
}

}  // namespace sluice::backend::upstream
