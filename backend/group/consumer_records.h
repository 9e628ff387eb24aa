// The __consumer_offsets records of one KIP-848 group (owned by backend/group), in Kafka's
// layout (group_records.h): the records consumer_groups appends as a group changes, the whole
// group at once, its tombstones, and how replay applies them to a consumer_group.
//
// A group is kept as Kafka keeps it: the group epoch (key type 3), the topics it subscribes
// to (4), per member its metadata (5), target assignment (7) and current assignment (8), and
// the target assignment's epoch (6). A member that leaves gets tombstones for 8, 7 and 5; a
// deleted group for every record it has. Pure functions; no state, no locks.
#pragma once

#include <string>
#include <vector>

#include "backend/group/consumer_group.h"
#include "backend/group/group_records.h"

namespace sluice::backend::group {

member_metadata metadata_of(const consumer_member& m);
member_assignment assignment_of(const consumer_member& m);

encoded_record group_epoch_record(const consumer_group& g);
encoded_record partition_metadata_record(const consumer_group& g);
encoded_record target_epoch_record(const consumer_group& g);
encoded_record member_metadata_record(const std::string& group, const consumer_member& m);
/// The member's target assignment (its tombstone when the target has no entry for it).
encoded_record member_target_record(const consumer_group& g, const std::string& member_id);
encoded_record member_assignment_record(const std::string& group, const consumer_member& m);
/// What Kafka writes when a member leaves: tombstones of its types 8, 7 and 5.
void add_member_tombstones(std::vector<encoded_record>& out, const std::string& group,
                           const std::string& member_id);

/// Every record of the group, in the order Kafka writes a new group's.
std::vector<encoded_record> consumer_group_snapshot(const consumer_group& g);
/// Tombstones for every record of the group (its deletion, or its turning classic).
std::vector<encoded_record> consumer_group_tombstones(const consumer_group& g);

/// Applies a member's metadata record to the group (replay), creating the member when
/// needed; the member keeps its assignment.
void apply_member_metadata(consumer_group& g, const std::string& member_id,
                           const member_metadata& v);
/// Applies a member's current assignment record (replay), creating the member when needed.
void apply_member_assignment(consumer_group& g, const std::string& member_id,
                             const member_assignment& v);

}  // namespace sluice::backend::group
