#include "backend/group/consumer_records.h"

namespace sluice::backend::group {

member_metadata metadata_of(const consumer_member& m) {
    member_metadata v;
    v.instance_id = m.instance_id;
    v.rack_id = m.rack_id;
    v.client_id = m.client_id;
    v.client_host = m.client_host;
    v.subscribed_topic_names = m.subscribed_topic_names;
    // "" means no pattern in memory (a member that dropped its pattern); Kafka writes null.
    if (m.subscribed_topic_regex && !m.subscribed_topic_regex->empty()) {
        v.subscribed_topic_regex = m.subscribed_topic_regex;
    }
    v.rebalance_timeout_ms = m.rebalance_timeout_ms;
    v.server_assignor = m.server_assignor;
    return v;
}

member_assignment assignment_of(const consumer_member& m) {
    return {m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation};
}

encoded_record group_epoch_record(const consumer_group& g) {
    return consumer_group_record(record_type::consumer_group_metadata, g.id(),
                                 encode_epoch_value(g.group_epoch()));
}

encoded_record partition_metadata_record(const consumer_group& g) {
    return consumer_group_record(record_type::consumer_group_partition_metadata, g.id(),
                                 encode_partition_metadata_value(g.subscription_metadata()));
}

encoded_record target_epoch_record(const consumer_group& g) {
    return consumer_group_record(record_type::consumer_group_target_assignment_metadata, g.id(),
                                 encode_epoch_value(g.assignment_epoch()));
}

encoded_record member_metadata_record(const std::string& group, const consumer_member& m) {
    return consumer_member_record(record_type::consumer_group_member_metadata, group, m.member_id,
                                  encode_member_metadata_value(metadata_of(m)));
}

encoded_record member_target_record(const consumer_group& g, const std::string& member_id) {
    std::optional<std::vector<std::byte>> value;
    if (auto it = g.target_assignment().find(member_id); it != g.target_assignment().end()) {
        value = encode_target_assignment_value(it->second);
    }
    return consumer_member_record(record_type::consumer_group_target_assignment_member, g.id(),
                                  member_id, std::move(value));
}

encoded_record member_assignment_record(const std::string& group, const consumer_member& m) {
    return consumer_member_record(record_type::consumer_group_current_member_assignment, group,
                                  m.member_id, encode_member_assignment_value(assignment_of(m)));
}

void add_member_tombstones(std::vector<encoded_record>& out, const std::string& group,
                           const std::string& member_id) {
    for (auto type : {record_type::consumer_group_current_member_assignment,
                      record_type::consumer_group_target_assignment_member,
                      record_type::consumer_group_member_metadata}) {
        out.push_back(consumer_member_record(type, group, member_id, std::nullopt));
    }
}

std::vector<encoded_record> consumer_group_snapshot(const consumer_group& g) {
    std::vector<encoded_record> out;
    for (const auto& [_, m] : g.members()) {
        out.push_back(member_metadata_record(g.id(), m));
    }
    out.push_back(partition_metadata_record(g));
    out.push_back(group_epoch_record(g));
    for (const auto& [id, _] : g.target_assignment()) {
        out.push_back(member_target_record(g, id));
    }
    out.push_back(target_epoch_record(g));
    for (const auto& [_, m] : g.members()) {
        out.push_back(member_assignment_record(g.id(), m));
    }
    return out;
}

std::vector<encoded_record> consumer_group_tombstones(const consumer_group& g) {
    std::vector<encoded_record> out;
    for (const auto& [id, _] : g.members()) {
        out.push_back(consumer_member_record(record_type::consumer_group_current_member_assignment,
                                             g.id(), id, std::nullopt));
    }
    for (const auto& [id, _] : g.target_assignment()) {
        out.push_back(consumer_member_record(record_type::consumer_group_target_assignment_member,
                                             g.id(), id, std::nullopt));
    }
    out.push_back(consumer_group_record(record_type::consumer_group_target_assignment_metadata,
                                        g.id(), std::nullopt));
    for (const auto& [id, _] : g.members()) {
        out.push_back(consumer_member_record(record_type::consumer_group_member_metadata, g.id(),
                                             id, std::nullopt));
    }
    out.push_back(consumer_group_record(record_type::consumer_group_partition_metadata, g.id(),
                                        std::nullopt));
    out.push_back(
        consumer_group_record(record_type::consumer_group_metadata, g.id(), std::nullopt));
    return out;
}

void apply_member_metadata(consumer_group& g, const std::string& member_id,
                           const member_metadata& v) {
    consumer_member m;
    if (const auto* existing = g.member(member_id)) {
        m = *existing;
    }
    m.member_id = member_id;
    m.instance_id = v.instance_id;
    m.rack_id = v.rack_id;
    m.client_id = v.client_id;
    m.client_host = v.client_host;
    m.subscribed_topic_names = v.subscribed_topic_names;
    m.subscribed_topic_regex = v.subscribed_topic_regex;
    m.rebalance_timeout_ms = v.rebalance_timeout_ms;
    m.server_assignor = v.server_assignor;
    g.upsert(std::move(m));
}

void apply_member_assignment(consumer_group& g, const std::string& member_id,
                             const member_assignment& v) {
    consumer_member m;
    if (const auto* existing = g.member(member_id)) {
        m = *existing;
    }
    m.member_id = member_id;
    m.member_epoch = v.member_epoch;
    m.previous_member_epoch = v.previous_member_epoch;
    m.state = v.state;
    m.assigned = v.assigned;
    m.pending_revocation = v.pending_revocation;
    g.upsert(std::move(m));
}

}  // namespace sluice::backend::group
