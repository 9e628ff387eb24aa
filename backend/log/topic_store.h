// The topic metadata file (owned by backend/log): one per topic, the commit point of
// create_topic, create_partitions and alter_config.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::log {

/// What a topic file holds.
///
/// File `<data_dir>/topics/<name>.topic`, text, one `key=value` per line:
///   version=1
///   name=<topic name>
///   id=<uuid, 8-4-4-4-12 hex>
///   partitions=<count>
///   internal=<true|false>
///   config.<key>=<value>          one line per topic-level override
///   crc=<8 hex digits>            CRC-32C of every byte before this line
/// Written to `<random uuid>.tmp` (a 249-character name leaves no room for `<name>.topic.tmp`
/// in 255 bytes), fsynced and renamed over the old file (then the folder is synced), so a crash
/// leaves the old or the new version; a `.tmp` file found at start is removed. A file whose CRC does not match is
/// an error at open: the broker refuses to start rather than guess.
struct topic_record {
    std::string name;
    uuid id;
    std::int32_t partitions = 0;
    bool internal = false;
    std::map<std::string, std::string> overrides;
    bool operator==(const topic_record&) const = default;
};

std::string encode_topic_record(const topic_record& r);
result<topic_record> decode_topic_record(protocol::bytes_view text);

}  // namespace sluice::backend::log
