#include "gateway/kafka/listener.h"

#include <memory>

#include "gateway/kafka/connection.h"

namespace sluice::gateway {
using boost::asio::ip::tcp;

kafka_listener::kafka_listener(io_pool& pool, services& svc, connection_tracker& tracker,
                               const kafka_listener_config& where,
                               std::shared_ptr<auth::tls_context_holder> tls)
    : svc_(svc),
      security_(where.protocol),
      tls_(std::move(tls)),
      dispatcher_(svc),
      // The accepted-connections counter had a Kafka-only name before the listeners shared
      // one loop; dashboards may still read it.
      listener_(pool, tracker, svc.metrics,
                listener_options{"kafka", "--kafka", "sluice_kafka_connections_accepted_total"},
                where.where, [this](tcp::socket socket, std::uint64_t id) {
                    return open(std::move(socket), id);
                }) {}

connection_session kafka_listener::open(tcp::socket socket, std::uint64_t id) {
    auto conn = std::make_shared<kafka_connection>(std::move(socket), svc_, dispatcher_, id,
                                                   security_,
                                                   tls_ ? tls_->current() : nullptr);
    return connection_session{conn->run(), [conn](stop_mode mode) {
                                  if (mode == stop_mode::finish) {
                                      conn->stop();
                                  } else {
                                      conn->cut();
                                  }
                              }};
}

}  // namespace sluice::gateway
