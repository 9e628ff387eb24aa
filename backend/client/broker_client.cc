#include "backend/client/broker_client.h"

#include <utility>

#include "backend/client/broker_admin.h"
#include "backend/client/broker_consumer.h"
#include "backend/client/broker_producer.h"

namespace sluice::backend::client {
namespace {

class broker_client final : public api::client {
  public:
    broker_client(api::topics& topics, api::records& records, api::groups& groups,
                  broker_client_options opts)
        : topics_(topics),
          records_(records),
          groups_(groups),
          producer_(make_broker_producer(topics, records)),
          admin_(make_broker_admin(topics, records, groups, opts)) {}

    api::producer& producer() override { return *producer_; }
    std::shared_ptr<api::consumer> open_consumer(api::consumer_options opts,
                                                 boost::asio::any_io_executor ex) override {
        return open_broker_consumer(topics_, records_, groups_, std::move(opts), std::move(ex));
    }
    api::admin& admin() override { return *admin_; }
    health check() const override { return {}; }
    stats statistics() const override { return {}; }

  private:
    api::topics& topics_;
    api::records& records_;
    api::groups& groups_;
    std::unique_ptr<api::producer> producer_;
    std::unique_ptr<api::admin> admin_;
};

}  // namespace

std::unique_ptr<api::client> make_broker_client(api::topics& topics, api::records& records,
                                                api::groups& groups, broker_client_options opts) {
    return std::make_unique<broker_client>(topics, records, groups, std::move(opts));
}

}  // namespace sluice::backend::client
