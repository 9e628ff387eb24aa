#include "tests/backend/contract/native_client_factory.h"

#include <utility>

#include "backend/client/broker_client.h"
#include "tests/backend/contract/contract_fixture.h"
#include "tests/backend/contract/native_factory.h"

namespace sluice::backend::contract {
namespace {

class native_client final : public client_under_test {
public:
    explicit native_client(std::unique_ptr<backend_under_test> be) : be_(std::move(be)) {
        client::broker_client_options opts;
        opts.cluster_id = "native-contract";
        opts.self.node_id = 0;
        opts.self.host = "127.0.0.1";
        opts.self.port = 9092;
        auto& b = be_->backend();
        client_ = client::make_broker_client(b.topics(), b.records(), b.groups(), std::move(opts));
    }
    ~native_client() override {
        client_.reset();
        be_->backend().close();
    }

    api::client& client() override { return *client_; }
    void start(boost::asio::any_io_executor ex) override { be_->backend().start(std::move(ex)); }
    void stop() override { be_->backend().stop(); }

private:
    std::unique_ptr<backend_under_test> be_;
    std::unique_ptr<api::client> client_;
};

}  // namespace

struct native_client_factory::data {
    native_factory backends;
};

native_client_factory::native_client_factory() : data_(std::make_unique<data>()) {}
native_client_factory::~native_client_factory() = default;

std::unique_ptr<client_under_test> native_client_factory::open() {
    return std::make_unique<native_client>(data_->backends.open());
}

}  // namespace sluice::backend::contract
