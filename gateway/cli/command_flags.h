// The argument walk shared by the offline subcommands (`sluice users`, `sluice acls`): flags as
// `--name value` or `--name=value`, and positional words, with config_error (exit 2) for a flag
// whose value is missing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/core/config.h"

namespace sluice::gateway {

/// Walks one subcommand's arguments in order. Not thread-safe; lives for one parse.
class command_flags {
public:
    command_flags(std::string command, const std::vector<std::string>& args)
        : command_(std::move(command)), args_(args) {}

    /// Moves to the next argument; false past the last.
    bool next() {
        if (started_) {
            ++i_;
        }
        started_ = true;
        if (i_ >= args_.size()) {
            return false;
        }
        arg_ = args_[i_];
        inline_value_.reset();
        if (arg_.starts_with("--")) {
            if (auto eq = arg_.find('='); eq != std::string::npos) {
                inline_value_ = arg_.substr(eq + 1);
                arg_ = arg_.substr(0, eq);
            }
        }
        return true;
    }

    /// The current argument, without its "=value".
    const std::string& arg() const { return arg_; }

    /// Whether the current argument carried "=value".
    bool has_inline_value() const { return inline_value_.has_value(); }

    /// The current flag's value: after '=', else the next argument (which is then consumed).
    std::string value() {
        if (inline_value_) {
            return *inline_value_;
        }
        if (i_ + 1 >= args_.size()) {
            throw config_error(command_ + ": " + arg_ + ": missing value");
        }
        return args_[++i_];
    }

private:
    std::string command_;
    const std::vector<std::string>& args_;
    std::size_t i_ = 0;
    bool started_ = false;
    std::string arg_;
    std::optional<std::string> inline_value_;
};

}  // namespace sluice::gateway
