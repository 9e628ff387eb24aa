#include "backend/log/partition_log.h"

namespace sluice::backend::log {

result<compaction_result> partition_log::compact(std::int64_t) { return compaction_result{}; }

bool partition_log::needs_compaction(std::int64_t) const { return false; }

}  // namespace sluice::backend::log
