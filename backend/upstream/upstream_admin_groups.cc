// api::admin's offsets, records and groups over librdkafka (the rest: upstream_admin.cc).
#include "backend/upstream/upstream_admin.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/upstream/upstream_admin_request.h"
#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

using std::chrono::milliseconds;

api::group_view::partition group_lag_of(const rd_kafka_topic_partition_t& committed,
                                        std::int64_t high_watermark) {
    api::group_view::partition p;
    p.topic = topic_name(committed.topic);
    p.partition = partition_id(committed.partition);
    p.committed = offset(committed.offset >= 0 ? committed.offset : -1);
    p.log_end = offset(high_watermark);
    if (p.committed.value >= 0 && high_watermark >= 0) {
        p.lag = std::max<std::int64_t>(0, high_watermark - p.committed.value);
    }
    if (committed.metadata && committed.metadata_size > 0) {
        p.metadata =
            std::string(static_cast<const char*>(committed.metadata), committed.metadata_size);
    }
    return p;
}

/// Blocking: ListConsumerGroupOffsets of `group` (every committed partition when `parts` is
/// null).
api::backend_result<rk_partitions_ptr> fetch_group_offsets(
    rd_kafka_t* rk, const std::string& group, const rd_kafka_topic_partition_list_t* parts,
    milliseconds timeout) {
    rd_kafka_ListConsumerGroupOffsets_t* req =
        rd_kafka_ListConsumerGroupOffsets_new(group.c_str(), parts);
    auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS, timeout,
                                          false, [&](auto* options, auto* queue) {
                                              rd_kafka_ListConsumerGroupOffsets(rk, &req, 1,
                                                                                options, queue);
                                          });
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    if (!ev) {
        return api::backend_failure(admin_detail::timed_out("ListConsumerGroupOffsets", timeout));
    }
    if (auto e = admin_detail::event_error(ev.get())) {
        return api::backend_failure(std::move(e));
    }
    size_t n = 0;
    const auto* result = rd_kafka_event_ListConsumerGroupOffsets_result(ev.get());
    const rd_kafka_group_result_t** groups =
        result ? rd_kafka_ListConsumerGroupOffsets_result_groups(result, &n) : nullptr;
    if (n == 0) {
        return rk_partitions_ptr(rd_kafka_topic_partition_list_new(0));
    }
    if (auto e = admin_detail::error_of(rd_kafka_group_result_error(groups[0]))) {
        return api::backend_failure(std::move(e));
    }
    const auto* list = rd_kafka_group_result_partitions(groups[0]);
    return rk_partitions_ptr(list ? rd_kafka_topic_partition_list_copy(list)
                                  : rd_kafka_topic_partition_list_new(0));
}

}  // namespace

// --- offsets and records --------------------------------------------------------------------

api::awaitable<std::vector<api::found_offset>> upstream_admin::list_offsets(
    std::vector<api::offset_query> queries, api::isolation) {
    std::vector<api::found_offset> out(queries.size());
    // Unknown topics and partitions fail fast from the producer's metadata cache, instead of
    // librdkafka waiting for a leader that will not come.
    std::map<std::string, std::int32_t> counts;
    for (const auto& q : queries) {
        if (!counts.contains(q.topic.value)) {
            auto c = co_await producer_.partitions(q.topic);
            counts[q.topic.value] = c ? *c : -1;
        }
    }
    // Earliest (-2), latest (-1) and timestamps, all with offsets_for_times (ListOffsets), in
    // rounds that ask each partition once (it answers a list keyed by partition).
    // rd_kafka_query_watermark_offsets is not used: once the leader is known it waits for its
    // answer without a bound of its own (up to socket.timeout.ms with the broker gone), and a
    // client's close waited for it. compat: 2.0.2 has no ListOffsets with an isolation level,
    // so a read_committed `latest` is the handle's (the high watermark).
    std::vector<std::size_t> by_time;
    std::vector<std::int64_t> at(queries.size(), 0);  // the timestamp each query asks for
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const auto& q = queries[i];
        const auto count = counts[q.topic.value];
        if (count < 0 || q.partition.value < 0 || q.partition.value >= count) {
            out[i].error = api::backend_error(
                api::make_error_code(api::errc::unknown_topic_or_partition),
                count < 0 ? fmt::format("topic '{}' does not exist", q.topic.value)
                          : fmt::format("topic '{}' has no partition {}", q.topic.value,
                                        q.partition.value));
            continue;
        }
        switch (q.spec.what) {
            case api::offset_spec::kind::earliest:
            case api::offset_spec::kind::earliest_local:
                at[i] = RD_KAFKA_OFFSET_BEGINNING;
                by_time.push_back(i);
                break;
            case api::offset_spec::kind::latest:
                at[i] = RD_KAFKA_OFFSET_END;
                by_time.push_back(i);
                break;
            case api::offset_spec::kind::timestamp:
                at[i] = q.spec.timestamp_ms;
                by_time.push_back(i);
                break;
            case api::offset_spec::kind::latest_tiered:
                break;  // no tiered storage: no such offset (-1)
            case api::offset_spec::kind::max_timestamp:
                out[i].error = api::backend_error(
                    api::make_error_code(api::errc::unsupported),
                    "max_timestamp offsets need ListOffsets v7, which librdkafka 2.0.2 lacks");
                break;
        }
    }
    if (!by_time.empty()) {
        auto blocking_job = [&, rk = rk_, timeout = timeout_] {
            std::vector<std::size_t> pending = by_time;
            while (!pending.empty()) {
                rk_partitions_ptr list(
                    rd_kafka_topic_partition_list_new(static_cast<int>(pending.size())));
                std::vector<std::size_t> round;
                std::vector<std::size_t> later;
                for (auto i : pending) {
                    const auto& q = queries[i];
                    if (rd_kafka_topic_partition_list_find(list.get(), q.topic.value.c_str(),
                                                           q.partition.value)) {
                        later.push_back(i);
                        continue;
                    }
                    rd_kafka_topic_partition_list_add(list.get(), q.topic.value.c_str(),
                                                      q.partition.value);
                    round.push_back(i);
                }
                const auto err = ask_in_slices(timeout, [&](int ms) {
                    for (auto i : round) {  // asked again: an answer overwrote them
                        const auto& q = queries[i];
                        rd_kafka_topic_partition_list_find(list.get(), q.topic.value.c_str(),
                                                           q.partition.value)
                            ->offset = at[i];
                    }
                    return rd_kafka_offsets_for_times(rk, list.get(), ms);
                });
                for (auto i : round) {
                    const auto& q = queries[i];
                    const auto* p = rd_kafka_topic_partition_list_find(
                        list.get(), q.topic.value.c_str(), q.partition.value);
                    if (err) {
                        out[i].error = to_backend_error(err);
                    } else if (!p || p->err) {
                        out[i].error =
                            to_backend_error(p ? p->err : RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
                    } else {
                        out[i].off = offset(p->offset);
                    }
                }
                pending = std::move(later);
            }
            return 0;
        };
        co_await run_blocking(pool_, std::move(blocking_job));
    }
    for (const auto& f : out) {
        monitor_.count_error(f.error);
    }
    co_return out;
}

api::awaitable<std::vector<api::backend_result<offset>>> upstream_admin::delete_records(
    std::vector<api::delete_records_request> reqs) {
    using answer = std::vector<api::backend_result<offset>>;
    auto blocking_job = [rk = rk_, timeout = timeout_, reqs]() -> answer {
        answer out;
        rk_partitions_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(reqs.size())));
        for (const auto& q : reqs) {
            rd_kafka_topic_partition_list_add(list.get(), q.topic.value.c_str(), q.partition.value)
                ->offset = q.before.value < 0 ? RD_KAFKA_OFFSET_END : q.before.value;
        }
        rd_kafka_DeleteRecords_t* del = rd_kafka_DeleteRecords_new(list.get());
        auto ev = admin_detail::admin_request(
            rk, RD_KAFKA_ADMIN_OP_DELETERECORDS, timeout, false, [&](auto* options, auto* queue) {
                rd_kafka_DeleteRecords(rk, &del, 1, options, queue);
            });
        rd_kafka_DeleteRecords_destroy(del);
        api::backend_error call_error;
        if (!ev) {
            call_error = admin_detail::timed_out("DeleteRecords", timeout);
        } else {
            call_error = admin_detail::event_error(ev.get());
        }
        const rd_kafka_topic_partition_list_t* answered = nullptr;
        if (!call_error) {
            const auto* result = rd_kafka_event_DeleteRecords_result(ev.get());
            answered = result ? rd_kafka_DeleteRecords_result_offsets(result) : nullptr;
        }
        for (const auto& q : reqs) {
            if (call_error) {
                out.push_back(api::backend_failure(call_error));
                continue;
            }
            const rd_kafka_topic_partition_t* p =
                answered ? rd_kafka_topic_partition_list_find(answered, q.topic.value.c_str(),
                                                              q.partition.value)
                         : nullptr;
            if (!p) {
                out.push_back(api::backend_failure(api::make_error_code(api::errc::unknown),
                                                   fmt::format("DeleteRecords did not answer {}-{}",
                                                               q.topic.value, q.partition.value)));
            } else if (p->err) {
                out.push_back(api::backend_failure(to_backend_error(p->err)));
            } else {
                out.push_back(offset(p->offset));
            }
        }
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    for (const auto& one : r) {
        if (!one) {
            monitor_.count_error(one.error());
        }
    }
    co_return r;
}

// --- groups --------------------------------------------------------------------------------

api::awaitable<api::backend_result<std::vector<api::listed_group>>> upstream_admin::list_groups() {
    auto blocking_job =
        [rk = rk_, timeout = timeout_]() -> api::backend_result<std::vector<api::listed_group>> {
        auto ev = admin_detail::admin_request(
            rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, timeout, false,
            [&](auto* options, auto* queue) { rd_kafka_ListConsumerGroups(rk, options, queue); });
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("ListGroups", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        const auto* result = rd_kafka_event_ListConsumerGroups_result(ev.get());
        if (!result) {
            return std::vector<api::listed_group>{};
        }
        size_t n_errors = 0;
        const rd_kafka_error_t** errors =
            rd_kafka_ListConsumerGroups_result_errors(result, &n_errors);
        size_t n = 0;
        const rd_kafka_ConsumerGroupListing_t** valid =
            rd_kafka_ListConsumerGroups_result_valid(result, &n);
        if (n == 0 && n_errors > 0) {
            return api::backend_failure(admin_detail::error_of(errors[0]));  // no broker answered
        }
        std::vector<api::listed_group> out;
        for (size_t i = 0; i < n; ++i) {
            api::listed_group g;
            g.group_id = group_id(rd_kafka_ConsumerGroupListing_group_id(valid[i]));
            g.protocol_type =
                rd_kafka_ConsumerGroupListing_is_simple_consumer_group(valid[i]) ? "" : "consumer";
            g.state =
                rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupListing_state(valid[i]));
            g.type = "classic";
            out.push_back(std::move(g));
        }
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<api::group_view>> upstream_admin::describe_group(group_id id) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         g = id.value]() -> api::backend_result<api::group_view> {
        const char* names[] = {g.c_str()};
        auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout,
                                              false, [&](auto* options, auto* queue) {
                                                  rd_kafka_DescribeConsumerGroups(rk, names, 1,
                                                                                  options, queue);
                                              });
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("DescribeGroups", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_DescribeConsumerGroups_result(ev.get());
        const rd_kafka_ConsumerGroupDescription_t** groups =
            result ? rd_kafka_DescribeConsumerGroups_result_groups(result, &n) : nullptr;
        const auto not_found = [&] {
            return api::backend_failure(api::make_error_code(api::errc::group_id_not_found),
                                        fmt::format("group '{}' does not exist", g));
        };
        if (n == 0) {
            return not_found();
        }
        const auto* desc = groups[0];
        if (auto e = admin_detail::error_of(rd_kafka_ConsumerGroupDescription_error(desc))) {
            return api::backend_failure(std::move(e));
        }
        const auto state = rd_kafka_ConsumerGroupDescription_state(desc);
        if (state == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD) {
            return not_found();  // Kafka describes an unknown group as Dead
        }
        api::group_view view;
        view.group_id = group_id(g);
        view.type = "classic";
        view.state = rd_kafka_consumer_group_state_name(state);
        view.protocol_type =
            rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(desc) ? "" : "consumer";
        if (const char* a = rd_kafka_ConsumerGroupDescription_partition_assignor(desc)) {
            view.protocol = a;
        }
        const size_t members = rd_kafka_ConsumerGroupDescription_member_count(desc);
        for (size_t m = 0; m < members; ++m) {
            const auto* md = rd_kafka_ConsumerGroupDescription_member(desc, m);
            api::group_view::member mv;
            mv.member_id = rd_kafka_MemberDescription_consumer_id(md);
            mv.instance_id =
                admin_detail::optional_string(rd_kafka_MemberDescription_group_instance_id(md));
            mv.client_id = rd_kafka_MemberDescription_client_id(md);
            mv.client_host = rd_kafka_MemberDescription_host(md);
            if (const auto* a = rd_kafka_MemberDescription_assignment(md)) {
                if (const auto* parts = rd_kafka_MemberAssignment_partitions(a)) {
                    for (int p = 0; p < parts->cnt; ++p) {
                        mv.assignment[topic_name(parts->elems[p].topic)].push_back(
                            partition_id(parts->elems[p].partition));
                    }
                }
            }
            for (auto& [t, ps] : mv.assignment) {
                std::sort(ps.begin(), ps.end());
            }
            view.members.push_back(std::move(mv));
        }
        ev.reset();

        auto committed = fetch_group_offsets(rk, g, nullptr, timeout);
        if (!committed) {
            return api::backend_failure(committed.error());
        }
        auto& list = **committed;
        // The log end of each committed partition (-1 when the partition is gone), one
        // ListOffsets for all of them.
        rk_partitions_ptr ends(rd_kafka_topic_partition_list_new(list.cnt));
        for (int i = 0; i < list.cnt; ++i) {
            rd_kafka_topic_partition_list_add(ends.get(), list.elems[i].topic,
                                              list.elems[i].partition);
        }
        auto ask_ends = [&](int ms) {
            for (int i = 0; i < ends->cnt; ++i) {  // asked again: an answer overwrote them
                ends->elems[i].offset = RD_KAFKA_OFFSET_END;
            }
            return rd_kafka_offsets_for_times(rk, ends.get(), ms);
        };
        const auto ends_err =
            list.cnt == 0 ? RD_KAFKA_RESP_ERR_NO_ERROR : ask_in_slices(timeout, ask_ends);
        for (int i = 0; i < list.cnt; ++i) {
            const auto& c = list.elems[i];
            const auto* e =
                rd_kafka_topic_partition_list_find(ends.get(), c.topic, c.partition);
            const std::int64_t high = ends_err || !e || e->err ? -1 : e->offset;
            view.offsets.push_back(group_lag_of(c, high));
        }
        std::sort(view.offsets.begin(), view.offsets.end(), [](const auto& a, const auto& b) {
            return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
        });
        return view;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::delete_group(group_id id) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         g = id.value]() -> api::backend_result<void> {
        rd_kafka_DeleteGroup_t* dg = rd_kafka_DeleteGroup_new(g.c_str());
        auto ev = admin_detail::admin_request(
            rk, RD_KAFKA_ADMIN_OP_DELETEGROUPS, timeout, false,
            [&](auto* options, auto* queue) { rd_kafka_DeleteGroups(rk, &dg, 1, options, queue); });
        rd_kafka_DeleteGroup_destroy(dg);
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("DeleteGroups", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_DeleteGroups_result(ev.get());
        const rd_kafka_group_result_t** groups =
            result ? rd_kafka_DeleteGroups_result_groups(result, &n) : nullptr;
        if (n > 0) {
            if (auto e = admin_detail::error_of(rd_kafka_group_result_error(groups[0]))) {
                return api::backend_failure(std::move(e));
            }
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::committed_offset>>>
upstream_admin::committed_offsets(group_id id, std::vector<api::topic_partition> parts) {
    auto blocking_job =
        [rk = rk_, timeout = timeout_, g = id.value,
         parts = std::move(parts)]() -> api::backend_result<std::vector<api::committed_offset>> {
        rk_partitions_ptr asked;
        if (!parts.empty()) {
            asked.reset(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
            for (const auto& tp : parts) {
                rd_kafka_topic_partition_list_add(asked.get(), tp.topic.value.c_str(),
                                                  tp.partition.value);
            }
        }
        auto committed = fetch_group_offsets(rk, g, asked.get(), timeout);
        if (!committed) {
            return api::backend_failure(committed.error());
        }
        std::vector<api::committed_offset> out;
        const auto& list = **committed;
        for (int i = 0; i < list.cnt; ++i) {
            const auto& p = list.elems[i];
            if (parts.empty() && p.offset < 0) {
                continue;  // "every committed partition"
            }
            api::committed_offset c;
            c.tp = api::topic_partition{topic_name(p.topic), partition_id(p.partition)};
            c.next = offset(p.offset >= 0 ? p.offset : -1);
            if (p.metadata && p.metadata_size > 0) {
                c.metadata = std::string(static_cast<const char*>(p.metadata), p.metadata_size);
            }
            out.push_back(std::move(c));
        }
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tp < b.tp; });
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::alter_committed_offsets(
    group_id id, std::vector<api::offset_commit> offsets) {
    auto blocking_job = [rk = rk_, timeout = timeout_, g = id.value,
                         offsets = std::move(offsets)]() -> api::backend_result<void> {
        rk_partitions_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())));
        for (const auto& c : offsets) {
            auto* p = rd_kafka_topic_partition_list_add(list.get(), c.tp.topic.value.c_str(),
                                                        c.tp.partition.value);
            p->offset = c.next.value;
            if (c.metadata) {
                // The list frees it: librdkafka's own allocator.
                void* copy = rd_kafka_mem_malloc(rk, c.metadata->size() + 1);
                std::memcpy(copy, c.metadata->data(), c.metadata->size());
                p->metadata = copy;
                p->metadata_size = c.metadata->size();
            }
        }
        rd_kafka_AlterConsumerGroupOffsets_t* req =
            rd_kafka_AlterConsumerGroupOffsets_new(g.c_str(), list.get());
        auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS,
                                              timeout, false, [&](auto* options, auto* queue) {
                                                  rd_kafka_AlterConsumerGroupOffsets(
                                                      rk, &req, 1, options, queue);
                                              });
        rd_kafka_AlterConsumerGroupOffsets_destroy(req);
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("OffsetCommit", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_AlterConsumerGroupOffsets_result(ev.get());
        const rd_kafka_group_result_t** groups =
            result ? rd_kafka_AlterConsumerGroupOffsets_result_groups(result, &n) : nullptr;
        if (n == 0) {
            return {};
        }
        if (auto e = admin_detail::error_of(rd_kafka_group_result_error(groups[0]))) {
            return api::backend_failure(std::move(e));
        }
        if (const auto* parts = rd_kafka_group_result_partitions(groups[0])) {
            for (int i = 0; i < parts->cnt; ++i) {
                if (parts->elems[i].err) {
                    return api::backend_failure(to_backend_error(parts->elems[i].err));
                }
            }
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

}  // namespace sluice::backend::upstream
