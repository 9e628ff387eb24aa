// The native backend as a factory of the conformance suite: the one file of the suite that
// includes backend/native.
#include "tests/backend/contract/native_factory.h"

#include <chrono>

#include "backend/io/memory_file_system.h"
#include "backend/native/native_backend.h"

namespace sluice::backend::contract {
namespace {

class native_under_test final : public backend_under_test {
public:
    explicit native_under_test(std::unique_ptr<native::native_backend> be) : be_(std::move(be)) {}

    api::backend& backend() override { return *be_; }
    api::transactions* transactions() override { return &be_->transactions(); }
    api::queues* queues() override { return &be_->queues(); }

private:
    std::unique_ptr<native::native_backend> be_;
};

}  // namespace

struct native_factory::data {
    std::shared_ptr<io::memory_file_system> fs = std::make_shared<io::memory_file_system>();
};

native_factory::native_factory() : data_(std::make_unique<data>()) {}
native_factory::~native_factory() = default;

std::unique_ptr<backend_under_test> native_factory::open() {
    native::native_options o;
    o.log.data_dir = "/data";
    o.log.fs = data_->fs;
    o.log.retention_check_interval = std::chrono::milliseconds(0);
    o.log.compaction_check_interval = std::chrono::milliseconds(0);
    o.log.flush_threads = 1;
    o.blocking_threads = 1;
    o.groups.initial_rebalance_delay_ms = 0;
    o.queues.tail_wait = std::chrono::milliseconds(20);
    return std::make_unique<native_under_test>(native::native_backend::open(std::move(o)));
}

}  // namespace sluice::backend::contract
