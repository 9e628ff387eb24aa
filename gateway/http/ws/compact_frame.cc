#include "gateway/http/ws/compact_frame.h"

#include <charconv>

namespace sluice::gateway::ws {
namespace {

void append_int(std::string& out, std::int64_t v) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
}

/// `[0,1,1,...` for `n` consecutive offsets: the deltas of the records before the first gap.
void consecutive_deltas(std::string& out, std::int64_t n) {
    out = "[0";
    for (std::int64_t i = 1; i < n; ++i) {
        out += ",1";
    }
}

}  // namespace

std::optional<frame_encoding> parse_frame_encoding(std::string_view name) {
    if (name == "records") {
        return frame_encoding::records;
    }
    if (name == "compact") {
        return frame_encoding::compact;
    }
    return std::nullopt;
}

void compact_frame::start(std::string_view id) {
    frame_.clear();
    records_ = 0;
    run_open_ = false;
    frame_.start_object();
    frame_.field("op", "records");
    if (!id.empty()) {
        frame_.key("id");
        frame_.raw(id);
    }
    frame_.field("encoding", "compact");
    frame_.key("runs");
    frame_.start_array();
}

void compact_frame::open_run(const topic_name& topic, partition_id partition,
                             const protocol::kafka::record_view& r) {
    run_open_ = true;
    topic_ = topic.value;
    partition_ = partition.value;
    count_ = 0;
    last_offset_ = r.offset;
    last_timestamp_ = r.timestamp;
    timestamps_ = "[";
    offsets_.clear();
    keys_.clear();
    any_key_ = false;
    headers_.clear();
    any_headers_ = false;
    frame_.start_object();
    frame_.field("topic", topic_);
    frame_.field("partition", partition_);
    frame_.field("base_offset", r.offset);
    frame_.field("base_timestamp", r.timestamp);
    frame_.key("values");
    frame_.start_array();
}

void compact_frame::add(const topic_name& topic, partition_id partition,
                        const protocol::kafka::record_view& r, stream_format format) {
    if (run_open_ && (partition.value != partition_ || topic.value != topic_)) {
        close_run();
    }
    if (!run_open_) {
        open_run(topic, partition, r);
    }
    write_stream_bytes(frame_, r.value, format);

    if (count_ > 0) {
        timestamps_ += ',';
    }
    append_int(timestamps_, r.timestamp - last_timestamp_);
    last_timestamp_ = r.timestamp;

    const std::int64_t offset_delta = r.offset - last_offset_;
    if (offsets_.empty() && count_ > 0 && offset_delta != 1) {
        consecutive_deltas(offsets_, count_);  // the first gap: the deltas so far were all 1
    }
    if (!offsets_.empty()) {
        offsets_ += ',';
        append_int(offsets_, offset_delta);
    }
    last_offset_ = r.offset;

    if (r.key && !any_key_) {
        any_key_ = true;
        keys_.start_array();
        for (std::int64_t i = 0; i < count_; ++i) {
            keys_.null();
        }
    }
    if (any_key_) {
        write_stream_bytes(keys_, r.key, format);
    }

    if (!r.headers.empty() && !any_headers_) {
        any_headers_ = true;
        headers_.start_array();
        for (std::int64_t i = 0; i < count_; ++i) {
            headers_.start_object();
            headers_.end_object();
        }
    }
    if (any_headers_) {
        write_stream_headers(headers_, r.headers, format);
    }
    ++count_;
    ++records_;
}

void compact_frame::close_run() {
    frame_.end_array();  // values
    timestamps_ += ']';
    frame_.key("timestamps");
    frame_.raw(timestamps_);
    if (!offsets_.empty()) {
        offsets_ += ']';
        frame_.key("offsets");
        frame_.raw(offsets_);
    }
    if (any_key_) {
        keys_.end_array();
        frame_.key("keys");
        frame_.raw(keys_.view());
    }
    if (any_headers_) {
        headers_.end_array();
        frame_.key("headers");
        frame_.raw(headers_.view());
    }
    frame_.end_object();
    run_open_ = false;
}

std::size_t compact_frame::size() const {
    std::size_t n = frame_.size();
    if (run_open_) {
        n += timestamps_.size() + offsets_.size() + keys_.size() + headers_.size() + 64;
    }
    return n;
}

std::string_view compact_frame::finish() {
    if (run_open_) {
        close_run();
    }
    frame_.end_array();  // runs
    frame_.end_object();
    return frame_.view();
}

}  // namespace sluice::gateway::ws
