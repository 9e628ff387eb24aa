// The native backend's settings (owned by backend/native): the log's background intervals and
// the broker-level topic defaults, the group coordinator, producer state, the transaction
// coordinator and the SQS queues' limits, declared as tables (backend/api/settings.h) and read
// into native_options through the gateway's parser. Kafka's names and defaults; the doc's
// tables are generated from these (docs/configuration.md).
#pragma once

#include <filesystem>
#include <vector>

#include "backend/api/settings.h"
#include "backend/native/native_backend.h"

namespace sluice::backend::native {

/// The native backend's tables, in the doc's order: log, groups, producers and transactions,
/// SQS queues. The log table includes the broker-level topic defaults (live: AlterConfigs
/// changes them), built from the log's own topic config table.
const std::vector<api::setting_table>& native_setting_tables();

/// Reads (and checks) every native setting; throws what `values` throws for a bad value.
/// The queues' region and account are the SQS front's (sqs.region, sqs.account.id): the
/// start-up file sets them.
native_options read_native_options(const api::setting_values& values,
                                   const std::filesystem::path& data_dir);

}  // namespace sluice::backend::native
