// A fake of backend/api for the fronts' unit tests (owned by tests/gateway): topics, records,
// groups and queues in memory, so that a test drives a REST route, the WebSocket session or an
// SQS action and checks what the front answered and what it asked the backend, without the log.
//
//   test --script--> fake_script  (fail the next call of a kind with an api::errc and message,
//                      |           delay it, read back every call made with its arguments)
//   front --calls--> fake_topics / fake_records / fake_groups / fake_queues --> fake_state
//
// It implements the interfaces of backend/api only (scripts/check-includes: nothing native).
// What it models is what a front can observe, kept simple:
// - topics: create (validate_only, duplicates, partition counts), describe, list, configs;
// - records: produce appends the batches as they come (base offsets rewritten) and decodes
//   their records for the test; fetch answers stored batches, and waits (polling its own
//   timer) up to max_wait when nothing is there; list_offsets earliest, latest and by time;
// - groups: classic groups without a rebalance barrier: each join makes a new generation whose
//   leader is the first member, sync hands out the leader's assignments; committed offsets;
// - queues: messages in send order; receive takes visible ones into flight with a new receipt
//   handle, delete and change_visibility act on handles. No clock: an in-flight message becomes
//   visible again only through change_visibility with timeout 0; long polls answer at once.
// Transactions are not faked: no front under test uses them.
//
// Concurrency: not thread-safe. Everything runs on one io_context driven by one thread (the
// test's); delays and fetch waits use timers of the caller's executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/api/backend.h"
#include "backend/api/queues.h"

namespace sluice::gateway::testing {

namespace api = backend::api;

/// The one place the fake builds a backend error: the shape backend/api gives errors (an
/// backend_error: code and client message; per-partition calls use its code alone).
api::backend_error scripted_error(api::errc e, std::string message = {});

/// Every call of the fake, by the interface method's name.
enum class fake_call {
    // topics
    describe_topic,
    list_topics,
    create_topic,
    remove_topic,
    create_partitions,
    describe_configs,
    replace_configs,
    alter_configs,
    describe_storage,
    // records
    produce,
    fetch,
    list_offsets,
    delete_records,
    // groups
    join_group,
    sync_group,
    heartbeat,
    leave_group,
    consumer_heartbeat,
    commit_offsets,
    fetch_offsets,
    delete_offsets,
    delete_groups,
    list_groups,
    describe_groups,
    describe_consumer_groups,
    // queues
    create_queue,
    get_queue,
    list_queues,
    delete_queue,
    get_attributes,
    set_attributes,
    purge_queue,
    tag_queue,
    untag_queue,
    list_tags,
    add_permission,
    remove_permission,
    dead_letter_source_queues,
    send_messages,
    receive_messages,
    delete_messages,
    change_visibility,
    start_message_move_task,
    list_message_move_tasks,
    cancel_message_move_task,
};

std::string_view to_string(fake_call c);

/// One call the fake received: which, and its arguments in words ("orders p0 offset 3").
struct call_record {
    fake_call call;
    std::string args;
};

/// What a test scripts, and the log of what the fronts called.
class fake_script {
public:
    /// The next `times` calls of `c` fail with `e` and `message`. Calls with an error channel
    /// answer it (admin_result, result, a top-level error_code); calls answering per partition
    /// or per message put it on every partition or message; describe(topic) answers "no such
    /// topic"; list calls answer empty.
    void fail_next(fake_call c, api::errc e, std::string message = {}, int times = 1);
    /// The next `times` calls of `c` answer after `d` (a timer on the caller's executor).
    void delay_next(fake_call c, std::chrono::milliseconds d, int times = 1);

    const std::vector<call_record>& calls() const { return calls_; }
    std::size_t count(fake_call c) const;
    /// The arguments of every call of `c`, in order.
    std::vector<std::string> args_of(fake_call c) const;
    void clear_calls() { calls_.clear(); }

    // Used by the fake itself.
    void record(fake_call c, std::string args) { calls_.push_back({c, std::move(args)}); }
    std::optional<api::backend_error> take_failure(fake_call c);
    std::chrono::milliseconds take_delay(fake_call c);

private:
    struct scripted {
        api::backend_error error;
        int times = 0;
    };
    std::map<fake_call, std::deque<scripted>> failures_;
    std::map<fake_call, std::deque<std::pair<std::chrono::milliseconds, int>>> delays_;
    std::vector<call_record> calls_;
};

/// A record as a produce call carried it (decoded from its batch), for the test to check.
struct produced_copy {
    topic_name topic;
    partition_id partition;
    std::int64_t offset = -1;
    std::int64_t timestamp = -1;
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

/// A queue message as the fake keeps it.
struct fake_message {
    std::string message_id;
    api::outgoing_message sent;
    std::int64_t sent_timestamp_ms = 0;
    std::int32_t receive_count = 0;
    std::string receipt_handle;  // of the last receive; empty: never received
    bool in_flight = false;
    std::optional<std::string> sequence_number;
};

struct fake_queue {
    api::attribute_map attributes;
    api::attribute_map tags;
    std::deque<fake_message> messages;
};

/// The fake's whole state; tests may read and change it directly (seed topics, queues, ...).
struct fake_state {
    struct stored_batch {
        std::int64_t base = 0;
        std::int64_t last = 0;
        std::int64_t max_timestamp = -1;
        std::vector<std::byte> bytes;
    };
    struct partition {
        std::int64_t log_start = 0;
        std::int64_t next = 0;
        std::vector<stored_batch> batches;
    };
    struct topic {
        api::topic_description description;
        std::vector<partition> partitions;
    };
    struct member {
        std::string member_id;
        std::vector<api::protocol_metadata> protocols;
        std::vector<std::byte> assignment;
    };
    struct group {
        std::int32_t generation = 0;
        std::string protocol_type;
        std::string protocol;
        std::vector<member> members;  // the first is the leader
        std::map<std::pair<topic_name, partition_id>, std::int64_t> committed;
    };

    std::map<topic_name, topic> topics;
    std::map<group_id, group> groups;
    std::map<api::queue_name, fake_queue> queues;
    std::vector<api::move_task> move_tasks;

    // What the fronts asked for, with their arguments (beside fake_script's call log).
    std::vector<produced_copy> produced;
    std::vector<api::produce_request> produce_requests;  // batches' spans not kept valid
    std::vector<api::fetch_request> fetch_requests;
    std::vector<api::offset_query> offset_queries;
    std::vector<api::offset_commit_request> commits;
    std::vector<std::pair<api::queue_name, api::outgoing_message>> sent;
    std::vector<api::receive_request> receives;
    std::vector<std::pair<api::queue_name, std::string>> deleted_handles;
    std::vector<std::pair<api::queue_name, api::visibility_change>> visibility_changes;
    /// A message sent with this body is refused with the error (per message; the others of
    /// the call go through), for batch answers with partial failures.
    std::map<std::string, api::backend_error> refused_bodies;

    std::int64_t next_id = 1;
    std::string region = "us-east-1";
    std::string account = "000000000000";
    std::string arn(const std::string& queue) const {
        return "arn:aws:sqs:" + region + ":" + account + ":" + queue;
    }
};

class fake_topics final : public api::topics {
public:
    fake_topics(fake_state& s, fake_script& script) : s_(s), script_(script) {}

    api::awaitable<std::optional<api::topic_description>> describe(topic_name name) override;
    api::awaitable<std::optional<api::topic_description>> describe(uuid id) override;
    api::awaitable<std::vector<api::topic_description>> list() override;
    api::awaitable<api::backend_result<api::created_topic>> create(api::new_topic spec) override;
    api::awaitable<api::backend_result<void>> remove(topic_name name) override;
    api::awaitable<api::backend_result<void>> create_partitions(topic_name name, std::int32_t total,
                                                              bool validate_only) override;
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_configs(
        topic_name name) override;
    api::awaitable<api::backend_result<void>> replace_configs(
        topic_name name, std::map<std::string, std::string> configs, bool validate_only) override;
    api::awaitable<api::backend_result<void>> alter_configs(topic_name name,
                                                          std::vector<api::config_change> changes,
                                                          bool validate_only) override;
    std::vector<api::config_entry> backend_configs() const override { return {}; }
    std::vector<std::string> dynamic_config_names() const override { return {}; }
    api::backend_result<void> set_dynamic_configs(api::dynamic_broker_configs,
                                                bool) override {
        return {};
    }
    api::awaitable<void> apply_dynamic_configs() override { co_return; }
    std::vector<api::partition_state> partition_states() const override;
    api::awaitable<api::storage_description> describe_storage(
        std::vector<topic_name> topics) override;

private:
    fake_state& s_;
    fake_script& script_;
};

class fake_records final : public api::records {
public:
    fake_records(fake_state& s, fake_script& script) : s_(s), script_(script) {}

    api::awaitable<api::produce_result> produce(api::produce_request req) override;
    api::awaitable<api::fetch_result> fetch(api::fetch_request req) override;
    api::awaitable<std::vector<api::found_offset>> list_offsets(
        std::vector<api::offset_query> queries, api::isolation isolation) override;
    api::awaitable<std::vector<api::backend_result<offset>>> delete_records(
        std::vector<api::delete_records_request> reqs) override;
    std::int64_t parked_fetches() const override { return parked_; }

private:
    api::fetch_result fetch_now(const api::fetch_request& req, std::int64_t& bytes) const;

    fake_state& s_;
    fake_script& script_;
    std::int64_t parked_ = 0;
};

class fake_groups final : public api::groups {
public:
    fake_groups(fake_state& s, fake_script& script) : s_(s), script_(script) {}

    bool loaded() const override { return true; }
    api::awaitable<api::join_group_result> join_group(api::join_group_request req) override;
    api::awaitable<api::sync_group_result> sync_group(api::sync_group_request req) override;
    api::awaitable<api::backend_result<void>> heartbeat(api::heartbeat_request req) override;
    api::awaitable<api::leave_group_result> leave_group(
        group_id group, std::vector<api::leave_member> members) override;
    api::awaitable<api::consumer_heartbeat_result> consumer_heartbeat(
        api::consumer_heartbeat_request req) override;
    api::awaitable<api::offset_commit_result> commit_offsets(
        api::offset_commit_request req) override;
    api::awaitable<std::vector<api::offset_fetch_result>> fetch_offsets(
        std::vector<api::offset_fetch_request> reqs) override;
    api::awaitable<api::offset_delete_result> delete_offsets(
        group_id group, std::vector<api::topic_partition_list> topics) override;
    api::awaitable<std::vector<api::group_deletion>> delete_groups(
        std::vector<group_id> ids) override;
    api::awaitable<std::vector<api::listed_group>> list_groups(
        std::vector<std::string> states, std::vector<std::string> types) override;
    api::awaitable<std::vector<api::described_group>> describe_groups(
        std::vector<group_id> ids) override;
    api::awaitable<std::vector<api::consumer_group_description>> describe_consumer_groups(
        std::vector<group_id> ids) override;
    std::vector<api::group_view> view_groups() override;
    std::optional<api::group_view> view_group(const group_id& id) override;
    api::group_counters counters() const override { return counters_; }
    api::backend_result<void> set_group_configs(const group_id&, std::map<std::string, std::string>,
                                              bool) override {
        return {};
    }
    std::vector<api::config_entry> describe_group_configs(const group_id&) const override {
        return {};
    }

private:
    fake_state& s_;
    fake_script& script_;
    api::group_counters counters_;
};

class fake_queues final : public api::queues {
public:
    fake_queues(fake_state& s, fake_script& script) : s_(s), script_(script) {}

    api::awaitable<api::backend_result<api::queue_name>> create_queue(
        api::queue_name name, api::attribute_map attributes, api::attribute_map tags) override;
    api::awaitable<api::backend_result<api::queue_name>> get_queue(api::queue_name name) override;
    api::awaitable<std::vector<api::queue_name>> list_queues(std::string prefix) override;
    api::awaitable<api::backend_result<void>> delete_queue(api::queue_name name) override;
    api::awaitable<api::backend_result<api::attribute_map>> get_attributes(
        api::queue_name name, std::vector<std::string> attribute_names) override;
    api::awaitable<api::backend_result<void>> set_attributes(api::queue_name name,
                                                           api::attribute_map attributes) override;
    api::awaitable<api::backend_result<void>> purge_queue(api::queue_name name) override;
    api::awaitable<api::backend_result<void>> tag_queue(api::queue_name name,
                                                      api::attribute_map tags) override;
    api::awaitable<api::backend_result<void>> untag_queue(api::queue_name name,
                                                        std::vector<std::string> keys) override;
    api::awaitable<api::backend_result<api::attribute_map>> list_tags(api::queue_name name) override;
    api::awaitable<api::backend_result<void>> add_permission(
        api::queue_name name, std::string label, std::vector<std::string> accounts,
        std::vector<std::string> actions) override;
    api::awaitable<api::backend_result<void>> remove_permission(api::queue_name name,
                                                              std::string label) override;
    api::awaitable<api::backend_result<std::vector<api::queue_name>>> dead_letter_source_queues(
        api::queue_name name) override;
    api::awaitable<api::backend_result<std::vector<api::sent_message>>> send_messages(
        api::queue_name name, std::vector<api::outgoing_message> messages) override;
    api::awaitable<api::backend_result<std::vector<api::received_message>>> receive_messages(
        api::receive_request req) override;
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> delete_messages(
        api::queue_name name, std::vector<std::string> receipt_handles) override;
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> change_visibility(
        api::queue_name name, std::vector<api::visibility_change> changes) override;
    api::awaitable<api::backend_result<std::string>> start_message_move_task(
        std::string source_arn, std::optional<std::string> destination_arn,
        std::optional<std::int32_t> max_per_second) override;
    api::awaitable<api::backend_result<std::vector<api::move_task>>> list_message_move_tasks(
        std::string source_arn, std::int32_t max_results) override;
    api::awaitable<api::backend_result<std::int64_t>> cancel_message_move_task(
        std::string task_handle) override;
    std::optional<api::move_task> find_message_move_task(
        const std::string& task_handle) const override;
    std::vector<api::queue_view> view_queues() const override;

private:
    /// The queue, or the queue_does_not_exist error.
    api::backend_result<fake_queue*> find(const api::queue_name& name);

    fake_state& s_;
    fake_script& script_;
};

/// The whole fake: a backend (topics, records, groups) plus queues, over one state and script.
class fake_backend final : public api::backend {
public:
    fake_backend() = default;
    fake_backend(const fake_backend&) = delete;
    fake_backend& operator=(const fake_backend&) = delete;

    api::topics& topics() override { return topics_; }
    api::records& records() override { return records_; }
    api::groups& groups() override { return groups_; }
    api::queues& queues() { return queues_; }
    void start(boost::asio::any_io_executor) override {}
    void stop() override {}
    void close() override {}

    fake_state& state() { return state_; }
    fake_script& script() { return script_; }

    /// Seeds a topic (no call recorded).
    void add_topic(std::string name, std::int32_t partitions, bool internal = false);
    /// Seeds a queue (its topic too).
    void add_queue(std::string name, api::attribute_map attributes = {});

private:
    fake_state state_;
    fake_script script_;
    fake_topics topics_{state_, script_};
    fake_records records_{state_, script_};
    fake_groups groups_{state_, script_};
    fake_queues queues_{state_, script_};
};

}  // namespace sluice::gateway::testing
