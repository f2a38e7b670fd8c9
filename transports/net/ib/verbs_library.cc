// Loading libibverbs.so.1 and resolving the functions Weft calls.
#include "transports/net/ib/verbs_library.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace weft::net::ib {

namespace {

template <typename Fn>
bool resolve(void* lib, const char* symbol, Fn* out, std::string* missing) {
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

struct Loaded {
  VerbsLibrary lib;
  bool ok = false;
  std::string why;
};

Loaded* load() {
  auto* l = new Loaded;
  dlerror();
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    l->why = std::string("cannot load libibverbs.so.1 (install rdma-core / libibverbs1): ") +
             (e != nullptr ? e : "dlopen failed");
    return l;
  }
  VerbsLibrary& v = l->lib;
  v.path = "libibverbs.so.1";
  std::string missing;
  resolve(h, "ibv_get_device_list", &v.getDeviceList, &missing);
  resolve(h, "ibv_free_device_list", &v.freeDeviceList, &missing);
  resolve(h, "ibv_get_device_name", &v.getDeviceName, &missing);
  resolve(h, "ibv_get_device_guid", &v.getDeviceGuid, &missing);
  resolve(h, "ibv_open_device", &v.openDevice, &missing);
  resolve(h, "ibv_close_device", &v.closeDevice, &missing);
  resolve(h, "ibv_query_device", &v.queryDevice, &missing);
  resolve(h, "ibv_query_port", &v.queryPortCompat, &missing);
  resolve(h, "ibv_query_gid", &v.queryGid, &missing);
  resolve(h, "ibv_alloc_pd", &v.allocPd, &missing);
  resolve(h, "ibv_dealloc_pd", &v.deallocPd, &missing);
  resolve(h, "ibv_reg_mr", &v.regMr, &missing);
  resolve(h, "ibv_dereg_mr", &v.deregMr, &missing);
  resolve(h, "ibv_create_cq", &v.createCq, &missing);
  resolve(h, "ibv_destroy_cq", &v.destroyCq, &missing);
  resolve(h, "ibv_create_qp", &v.createQp, &missing);
  resolve(h, "ibv_modify_qp", &v.modifyQp, &missing);
  resolve(h, "ibv_destroy_qp", &v.destroyQp, &missing);
  resolve(h, "ibv_get_async_event", &v.getAsyncEvent, &missing);
  resolve(h, "ibv_ack_async_event", &v.ackAsyncEvent, &missing);
  resolve(h, "ibv_wc_status_str", &v.wcStatusStr, &missing);
  resolve(h, "ibv_event_type_str", &v.eventTypeStr, &missing);
  if (!missing.empty()) {
    l->why = "libibverbs.so.1 lacks " + missing;
    dlclose(h);
    return l;
  }
  std::string optional;
  resolve(h, "ibv_reg_dmabuf_mr", &v.regDmabufMr, &optional);  // absent before rdma-core 34
  l->ok = true;                                                // the handle stays open for the life of the process
  return l;
}

}  // namespace

int VerbsLibrary::queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  memset(attr, 0, sizeof(*attr));
  verbs_context* vctx = verbs_get_ctx_op(context, query_port);
  if (vctx != nullptr) return vctx->query_port(context, port, attr, sizeof(*attr));
  return queryPortCompat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

const VerbsLibrary* loadVerbs(std::string* why) {
  static Loaded* loaded = load();  // never destroyed: providers' threads may outlive main()
  if (!loaded->ok) {
    *why = loaded->why;
    return nullptr;
  }
  return &loaded->lib;
}

}  // namespace weft::net::ib
