#include "protocol/kafka/codec.h"

#include <algorithm>
#include <cstring>

namespace sluice::protocol::kafka {

records records::copy_of(bytes_view data) {
    auto owned = std::make_shared<byte_buffer>(data.size());
    owned->append(data);
    bytes_view view = owned->view();
    return records(shared_bytes{std::move(owned), view});
}

void records::append(external_chunk chunk) {
    null_ = false;
    size_ += std::visit(
        [](const auto& c) -> std::size_t {
            if constexpr (std::is_same_v<std::decay_t<decltype(c)>, shared_bytes>) {
                return c.data.size();
            } else {
                return c.length;
            }
        },
        chunk);
    chunks_.push_back(std::move(chunk));
}

bytes_view records::contiguous() const {
    if (auto* m = single_memory_chunk()) {
        return m->data;
    }
    return {};
}

const shared_bytes* records::single_memory_chunk() const {
    if (chunks_.size() != 1) {
        return nullptr;
    }
    return std::get_if<shared_bytes>(&chunks_.front());
}

bool records::operator==(const records& other) const {
    if (null_ != other.null_ || size_ != other.size_) {
        return false;
    }
    // Compare the concatenated memory bytes; a file region only equals the same region.
    std::vector<std::byte> a;
    std::vector<std::byte> b;
    auto gather = [](const records& r, std::vector<std::byte>& out) {
        for (const auto& c : r.chunks_) {
            if (auto* m = std::get_if<shared_bytes>(&c)) {
                out.insert(out.end(), m->data.begin(), m->data.end());
            } else {
                return false;
            }
        }
        return true;
    };
    bool ma = gather(*this, a);
    bool mb = gather(other, b);
    if (ma && mb) {
        return a == b;
    }
    if (ma != mb || chunks_.size() != other.chunks_.size()) {
        return false;
    }
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
        const auto* fa = std::get_if<file_region>(&chunks_[i]);
        const auto* fb = std::get_if<file_region>(&other.chunks_[i]);
        if (!fa || !fb || fa->fd != fb->fd || fa->position != fb->position ||
            fa->length != fb->length) {
            return false;
        }
    }
    return true;
}

namespace codec {

void read_records(reader& r, bool flex, records& out) {
    std::int64_t n = r.bytes_length(flex);
    if (n < 0) {
        out = records();
        return;
    }
    auto view = r.take(static_cast<std::size_t>(n));
    if (!r.ok()) {
        return;
    }
    if (r.owner()) {
        out = records(shared_bytes{r.owner(), view});
    } else {
        out = records::copy_of(view);
    }
}

void write_records(writer& w, bool flex, const records& recs, bool null_allowed) {
    if (recs.is_null()) {
        w.bytes_length(null_allowed ? -1 : 0, flex);
        return;
    }
    w.bytes_length(static_cast<std::int64_t>(recs.size()), flex);
    for (const auto& c : recs.chunks()) {
        w.external(c);
    }
}

void write_tag_section(writer& w, std::vector<pending_tag>& known, const tagged_fields& unknown) {
    w.uvarint(known.size() + unknown.size());
    if (known.empty() && unknown.empty()) {
        return;
    }
    // Both lists are ascending (decoders reject anything else); merge them.
    std::vector<const tagged_field*> rest;
    rest.reserve(unknown.size());
    for (const auto& u : unknown) {
        rest.push_back(&u);
    }
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < known.size() || j < rest.size()) {
        if (j >= rest.size() || (i < known.size() && known[i].tag <= rest[j]->tag)) {
            w.uvarint(known[i].tag);
            w.uvarint(known[i].data.size());
            w.raw(known[i].data.view());
            ++i;
        } else {
            w.uvarint(rest[j]->tag);
            w.uvarint(rest[j]->data.size());
            w.raw(bytes_view(rest[j]->data.data(), rest[j]->data.size()));
            ++j;
        }
    }
}

}  // namespace codec
}  // namespace sluice::protocol::kafka
