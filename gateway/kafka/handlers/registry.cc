#include "gateway/kafka/handlers/registry.h"

#include <array>

namespace sluice::gateway {

std::span<const handler_entry> handler_registry() {
    // Ascending by API key.
    static const std::array table = {
        entry_for<produce_handler>(),                    // 0
        entry_for<fetch_handler>(),                      // 1
        entry_for<list_offsets_handler>(),               // 2
        entry_for<metadata_handler>(),                   // 3
        entry_for<offset_commit_handler>(),              // 8
        entry_for<offset_fetch_handler>(),               // 9
        entry_for<find_coordinator_handler>(),           // 10
        entry_for<join_group_handler>(),                 // 11
        entry_for<heartbeat_handler>(),                  // 12
        entry_for<leave_group_handler>(),                // 13
        entry_for<sync_group_handler>(),                 // 14
        entry_for<describe_groups_handler>(),            // 15
        entry_for<list_groups_handler>(),                // 16
        entry_for<api_versions_handler>(),               // 18
        entry_for<create_topics_handler>(),              // 19
        entry_for<delete_topics_handler>(),              // 20
        entry_for<delete_records_handler>(),             // 21
        entry_for<init_producer_id_handler>(),           // 22
        entry_for<offset_for_leader_epoch_handler>(),    // 23
        entry_for<add_partitions_to_txn_handler>(),      // 24
        entry_for<add_offsets_to_txn_handler>(),         // 25
        entry_for<end_txn_handler>(),                    // 26
        entry_for<txn_offset_commit_handler>(),          // 28
        entry_for<describe_configs_handler>(),           // 32
        entry_for<alter_configs_handler>(),              // 33
        entry_for<describe_log_dirs_handler>(),          // 35
        entry_for<create_partitions_handler>(),          // 37
        entry_for<delete_groups_handler>(),              // 42
        entry_for<incremental_alter_configs_handler>(),  // 44
        entry_for<offset_delete_handler>(),              // 47
        entry_for<describe_cluster_handler>(),           // 60
        entry_for<describe_producers_handler>(),         // 61
        entry_for<describe_transactions_handler>(),      // 65
        entry_for<list_transactions_handler>(),          // 66
        entry_for<consumer_group_heartbeat_handler>(),   // 68
        entry_for<consumer_group_describe_handler>(),    // 69
    };
    return table;
}

}  // namespace sluice::gateway
