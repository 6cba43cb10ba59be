// Small C++17 helpers over the tickpack C API: owning handles that free
// themselves, and a check that turns a failed call into an exception.
// Copy it into your game; it only wraps what tickpack.h declares.

#ifndef TICKPACK_HPP
#define TICKPACK_HPP

#include <memory>
#include <stdexcept>
#include <string>

#include "tickpack.h"

namespace tp {

// A failed call: the status and the library's message.
struct Error : std::runtime_error {
    TpStatus status;
    Error(TpStatus s, const std::string &what)
        : std::runtime_error(what + ": " + tp_status_name(s) + ": " + tp_last_error_message()),
          status(s) {}
};

// Throws unless `status` is TP_STATUS_OK.
inline void check(TpStatus status, const char *what) {
    if (status != TP_STATUS_OK) throw Error(status, what);
}

// Frees a handle with its tp_*_free; the status is ignored (a destructor
// cannot report it, and null is accepted).
template <class T, TpStatus (*Free)(T *)>
struct Free_ {
    void operator()(T *p) const noexcept { (void)Free(p); }
};

using Schema = std::unique_ptr<TpSchema, Free_<TpSchema, tp_schema_free>>;
using Snapshot = std::unique_ptr<TpSnapshot, Free_<TpSnapshot, tp_snapshot_free>>;
using NetServer = std::unique_ptr<TpNetServer, Free_<TpNetServer, tp_net_server_free>>;
using NetClient = std::unique_ptr<TpNetClient, Free_<TpNetClient, tp_net_client_free>>;

inline Schema schema_from_json(const std::string &json) {
    TpSchema *s = nullptr;
    check(tp_schema_from_json(reinterpret_cast<const uint8_t *>(json.data()), json.size(), &s),
          "tp_schema_from_json");
    return Schema(s);
}

inline Snapshot snapshot(const Schema &schema) {
    TpSnapshot *s = nullptr;
    check(tp_snapshot_new(schema.get(), &s), "tp_snapshot_new");
    return Snapshot(s);
}

}  // namespace tp

#endif
