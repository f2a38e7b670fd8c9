// libibverbs, loaded at run time. libnccl.so.2 never links it: a machine without rdma-core loads
// Weft and uses the Socket network, and `ldd libnccl.so.2` shows no libibverbs. The headers are
// only needed to build (libibverbs-dev); the inline verbs (post_send, post_recv, poll_cq) go
// through the provider's function table in ibv_context and need no symbol from the library.
#pragma once
#include <infiniband/verbs.h>

#include <string>

namespace weft::net::ib {

// The library's exported functions Weft calls. query_port and reg_mr are macros in the header, so
// their pointers are spelled out here with the exported symbols' signatures.
struct VerbsLibrary {
  ibv_device** (*getDeviceList)(int* num) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  __be64 (*getDeviceGuid)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  int (*queryPortCompat)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  // Optional (rdma-core 34+): registering a dmabuf (GPU memory exported by its driver).
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int compVector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  int (*getAsyncEvent)(ibv_context* context, ibv_async_event* event) = nullptr;
  void (*ackAsyncEvent)(ibv_async_event* event) = nullptr;
  const char* (*wcStatusStr)(ibv_wc_status status) = nullptr;
  const char* (*eventTypeStr)(ibv_event_type event) = nullptr;
  std::string path;  // what was opened, for messages

  // ibv_query_port as the header's inline wrapper does it: the provider's extended query when it
  // has one (it fills every field), otherwise the library's compatible entry point.
  int queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
};

// The loaded library, or null with *why saying what is missing (dlopen of libibverbs.so.1 or a
// symbol failed). Loaded once per process; a failure is remembered (the library cannot appear
// later in a running process in any way Weft could rely on).
const VerbsLibrary* loadVerbs(std::string* why);

}  // namespace weft::net::ib
