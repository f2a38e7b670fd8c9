// The one typed registry of every knob Weft reads from the environment. No other code calls getenv.
// Each parameter has a primary name (NCCL_*, RCCL_* or WEFT_*), optional alias names, a type,
// a default and a one-line doc. Values are read once (on first use of any parameter) and cached.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace weft::param {

// --- logging (read by src/core/log.cc) ---
std::string debugLevel();      // NCCL_DEBUG: VERSION, WARN, INFO, ABORT, TRACE ("" = off)
std::string debugSubsys();     // NCCL_DEBUG_SUBSYS: comma list, leading ^ inverts ("" = INIT,BOOTSTRAP,ENV)
std::string debugFile();       // NCCL_DEBUG_FILE: path, %h = hostname, %p = pid ("" = stderr)
// --- transports and buffers ---
int64_t buffSize();            // NCCL_BUFFSIZE: bytes of one connection's FIFO
int64_t minNChannels();        // NCCL_MIN_NCHANNELS (alias NCCL_MIN_CTAS)
int64_t maxNChannels();        // NCCL_MAX_NCHANNELS (alias NCCL_MAX_CTAS)
bool shmDisable();             // NCCL_SHM_DISABLE
bool p2pDisable();             // NCCL_P2P_DISABLE
std::string p2pLevel();        // NCCL_P2P_LEVEL
bool p2pReadEnable();          // NCCL_P2P_READ_ENABLE
bool runtimeConnect();         // NCCL_RUNTIME_CONNECT: connect lazily on first use (default 1)
// --- bootstrap ---
std::string commId();          // NCCL_COMM_ID: "host:port" rendezvous address ("" = from the unique id)
std::string socketIfname();    // NCCL_SOCKET_IFNAME: prefix list, ^ excludes, = exact
std::string socketFamily();    // NCCL_SOCKET_FAMILY: AF_INET or AF_INET6 ("" = any)
std::string hostId();          // WEFT_HOST_ID: override this process's host identity (tests)
// --- network (read by transports/net) ---
std::string net();             // NCCL_NET: network by name, case-insensitive ("" = first with devices)
std::string netPlugin();       // NCCL_NET_PLUGIN: plugin name, file, or none ("" = libnccl-net.so if any)
int64_t socketNThreads();      // NCCL_SOCKET_NTHREADS (0 = automatic)
int64_t nSocksPerThread();     // NCCL_NSOCKS_PERTHREAD (0 = automatic)
int64_t socketInlineBytes();   // WEFT_SOCKET_INLINE_BYTES: inline on the control socket up to this size
int64_t netLinkTimeoutMs();    // WEFT_NET_LINK_TIMEOUT_MS: connect / dead-link detection bound
// --- communicator behaviour ---
int64_t commBlocking();        // NCCL_COMM_BLOCKING: -1 unset, 0 non-blocking, 1 blocking
std::string device();          // WEFT_DEVICE: "auto" or "host"
int64_t timeoutMs();           // WEFT_TIMEOUT_MS: longest wait for a peer before an error naming it
int64_t spinUs();              // WEFT_SPIN_US: how long a waiting rank spins before it sleeps
int64_t checkPointers();       // NCCL_CHECK_POINTERS
int64_t nChannels();
int64_t oneShotMaxBytes();     // WEFT_ONESHOT_MAX_BYTES: one-shot ring AllReduce up to this size
// --- topology (read by src/topology) ---
std::string topoFile();        // NCCL_TOPO_FILE: NCCL topology XML merged over hwloc's detection
std::string topoDumpFile();    // NCCL_TOPO_DUMP_FILE: rank 0 writes the topology it uses here
// --- tuning (src/tuning) ---
std::string algo();            // NCCL_ALGO: NCCL's list syntax (tuning/algo_filter.h)
std::string proto();           // NCCL_PROTO: likewise
std::string overrideAlgo();    // RCCL_OVERRIDE_ALGO: one algorithm forced over the model
std::string overrideProto();   // RCCL_OVERRIDE_PROTO: one protocol forced over the model
std::string tunerPlugin();     // NCCL_TUNER_PLUGIN: path, libX.so, NAME or none
std::string tunerCalibrate();  // WEFT_TUNER_CALIBRATE: auto, redo or off
std::string tunerConstants();  // WEFT_TUNER_CONSTANTS: "name=value,..." model constant overrides
std::string cacheDir();        // WEFT_CACHE_DIR (alias XDG_CACHE_HOME): the calibration goes in weft/
// --- direct data access and low precision (collectives/dda, collectives/lowprec) ---
bool ddaAllReduce();                  // RCCL_ENABLE_DDA_ALL_REDUCE
int64_t ddaFlatMaxBytes();            // RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES
int64_t ddaTreeMaxBytes();            // RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES
int64_t ddaSendbufBytes();            // RCCL_DDA_SENDBUF_BYTES: staging area per rank
int64_t ddaMaxBlocks();               // RCCL_DDA_MAX_BLOCKS (GPU executors)
bool ddaAllGather();                  // RCCL_ENABLE_DDA_ALL_GATHER
int64_t ddaAllGatherMaxBytes();       // RCCL_DDA_ALL_GATHER_MAX_BYTES
bool ddaReduceScatter();              // RCCL_ENABLE_DDA_REDUCE_SCATTER
int64_t ddaReduceScatterMaxBytes();   // RCCL_DDA_REDUCE_SCATTER_MAX_BYTES
bool ddaAllToAll();                   // RCCL_ENABLE_DDA_ALL_TO_ALL
int64_t ddaAllToAllMaxBytes();        // RCCL_DDA_ALL_TO_ALL_MAX_BYTES
bool lowPrecision();                  // RCCL_LOW_PRECISION_ENABLE
int64_t lowPrecisionAllReduce();      // RCCL_LOW_PRECISION_ENABLE_ALLREDUCE: -1 follow, 0 off, 1 on
int64_t lowPrecisionAllGather();      // RCCL_LOW_PRECISION_ENABLE_ALLGATHER
int64_t lowPrecisionReduceScatter();  // RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER
int64_t lowPrecisionAllToAll();       // RCCL_LOW_PRECISION_ENABLE_ALLTOALL
int64_t lowPrecisionMinBytes();       // WEFT_LOW_PRECISION_MIN_BYTES
bool mismatchCheck();          // WEFT_MISMATCH_CHECK: compare peers' op stamps (read once per communicator)
// --- read now for features that are not built yet (docs/env.md says so) ---
int64_t livenessMs();          // WEFT_LIVENESS_MS: how often a waiting rank checks its local peers live
bool ibDisable();              // NCCL_IB_DISABLE
bool ignoreCpuAffinity();      // NCCL_IGNORE_CPU_AFFINITY
bool localRegister();          // NCCL_LOCAL_REGISTER (default 1)

// Reflection, for tools/weft-info and docs/env.md.
struct ParamView {
  std::string name;          // primary environment variable
  std::string aliases;       // other accepted names, comma separated ("" if none)
  std::string type;          // "int", "bool", "size", "string"
  std::string defaultValue;
  std::string value;         // the value in effect now
  bool set;                  // true when the environment set it (under any of its names)
  std::string doc;           // one line
  // Added for weft-info and tests:
  std::string allowed;       // "1..64", "auto|host", ... ("" = whatever the type accepts)
  std::string group;         // the docs/env.md section: "Logging", "Transports and buffers", ...
  std::string source;        // the variable the value came from ("" = the default)
  std::string envText;       // that variable's text as the environment gave it
  std::string problem;       // why envText was rejected ("" = accepted or not set)
};
std::vector<ParamView> list();

// The warnings of the latest read of the environment (malformed or out-of-range values, a primary
// name and its alias set to different values), one line each, in table order.
std::vector<std::string> loadWarnings();
// Prints loadWarnings() with WEFT_WARN, once per read of the environment. The logger calls it once
// it is ready (so the warnings obey NCCL_DEBUG); any accessor other than the three NCCL_DEBUG* ones
// brings the logger up first, so the warnings appear even in a process that logs nothing else.
void reportLoadWarnings();

// docs/env.md, exactly: the table rendered as Markdown (`weft-info --markdown` prints it; a unit
// test fails when the committed file differs).
std::string renderMarkdown();

// The NCCL API version Weft implements (banners, weft-info).
inline constexpr const char* kNcclApiVersion = "2.28.9";

// Re-reads the environment (tests change it between cases) and makes the logger re-read its
// settings too. Not thread-safe against readers.
void reloadForTesting();

}  // namespace weft::param
