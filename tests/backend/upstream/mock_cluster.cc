#include "tests/backend/upstream/mock_cluster.h"

#include <atomic>
#include <stdexcept>

#include <unistd.h>

namespace sluice::backend::upstream::test {
namespace {

constexpr std::int16_t metadata_api_key = 3;

}  // namespace

mock_cluster::mock_cluster() {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk_) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error(std::string("mock cluster handle: ") + err);
    }
    cluster_ = rd_kafka_mock_cluster_new(rk_, 3);
    if (!cluster_) {
        throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    }
    // The 2.0.2 mock offers Metadata v0-v2, which has no AllowAutoTopicCreation, and then
    // creates every topic a client asks about; v4 carries the flag (the mock honours it), as a
    // real cluster's Metadata does.
    rd_kafka_mock_set_apiversion(cluster_, metadata_api_key, 0, 4);
    bootstrap_ = rd_kafka_mock_cluster_bootstraps(cluster_);
}

mock_cluster::~mock_cluster() {
    if (cluster_) {
        rd_kafka_mock_cluster_destroy(cluster_);
    }
    if (rk_) {
        rd_kafka_destroy(rk_);
    }
}

bool mock_cluster::create_topic(const std::string& name, int partitions) {
    if (rd_kafka_mock_topic_create(cluster_, name.c_str(), partitions, 3) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
        return false;
    }
    // The mock picks leaders at random; round-robin makes "leaders spread" certain.
    for (int p = 0; p < partitions; ++p) {
        rd_kafka_mock_partition_set_leader(cluster_, name.c_str(), p, p % 3 + 1);
    }
    return true;
}

void mock_cluster::set_rtt(std::int32_t broker, int rtt_ms) {
    rd_kafka_mock_broker_set_rtt(cluster_, broker, rtt_ms);
}

mock_cluster& shared_mock_cluster() {
    static mock_cluster cluster;
    return cluster;
}

std::string unique_name(const std::string& stem) {
    static std::atomic<int> n{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

}  // namespace sluice::backend::upstream::test
