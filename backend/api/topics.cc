#include "backend/api/topics.h"

namespace sluice::backend::api {

config_entry static_config_entry(std::string name, std::string default_value, config_type type,
                                 std::string documentation,
                                 const std::map<std::string, std::string>& properties) {
    config_entry e;
    e.name = std::move(name);
    auto it = properties.find(e.name);
    e.source = it != properties.end() ? config_source::static_broker
                                      : config_source::default_config;
    e.value = it != properties.end() ? it->second : std::move(default_value);
    e.read_only = true;
    e.type = type;
    e.documentation = std::move(documentation);
    e.synonyms.push_back({e.name, e.value, e.source});
    return e;
}

}  // namespace sluice::backend::api
