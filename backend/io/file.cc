#include "backend/io/file.h"

#include <cerrno>

namespace sluice::backend::io {

std::string join_path(std::string_view dir, std::string_view name) {
    std::string out(dir);
    if (!out.empty() && out.back() != '/') {
        out.push_back('/');
    }
    out.append(name);
    return out;
}

std::string parent_path(std::string_view path) {
    auto slash = path.rfind('/');
    if (slash == std::string_view::npos) {
        return ".";
    }
    if (slash == 0) {
        return "/";
    }
    return std::string(path.substr(0, slash));
}

result<void> write_file_atomic(file_system& fs, const std::string& path,
                               std::span<const std::byte> data) {
    return write_file_atomic(fs, path, data, path + ".tmp");
}

result<void> write_file_atomic(file_system& fs, const std::string& path,
                               std::span<const std::byte> data, const std::string& tmp) {
    auto f = fs.open(tmp, open_mode::create_new);
    if (!f) {
        return fail(f.error());
    }
    if (auto w = (*f)->write_at(data, 0); !w) {
        return w;
    }
    if (auto s = (*f)->sync(); !s) {
        return s;
    }
    f->reset();
    if (auto r = fs.rename(tmp, path); !r) {
        return r;
    }
    return fs.sync_dir(parent_path(path));
}

result<std::vector<std::byte>> read_whole_file(file_system& fs, const std::string& path) {
    auto f = fs.open(path, open_mode::read_only);
    if (!f) {
        return fail(f.error());
    }
    auto size = (*f)->size();
    if (!size) {
        return fail(size.error());
    }
    std::vector<std::byte> out(static_cast<std::size_t>(*size));
    auto n = (*f)->read_at(out, 0);
    if (!n) {
        return fail(n.error());
    }
    out.resize(*n);
    return out;
}

bool is_disk_full(const std::error_code& ec) {
    bool errno_like =
        ec.category() == std::generic_category() || ec.category() == std::system_category();
    return errno_like && (ec.value() == ENOSPC || ec.value() == EDQUOT);
}

}  // namespace sluice::backend::io
