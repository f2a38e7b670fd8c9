// The network as Weft's transport sees it: one C++ interface over every ncclNet plugin version.
// Built-in networks (Socket) and external plugins (NCCL_NET_PLUGIN) are reached only through
// this interface; transports/net/plugin adapts each ncclNet_vN function table to it.
//
// The semantics are those of the ncclNet plugin ABI: connect and accept never block (they return
// a null comm until the connection is ready and are called again), isend/irecv may return a null
// request when the network cannot take the operation yet, and test() reports completion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "transports/rank_block.h"

namespace weft::net {

constexpr size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE: what listen() fills for connect()

enum PtrType : int { kPtrHost = 1, kPtrCuda = 2, kPtrDmaBuf = 4 };

// A built-in network that can wake the proxy instead of being polled. Once given a bell, it rings
// it from its own threads, while event mode is on, whenever a request may have moved (a chunk was
// sent or received, a control socket became readable). Plugins have no such hook: the proxy polls.
struct ProgressEvents {
  void (*setBell)(RankBlock* bell);
  void (*setEventMode)(bool on);
};

struct Properties {
  std::string name;  // interface or device name, e.g. "eth0"
  std::string pciPath;
  uint64_t guid = 0;
  int ptrSupport = kPtrHost;
  int speedMbps = 0;
  int port = 0;
  float latencyUs = 0;
  int maxComms = 0;
  int maxRecvs = 1;
  size_t maxP2pBytes = 0;
  size_t maxCollBytes = 0;
};

class Network {
 public:
  virtual ~Network() = default;
  virtual const char* name() const = 0;
  // The plugin ABI version this network was loaded through (e.g. 10), 0 for built-in ones that
  // are not plugins.
  virtual int abiVersion() const = 0;
  virtual ncclResult_t devices(int* ndev) = 0;
  virtual ncclResult_t getProperties(int dev, Properties* props) = 0;
  // Fills handle (kHandleBytes) for the peer's connect().
  virtual ncclResult_t listen(int dev, void* handle, void** listenComm) = 0;
  // Non-blocking: *sendComm stays null until the connection is established; call again.
  virtual ncclResult_t connect(int dev, void* handle, void** sendComm) = 0;
  virtual ncclResult_t accept(void* listenComm, void** recvComm) = 0;
  virtual ncclResult_t regMr(void* comm, void* data, size_t size, int ptrType, void** mhandle) = 0;
  virtual ncclResult_t deregMr(void* comm, void* mhandle) = 0;
  // *request null: not accepted now, try again later.
  virtual ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) = 0;
  // The same with the profiler handle the network's NetPlugin events hang under (proxy_profile.h;
  // ABI v10+ plugins get it, older ones and networks without events ignore it).
  virtual ncclResult_t isendProfiled(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                                     void** request) {
    (void)phandle;
    return isend(sendComm, data, size, tag, mhandle, request);
  }
  // One receive buffer (the plugin's grouped receive with n = 1).
  virtual ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void** request) = 0;
  // *done set once complete; *size then holds the bytes sent or received. A failed request returns
  // an error code (the connection is then unusable).
  virtual ncclResult_t test(void* request, int* done, size_t* size) = 0;
  virtual ncclResult_t closeSend(void* sendComm) = 0;
  virtual ncclResult_t closeRecv(void* recvComm) = 0;
  virtual ncclResult_t closeListen(void* listenComm) = 0;
  // The network's wake-up hooks, null when it has none (see ProgressEvents).
  virtual const ProgressEvents* progressEvents() const { return nullptr; }
};

// The network this process uses: chosen once per process (thread-safe). Loads NCCL_NET_PLUGIN
// when set, then the built-in networks; NCCL_NET (or netName, the communicator config's, when not
// null) picks one by name, case-insensitive. On failure *why says what was tried and why each
// candidate was refused.
ncclResult_t selectNetwork(const char* netName, Network** out, std::string* why);

// What a built-in network knows about its last failure on this thread (device, peer address, the
// verbs or socket status), which the plugin ABI's bare result code cannot carry. The network sets
// it where it fails; the proxy takes it (and clears it) when a call on that thread failed, and
// adds it to the link's error. External plugins never set it.
void setFailureDetail(const std::string& detail);
std::string takeFailureDetail();

}  // namespace weft::net
