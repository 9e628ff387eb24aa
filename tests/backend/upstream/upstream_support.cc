#include "tests/backend/upstream/upstream_support.h"

namespace sluice::backend::upstream::test {
namespace {

rd_kafka_t* new_plain_consumer(const std::map<std::string, std::string>& props) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [k, v] : props) {
        if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            throw std::runtime_error(k + ": " + err);
        }
    }
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error(std::string("consumer: ") + err);
    }
    return rk;
}

std::optional<std::string> bytes_of(const void* p, size_t n) {
    if (!p) {
        return std::nullopt;
    }
    return std::string(static_cast<const char*>(p), n);
}

}  // namespace

std::vector<read_record> read_partition(const std::string& bootstrap, const std::string& topic,
                                        std::int32_t partition, std::size_t count,
                                        std::chrono::milliseconds limit) {
    rd_kafka_t* rk = new_plain_consumer({{"bootstrap.servers", bootstrap},
                                         {"group.id", unique_name("reader")},
                                         {"enable.auto.commit", "false"},
                                         {"log_level", "3"}});
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), partition)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);

    std::vector<read_record> out;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
        if (!m) {
            continue;
        }
        if (!m->err) {
            read_record r;
            r.partition = m->partition;
            r.offset = m->offset;
            r.key = bytes_of(m->key, m->key_len);
            r.value = bytes_of(m->payload, m->len);
            rd_kafka_timestamp_type_t type;
            r.timestamp = rd_kafka_message_timestamp(m, &type);
            rd_kafka_headers_t* hdrs = nullptr;
            if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const char* name;
                const void* val;
                size_t size;
                for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) ==
                                   RD_KAFKA_RESP_ERR_NO_ERROR;
                     ++i) {
                    r.headers.emplace_back(name, bytes_of(val, size));
                }
            }
            out.push_back(std::move(r));
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return out;
}

group_member::group_member(const std::string& bootstrap, const std::string& group,
                           const std::string& topic)
    : topic_(topic) {
    rk_ = new_plain_consumer({{"bootstrap.servers", bootstrap},
                              {"group.id", group},
                              {"client.id", "plain-member"},
                              {"enable.auto.commit", "false"},
                              {"log_level", "3"}});
    rd_kafka_poll_set_consumer(rk_);
    rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk_, sub);
    rd_kafka_topic_partition_list_destroy(sub);
}

group_member::~group_member() {
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
}

bool group_member::wait_for_assignment(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100)) {
            rd_kafka_message_destroy(m);
        }
        rd_kafka_topic_partition_list_t* held = nullptr;
        if (rd_kafka_assignment(rk_, &held) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const bool some = held->cnt > 0;
            rd_kafka_topic_partition_list_destroy(held);
            if (some) {
                return true;
            }
        }
    }
    return false;
}

bool group_member::commit(std::int32_t partition, std::int64_t next) {
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, topic_.c_str(), partition)->offset = next;
    const auto err = rd_kafka_commit(rk_, offsets, 0);
    rd_kafka_topic_partition_list_destroy(offsets);
    return err == RD_KAFKA_RESP_ERR_NO_ERROR;
}

}  // namespace sluice::backend::upstream::test
