#include "backend/group/topic_regex.h"

#include <re2/re2.h>

namespace sluice::backend::group {

topic_regex::topic_regex(std::unique_ptr<re2::RE2> re) : re_(std::move(re)) {}

topic_regex::~topic_regex() = default;

bool topic_regex::matches(std::string_view topic) const {
    return re2::RE2::FullMatch(re2::StringPiece(topic.data(), topic.size()), *re_);
}

topic_regex_cache::compiled topic_regex_cache::compile(const std::string& pattern) {
    std::shared_ptr<slot> s;
    {
        std::lock_guard lock(mu_);
        auto it = slots_.find(pattern);
        if (it == slots_.end()) {
            if (slots_.size() >= capacity) {
                slots_.clear();  // members keep the patterns they use
            }
            it = slots_.emplace(pattern, std::make_shared<slot>()).first;
        }
        s = it->second;
    }
    std::call_once(s->once, [&] {
        re2::RE2::Options opts;
        opts.set_log_errors(false);  // a client's bad pattern is its error, not ours to log
        auto re = std::make_unique<re2::RE2>(pattern, opts);
        if (re->ok()) {
            s->result.regex = std::make_shared<const topic_regex>(std::move(re));
        } else {
            s->result.error = re->error();
        }
    });
    return s->result;
}

}  // namespace sluice::backend::group
