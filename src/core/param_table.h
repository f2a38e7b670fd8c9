// The one table of every environment variable Weft reads. src/core/params.cc expands it into the
// typed accessors declared in params.h, the parser, weft-info's listing and docs/env.md, so a knob
// added here is documented everywhere at once. Only params.cc should include this file.
//
// Each row: X(accessor, Type, "NAME", "ALIASES", "DEFAULT", "ALLOWED", Group, "DOC")
//   accessor  the function in weft::param that returns the value
//   Type      Int (int64_t), Size (int64_t, accepts K/M/G), Bool (bool) or String (std::string)
//   NAME      the primary variable; ALIASES other accepted names, comma separated, read only when
//             NAME is unset or empty
//   DEFAULT   the value used when the environment sets none (written as a user would write it)
//   ALLOWED   "" = anything the type accepts; "lo..hi", "lo.." or "..hi" for numbers;
//             "a|b|c" for strings (matched case-insensitively, stored in the spelling given here)
//   Group     the section of docs/env.md the row appears in
//   DOC       one line for users; knobs whose feature is not built yet say so
#pragma once

#define WEFT_PARAM_TABLE(X)                                                                        \
  /* ---- logging ---- */                                                                          \
  X(debugLevel, String, "NCCL_DEBUG", "", "", "VERSION|WARN|INFO|ABORT|TRACE", Logging,            \
    "Log verbosity, case-insensitive: VERSION, WARN, INFO, ABORT (prints what INFO prints) or "    \
    "TRACE (\"\" = print nothing, not even warnings)")                                             \
  X(debugSubsys, String, "NCCL_DEBUG_SUBSYS", "", "", "", Logging,                                 \
    "Subsystems whose INFO and TRACE lines print: comma list of INIT, COLL, P2P, SHM, NET, GRAPH, " \
    "TUNING, ENV, ALLOC, CALL, PROXY, NVLS, BOOTSTRAP, REG, PROFILE, RAS, ALL; a leading ^ "        \
    "inverts the set (\"\" = INIT,BOOTSTRAP,ENV)")                                                 \
  X(debugFile, String, "NCCL_DEBUG_FILE", "", "", "", Logging,                                     \
    "Write log lines to this file instead of stderr; %h = host name, %p = process id, %% = %. "    \
    "The file is truncated when opened, so give each process its own name with %p")                \
  /* ---- transports and buffers ---- */                                                           \
  X(buffSize, Size, "NCCL_BUFFSIZE", "", "1048576", "1..", Transport,                              \
    "Bytes of one connection's FIFO; Weft's host-mode default of 1 MiB (NCCL's is 4 MiB) keeps "   \
    "the FIFO in cache")                                                                           \
  X(oneShotMaxBytes, Size, "WEFT_ONESHOT_MAX_BYTES", "", "8192", "0..1073741824", Transport,       \
    "AllReduce of at most this many bytes per rank uses the one-shot ring (every input travels "    \
    "once around the ring, then each rank reduces locally): n-1 hops instead of 2(n-1); 0 = never") \
  X(nChannels, Int, "WEFT_NCHANNELS", "", "2", "1..64", Transport,                                 \
    "Ring channels in host mode, before NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS clamp them")     \
  X(minNChannels, Int, "NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS", "1", "1..64", Transport,             \
    "Fewest channels a communicator uses")                                                         \
  X(maxNChannels, Int, "NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS", "64", "1..64", Transport,            \
    "Most channels a communicator uses")                                                           \
  X(shmDisable, Bool, "NCCL_SHM_DISABLE", "", "0", "", Transport,                                  \
    "1 = processes on one host do not use the shared-memory transport between them")               \
  X(runtimeConnect, Bool, "NCCL_RUNTIME_CONNECT", "", "1", "", Transport,                          \
    "1 = connect to a peer when a call first needs it; 0 = connect every channel's ring "          \
    "neighbours during communicator init (point-to-point peers still connect on first use)")      \
  /* ---- bootstrap ---- */                                                                        \
  X(commId, String, "NCCL_COMM_ID", "", "", "", Bootstrap,                                         \
    "Rendezvous address \"host:port\"; when set, rank 0 hosts the root there instead of the "      \
    "address carried in the unique id")                                                            \
  X(socketIfname, String, "NCCL_SOCKET_IFNAME", "", "", "", Bootstrap,                             \
    "Network interfaces to use: comma list of name prefixes; a leading ^ excludes them, a "        \
    "leading = asks for exact names (\"\" = chosen automatically)")                                \
  X(socketFamily, String, "NCCL_SOCKET_FAMILY", "", "", "AF_INET|AF_INET6", Bootstrap,             \
    "Address family of the sockets: AF_INET or AF_INET6 (\"\" = either)")                          \
  X(hostId, String, "WEFT_HOST_ID", "", "", "", Bootstrap,                                         \
    "Overrides this process's host identity, so processes of one machine can act as if on "        \
    "different hosts (for tests)")                                                                 \
  /* ---- network ---- */                                                                          \
  X(net, String, "NCCL_NET", "", "", "", Network,                                                  \
    "Network to use by name, case-insensitive: Socket, IB (not built yet) or an external "         \
    "plugin's name (\"\" = the first that has devices); unknown names fail listing the choices")  \
  X(netPlugin, String, "NCCL_NET_PLUGIN", "", "", "", Network,                                     \
    "Network plugin to load: a name foo loads libnccl-net-foo.so (or librccl-net-foo.so), a value " \
    "with .so or / is a file, none loads nothing (\"\" = libnccl-net.so when present)")            \
  X(socketNThreads, Int, "NCCL_SOCKET_NTHREADS", "", "0", "0..16", Network,                        \
    "Helper threads per Socket network connection (0 = automatic: 2); threads times sockets per "  \
    "thread is at most 64")                                                                        \
  X(nSocksPerThread, Int, "NCCL_NSOCKS_PERTHREAD", "", "0", "0..64", Network,                      \
    "Data sockets per helper thread of a Socket network connection (0 = automatic: 1)")            \
  X(netLinkTimeoutMs, Int, "WEFT_NET_LINK_TIMEOUT_MS", "", "30000", "100..3600000", Network,       \
    "Socket network: a connection attempt, or unacknowledged data on a connection "                \
    "(TCP_USER_TIMEOUT and keepalive), fails after this many ms")                                  \
  /* ---- communicator behaviour ---- */                                                           \
  X(commBlocking, Int, "NCCL_COMM_BLOCKING", "", "-1", "-1..1", Comm,                              \
    "1 = blocking, 0 = non-blocking communicators (calls may return ncclInProgress); -1 = not "    \
    "set, ncclConfig_t.blocking decides (blocking by default)")                                    \
  X(device, String, "WEFT_DEVICE", "", "auto", "auto|host", Comm,                                  \
    "Where collectives run: auto lets Weft choose (host mode in builds without a GPU backend), "   \
    "host forces host mode")                                                                       \
  X(timeoutMs, Int, "WEFT_TIMEOUT_MS", "", "300000", "1..2147483647", Comm,                        \
    "Milliseconds a rank waits for a peer before the call fails with an error naming that peer")   \
  X(spinUs, Int, "WEFT_SPIN_US", "", "100", "0..1000000", Comm,                                    \
    "Microseconds a waiting rank spins before it starts sleeping (0 = sleep at once)")             \
  X(livenessMs, Int, "WEFT_LIVENESS_MS", "", "200", "1..3600000", Comm,                            \
    "While a rank sleeps waiting for a peer, how often (ms) it checks that the peer's process is " \
    "alive and has not aborted; a dead peer fails the call within about this time")                \
  X(checkPointers, Int, "NCCL_CHECK_POINTERS", "", "0", "0..1", Future,                            \
    "1 = validate device pointers with the GPU runtime (read by the GPU executors; host mode "     \
    "checks only for NULL buffers)")                                                               \
  /* ---- topology ---- */                                                                          \
  X(topoFile, String, "NCCL_TOPO_FILE", "", "", "", Topology,                                      \
    "NCCL topology XML (e.g. a cloud provider's file for its GPU VMs) that describes this host; "  \
    "its CPUs, PCI switches, GPUs and NICs win over what hwloc detects, detected devices it does " \
    "not list are added (\"\" = detection only)")                                                  \
  X(topoDumpFile, String, "NCCL_TOPO_DUMP_FILE", "", "", "", Topology,                             \
    "Rank 0 writes the topology it uses (detected, merged with NCCL_TOPO_FILE) to this path as "   \
    "NCCL topology XML during communicator init")                                                  \
  /* ---- read now, used by features that are not built yet ---- */                                \
  X(p2pDisable, Bool, "NCCL_P2P_DISABLE", "", "0", "", Future,                                     \
    "1 = no direct GPU peer-to-peer copies between devices of one host (read by the GPU "          \
    "transports; not used in host-only builds yet)")                                               \
  X(ibDisable, Bool, "NCCL_IB_DISABLE", "", "0", "", Future,                                       \
    "1 = do not use InfiniBand or RoCE (read by the IB network transport; not built yet)")         \
  X(algo, String, "NCCL_ALGO", "", "", "", Future,                                                 \
    "Algorithms the tuner may pick, e.g. Ring or ^Tree (read by the tuner; not used yet)")         \
  X(proto, String, "NCCL_PROTO", "", "", "", Future,                                               \
    "Protocols the tuner may pick, e.g. Simple or ^LL128 (read by the tuner; not used yet)")       \
  X(tunerPlugin, String, "NCCL_TUNER_PLUGIN", "", "", "", Future,                                  \
    "Tuner plugin library to load, by name or path (read by the plugin loader; not used yet)")     \
  X(ignoreCpuAffinity, Bool, "NCCL_IGNORE_CPU_AFFINITY", "", "0", "", Future,                      \
    "1 = ignore the process's CPU affinity when placing helper threads (read by topology "         \
    "detection; not used yet)")                                                                    \
  X(localRegister, Bool, "NCCL_LOCAL_REGISTER", "", "1", "", Future,                               \
    "1 = buffers registered with ncclCommRegister may be used in place; 0 = always copy through "  \
    "the FIFO (read by buffer registration; not used yet)")
