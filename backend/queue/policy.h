// AddPermission and RemovePermission as edits of a queue's Policy document (owned by
// backend/queue): a statement whose Sid is the label, allowing the given accounts the given
// SQS actions on the queue, as SQS writes it. Enforcement belongs to the security work; the
// document is kept and shown (GetQueueAttributes Policy).
#pragma once

#include <string>
#include <vector>

#include "backend/api/common.h"

namespace sluice::backend::queue {

/// `policy` (empty: none yet) with a statement labelled `label` added. Errors
/// (invalid_parameter_value unless noted): a label outside 1-80 of [A-Za-z0-9_-] or already
/// used, no accounts or actions, an action SQS does not grant, over_limit past
/// max_permission_statements statements.
api::backend_result<std::string> add_permission_statement(const std::string& policy,
                                                        const std::string& queue_arn,
                                                        const std::string& label,
                                                        const std::vector<std::string>& accounts,
                                                        const std::vector<std::string>& actions);

/// `policy` without the statement labelled `label` (empty when it was the last). Errors:
/// invalid_parameter_value when no statement has that label.
api::backend_result<std::string> remove_permission_statement(const std::string& policy,
                                                           const std::string& label);

}  // namespace sluice::backend::queue
