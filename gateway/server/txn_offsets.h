// Connects the transaction coordinator (backend/producer) to the group coordinator
// (backend/group): the member check of TxnOffsetCommit and the offsets a committed transaction
// stores. The two backend modules do not include each other; run_server creates this next to
// both and it holds a reference only.
#pragma once

#include <algorithm>

#include "backend/group/group_coordinator.h"
#include "backend/producer/transaction_coordinator.h"

namespace sluice::gateway {

class txn_offsets final : public backend::producer::txn_offset_store {
public:
    explicit txn_offsets(backend::group::group_coordinator& groups) : groups_(groups) {}

    std::error_code validate(const std::string& group_id, const std::string& member_id,
                             const std::optional<std::string>& group_instance_id,
                             std::int32_t generation_id) override {
        return groups_.validate_txn_commit(group_id, member_id, group_instance_id,
                                           generation_id);
    }

    boost::asio::awaitable<std::error_code> commit(
        std::string group_id, std::vector<backend::producer::txn_offset> offsets) override {
        std::vector<backend::group::commit_topic> topics;
        for (auto& o : offsets) {
            auto it = std::find_if(topics.begin(), topics.end(),
                                   [&](const auto& t) { return t.name == o.topic; });
            if (it == topics.end()) {
                topics.push_back({o.topic, {}});
                it = topics.end() - 1;
            }
            it->partitions.push_back(
                {o.partition, offset(o.offset), o.leader_epoch, std::move(o.metadata)});
        }
        co_return co_await groups_.commit_txn_offsets(std::move(group_id), std::move(topics));
    }

private:
    backend::group::group_coordinator& groups_;
};

}  // namespace sluice::gateway
