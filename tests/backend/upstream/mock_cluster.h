// librdkafka's mock Kafka cluster (rdkafka_mock.h) as the upstream stand-in of backend_tests:
// three brokers (node ids 1..3) in this process, shared by every test of one run. The Debian
// 2.0.2 mock has no CreateTopics, DescribeConfigs, AlterConfigs or DeleteRecords: tests make
// topics with create_topic() here.
#pragma once

#include <cstdint>
#include <string>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

namespace sluice::backend::upstream::test {

/// The mock cluster, on a librdkafka handle of its own. Thread-safe (librdkafka's mock calls
/// are).
class mock_cluster {
  public:
    mock_cluster();
    ~mock_cluster();
    mock_cluster(const mock_cluster&) = delete;
    mock_cluster& operator=(const mock_cluster&) = delete;

    /// "127.0.0.1:port,..." of the three brokers.
    const std::string& bootstrap() const { return bootstrap_; }
    /// Creates a topic (replicated on every broker; partition p led by broker p % 3 + 1).
    /// False when the mock refuses (it exists).
    bool create_topic(const std::string& name, int partitions);
    /// Adds `rtt` ms to every answer of `broker` (0: back to normal).
    void set_rtt(std::int32_t broker, int rtt_ms);
    rd_kafka_mock_cluster_t* get() { return cluster_; }

  private:
    rd_kafka_t* rk_ = nullptr;
    rd_kafka_mock_cluster_t* cluster_ = nullptr;
    std::string bootstrap_;
};

/// The one mock cluster of this test run (made on first use).
mock_cluster& shared_mock_cluster();

/// A name no other test of this run uses.
std::string unique_name(const std::string& stem);

}  // namespace sluice::backend::upstream::test
