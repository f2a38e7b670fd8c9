// The one table of every environment variable Weft reads. src/base/params.cc expands it into the
// parser, weft-info's listing and docs/env.md, and params.h into the typed accessors and the
// struct of agreed settings, so a knob added here is documented and declared everywhere at once.
//
// Each row: X(accessor, Type, "NAME", "ALIASES", "DEFAULT", "ALLOWED", Group, Scope, "DOC")
//   accessor  the name of its accessor in weft::param (Rank) or field of param::Agreed (Agreed)
//   Type      Int (int64_t), Size (int64_t, accepts K/M/G), Bool (bool) or String (std::string)
//   NAME      the primary variable; ALIASES other accepted names, comma separated, read only when
//             NAME is unset or empty
//   DEFAULT   the value used when the environment sets none (written as a user would write it)
//   ALLOWED   "" = anything the type accepts; "lo..hi", "lo.." or "..hi" for numbers;
//             "a|b|c" for strings (matched case-insensitively, stored in the spelling given here)
//   Group     the section of docs/env.md the row appears in
//   Scope     Agreed: it decides how a collective runs (algorithm, protocol, channels, chunking,
//             transport, program shape), so every rank of a communicator must use one value: it
//             has no free accessor, only a field of param::Agreed, which communicator init fills
//             with rank 0's value on every rank (src/comm/agreement.h). Rank: legitimately per
//             process (logging, interfaces, timeouts, file paths); a free accessor reads it.
//             A new knob that steers an algorithm must be Agreed: code under collectives/ and
//             src/tuning/ cannot read Rank parameters (tests/unit/agreement_test.cc checks it).
//   DOC       one line for users; knobs whose feature is not built yet say so
#pragma once

#define WEFT_PARAM_TABLE(X)                                                                                            \
  /* ---- logging ---- */                                                                                              \
  X(debugLevel, String, "NCCL_DEBUG", "", "", "VERSION|WARN|INFO|ABORT|TRACE", Logging, Rank,                          \
    "Log verbosity, case-insensitive: VERSION, WARN, INFO, ABORT (prints what INFO prints) or "                        \
    "TRACE (\"\" = print nothing, not even warnings)")                                                                 \
  X(debugSubsys, String, "NCCL_DEBUG_SUBSYS", "", "", "", Logging, Rank,                                               \
    "Subsystems whose INFO and TRACE lines print: comma list of INIT, COLL, P2P, SHM, NET, GRAPH, "                    \
    "TUNING, ENV, ALLOC, CALL, PROXY, NVLS, BOOTSTRAP, REG, PROFILE, RAS, ALL; a leading ^ "                           \
    "inverts the set (\"\" = INIT,BOOTSTRAP,ENV)")                                                                     \
  X(debugFile, String, "NCCL_DEBUG_FILE", "", "", "", Logging, Rank,                                                   \
    "Write log lines to this file instead of stderr; %h = host name, %p = process id, %% = %. "                        \
    "The file is truncated when opened, so give each process its own name with %p")                                    \
  X(traceFile, String, "WEFT_TRACE_FILE", "", "", "", Logging, Rank,                                                   \
    "Write a timeline of every API call, group, operation, step, wait and network transfer as "                        \
    "Chrome/Perfetto trace JSON to this file; %h = host, %p = process id, %r = rank, %% = %. "                         \
    "Written when the communicator is destroyed and at exit (docs/trace.md; \"\" = no trace)")                         \
  X(traceMaxEvents, Int, "WEFT_TRACE_MAX_EVENTS", "", "1000000", "1000..100000000", Logging, Rank,                     \
    "Events a process keeps for its trace; later ones are counted as dropped (about 150 bytes each)")                  \
  X(profilerPlugin, String, "NCCL_PROFILER_PLUGIN", "", "", "", Logging, Rank,                                         \
    "Profiler plugin (NCCL profiler ABI v7 to v1): a path or libX.so, else NAME for "                                  \
    "libnccl-profiler-NAME.so; none = no plugin (\"\" = libnccl-profiler.so if it loads). It gets "                    \
    "group, collective, point-to-point and network proxy events (docs/trace.md)")                                      \
  /* ---- transports and buffers ---- */                                                                               \
  X(buffSize, Size, "NCCL_BUFFSIZE", "", "1048576", "1..", Transport, Agreed,                                          \
    "Bytes of one connection's FIFO; Weft's host-mode default of 1 MiB (NCCL's is 4 MiB) keeps "                       \
    "the FIFO in cache")                                                                                               \
  X(oneShotMaxBytes, Size, "WEFT_ONESHOT_MAX_BYTES", "", "8192", "0..1073741824", Transport, Agreed,                   \
    "Largest AllReduce (bytes per rank) that may use the one-shot ring (every input travels once "                     \
    "around the ring, then each rank reduces locally: n-1 hops instead of 2(n-1)); the tuner "                         \
    "chooses it as Ring with protocol LL where its cost model says it is faster; 0 = never")                           \
  X(nChannels, Int, "WEFT_NCHANNELS", "", "2", "1..64", Transport, Agreed,                                             \
    "Ring channels in host mode, before NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS clamp them")                         \
  X(minNChannels, Int, "NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS", "1", "1..64", Transport, Agreed,                         \
    "Fewest channels a communicator uses")                                                                             \
  X(maxNChannels, Int, "NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS", "64", "1..64", Transport, Agreed,                        \
    "Most channels a communicator uses")                                                                               \
  X(shmDisable, Bool, "NCCL_SHM_DISABLE", "", "0", "", Transport, Agreed,                                              \
    "1 = processes on one host do not use the shared-memory transport between them")                                   \
  X(runtimeConnect, Bool, "NCCL_RUNTIME_CONNECT", "", "1", "", Transport, Agreed,                                      \
    "1 = connect to a peer when a call first needs it; 0 = connect every channel's ring "                              \
    "neighbours during communicator init (point-to-point peers still connect on first use)")                           \
  X(p2pDisable, Bool, "NCCL_P2P_DISABLE", "", "0", "", Transport, Agreed,                                              \
    "1 = GPU ranks of one host do not map each other's memory (P2P); their FIFOs go through "                          \
    "host shared memory registered with the GPU instead")                                                              \
  X(p2pLevel, String, "NCCL_P2P_LEVEL", "", "", "LOC|NVL|PIX|PXB|PHB|SYS", Transport, Agreed,                          \
    "Farthest GPU-to-GPU path that may use P2P: LOC (never), NVL, PIX, PXB, PHB, SYS (always; "                        \
    "also the default); ranks on the same GPU always may")                                                             \
  X(p2pReadEnable, Bool, "NCCL_P2P_READ_ENABLE", "", "0", "", Transport, Agreed,                                       \
    "1 = P2P read mode: a FIFO lives in the sender's GPU memory and the receiver reads it; 0 = "                       \
    "write mode (the sender writes into the receiver's GPU)")                                                          \
  /* ---- bootstrap ---- */                                                                                            \
  X(commId, String, "NCCL_COMM_ID", "", "", "", Bootstrap, Rank,                                                       \
    "Rendezvous address \"host:port\"; when set, rank 0 hosts the root there instead of the "                          \
    "address carried in the unique id")                                                                                \
  X(commSecret, String, "WEFT_COMM_SECRET", "", "", "", Bootstrap, Rank,                                               \
    "A secret that every rank of a job sets alike when it meets through NCCL_COMM_ID: ranks then "                     \
    "prove to each other that they hold it (it never crosses the network), and a client that "                         \
    "cannot is refused a rank slot. Unset: the secret is derived from NCCL_COMM_ID's text, which "                     \
    "anyone who can reach the port can compute too (a warning says so)")                                               \
  X(socketIfname, String, "NCCL_SOCKET_IFNAME", "", "", "", Bootstrap, Rank,                                           \
    "Network interfaces to use: comma list of name prefixes; a leading ^ excludes them, a "                            \
    "leading = asks for exact names (\"\" = chosen automatically)")                                                    \
  X(socketFamily, String, "NCCL_SOCKET_FAMILY", "", "", "AF_INET|AF_INET6", Bootstrap, Rank,                           \
    "Address family of the sockets: AF_INET or AF_INET6 (\"\" = either)")                                              \
  X(hostId, String, "WEFT_HOST_ID", "", "", "", Bootstrap, Rank,                                                       \
    "Overrides this process's host identity, so processes of one machine can act as if on "                            \
    "different hosts (for tests)")                                                                                     \
  X(tlsKeyFile, String, "WEFT_TLS_KEY_FILE", "", "", "", Bootstrap, Rank,                                              \
    "File holding the pre-shared key (at least 32 bytes; one trailing newline is ignored) that "                       \
    "encrypts Weft's sockets with TLS 1.3, as ncclSetEncryption does; that call takes "                                \
    "precedence (\"\" = no encryption unless the call asks for it); see docs/security.md")                             \
  X(tlsLibssl, String, "WEFT_TLS_LIBSSL", "", "libssl.so.3", "", Bootstrap, Rank,                                      \
    "OpenSSL 3 library that TLS loads at run time (a name for dlopen or a path)")                                      \
  /* ---- network ---- */                                                                                              \
  X(net, String, "NCCL_NET", "", "", "", Network, Rank,                                                                \
    "Network to use by name, case-insensitive: IB, Socket or an external plugin's name (\"\" = the first "             \
    "that has devices: the plugin, then IB, then Socket); unknown names fail listing the choices")                     \
  X(netPlugin, String, "NCCL_NET_PLUGIN", "", "", "", Network, Rank,                                                   \
    "Network plugin to load: a name foo loads libnccl-net-foo.so (or librccl-net-foo.so), a value "                    \
    "with .so or / is a file, none loads nothing (\"\" = libnccl-net.so when present)")                                \
  X(socketNThreads, Int, "NCCL_SOCKET_NTHREADS", "", "0", "0..16", Network, Rank,                                      \
    "Helper threads per Socket network connection (0 = automatic: 2); threads times sockets per "                      \
    "thread is at most 64")                                                                                            \
  X(nSocksPerThread, Int, "NCCL_NSOCKS_PERTHREAD", "", "0", "0..64", Network, Rank,                                    \
    "Data sockets per helper thread of a Socket network connection (0 = automatic: 1)")                                \
  X(socketInlineBytes, Size, "WEFT_SOCKET_INLINE_BYTES", "", "4194304", "0..1073741824", Network, Rank,                \
    "Socket network: messages up to this size travel on the connection's control socket, moved by "                    \
    "the thread that polls the network (no hand-off); larger ones are split over the helper "                          \
    "threads' sockets (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD). The default holds every FIFO "                   \
    "slot of an NCCL_BUFFSIZE up to 32 MiB; a lower value spreads larger messages over the helpers, "                  \
    "which pays only with spare cores (benchmarks/README.md)")                                                         \
  X(socketDelayedAcks, Bool, "WEFT_SOCKET_DELAYED_ACKS", "", "1", "", Network, Rank,                                   \
    "Socket network: while small messages arrive on a connection, let the kernel acknowledge every "                   \
    "second one (delayed ACKs, TCP_QUICKACK=0) instead of each; larger ones are acknowledged at once "                 \
    "(0 = the kernel's default)")                                                                                      \
  X(netLinkTimeoutMs, Int, "WEFT_NET_LINK_TIMEOUT_MS", "", "30000", "100..3600000", Network, Rank,                     \
    "Socket and IB networks: a connection attempt, or unacknowledged data on a connection "                            \
    "(TCP_USER_TIMEOUT and keepalive; the IB side channel), fails after this many ms")                                 \
  X(ibDisable, Bool, "NCCL_IB_DISABLE", "", "0", "", Network, Rank,                                                    \
    "1 = do not use the built-in IB network (no RDMA device is opened)")                                               \
  X(ibHca, String, "NCCL_IB_HCA", "", "", "", Network, Rank,                                                           \
    "RDMA devices and ports the IB network uses: comma list of name[:port] prefixes; a leading ^ excludes"             \
    " them, a leading = (after any ^) makes the names exact (\"\" = every active port)")                               \
  X(ibGidIndex, Int, "NCCL_IB_GID_INDEX", "", "-1", "-1..255", Network, Rank,                                          \
    "GID table index a RoCE port is addressed by (-1 = the RoCE GID of the interface address chosen by "               \
    "NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE)")                                           \
  X(ibRoceVersionNum, Int, "NCCL_IB_ROCE_VERSION_NUM", "", "2", "1..2", Network, Rank,                                 \
    "RoCE version of the GID chosen when NCCL_IB_GID_INDEX is -1 (another version is used when none of "               \
    "this one exists)")                                                                                                \
  X(ibAddrFamily, String, "NCCL_IB_ADDR_FAMILY", "", "AF_INET", "AF_INET|AF_INET6", Network, Rank,                     \
    "Address family of the RoCE GID chosen when NCCL_IB_GID_INDEX is -1")                                              \
  X(ibAddrRange, String, "NCCL_IB_ADDR_RANGE", "", "", "", Network, Rank,                                              \
    "Only RoCE GIDs inside this address/prefix range (e.g. 10.0.0.0/16) are chosen (\"\" = any)")                      \
  X(ibTc, Int, "NCCL_IB_TC", "", "0", "0..255", Network, Rank, "Traffic class of the IB network's RoCE packets (GRH)") \
  X(ibSl, Int, "NCCL_IB_SL", "", "0", "0..15", Network, Rank, "Service level of the IB network's packets")             \
  X(ibQpsPerConnection, Int, "NCCL_IB_QPS_PER_CONNECTION", "", "1", "1..12", Network, Rank,                            \
    "Queue pairs per IB network connection (the receiver's value is used by both ends)")                               \
  X(ibSplitDataOnQps, Bool, "NCCL_IB_SPLIT_DATA_ON_QPS", "", "0", "", Network, Rank,                                   \
    "1 = split every IB message over all the connection's QPs; 0 = each message uses one QP, in turn")                 \
  X(ibTimeout, Int, "NCCL_IB_TIMEOUT", "", "20", "1..31", Network, Rank,                                               \
    "IB transport timeout exponent: a QP retries after 4.096 us x 2^value without an acknowledgement")                 \
  X(ibRetryCnt, Int, "NCCL_IB_RETRY_CNT", "", "7", "0..7", Network, Rank,                                              \
    "IB transport retries before a send fails with a retry-exceeded error")                                            \
  /* ---- communicator behaviour ---- */                                                                               \
  X(commBlocking, Int, "NCCL_COMM_BLOCKING", "", "-1", "-1..1", Comm, Rank,                                            \
    "1 = blocking, 0 = non-blocking communicators (calls may return ncclInProgress); -1 = not "                        \
    "set, ncclConfig_t.blocking decides (blocking by default)")                                                        \
  X(device, String, "WEFT_DEVICE", "", "auto", "auto|host", Comm, Rank,                                                \
    "Where collectives run: auto lets Weft choose (host mode in builds without a GPU backend), "                       \
    "host forces host mode")                                                                                           \
  X(timeoutMs, Int, "WEFT_TIMEOUT_MS", "", "300000", "1..2147483647", Comm, Rank,                                      \
    "Milliseconds a rank waits for a peer before the call fails with an error naming that peer")                       \
  X(spinUs, Int, "WEFT_SPIN_US", "", "100", "0..1000000", Comm, Rank,                                                  \
    "Microseconds a waiting rank spins at most before it starts sleeping (0 = sleep at once); a rank waiting on "      \
    "local peers with a core of its own spins less after waits that outlasted its spin")                               \
  X(livenessMs, Int, "WEFT_LIVENESS_MS", "", "200", "1..3600000", Comm, Rank,                                          \
    "While a rank sleeps waiting for a peer, how often (ms) it checks that the peer's process is "                     \
    "alive and has not aborted; a dead peer fails the call within about this time")                                    \
  X(mismatchCheck, Bool, "WEFT_MISMATCH_CHECK", "", "1", "", Comm, Agreed,                                             \
    "1 = every message carries its sender's call (collective, count, type, op, root, algorithm) "                      \
    "and a rank that called something else fails at once naming both calls; 0 = do not compare")                       \
  /* ---- topology ---- */                                                                                             \
  X(topoFile, String, "NCCL_TOPO_FILE", "", "", "", Topology, Rank,                                                    \
    "NCCL topology XML (e.g. a cloud provider's file for its GPU VMs) that describes this host; "                      \
    "its CPUs, PCI switches, GPUs and NICs win over what hwloc detects, detected devices it does "                     \
    "not list are added (\"\" = detection only)")                                                                      \
  X(topoDumpFile, String, "NCCL_TOPO_DUMP_FILE", "", "", "", Topology, Rank,                                           \
    "Rank 0 writes the topology it uses (detected, merged with NCCL_TOPO_FILE) to this path as "                       \
    "NCCL topology XML during communicator init")                                                                      \
  /* ---- dda and low precision ---- */                                                                                \
  X(ddaAllReduce, Bool, "RCCL_ENABLE_DDA_ALL_REDUCE", "", "1", "", Dda, Agreed,                                        \
    "1 = on a communicator whose ranks all share one host, the tuner may run AllReduce with "                          \
    "direct data access (flat up to RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES, tree up to "                                   \
    "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES) where its cost model says that is faster; 0 = never")                         \
  X(ddaFlatMaxBytes, Size, "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "", "204800", "0..", Dda, Agreed,                     \
    "Largest AllReduce (bytes) that takes DDA flat: every rank reduces all peers' inputs")                             \
  X(ddaTreeMaxBytes, Size, "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES", "", "-1", "-1..", Dda, Agreed,                        \
    "Largest AllReduce (bytes) that takes DDA tree: reduce-scatter then all-gather by direct "                         \
    "reads; larger ones use the ring or the tree. -1 = the default for where the ranks run: "                          \
    "RCCL's 30408704 (29 MiB) on GPUs, no limit in host mode (the cost model weighs DDA tree "                         \
    "against the ring and the tree at every size)")                                                                    \
  X(ddaSendbufBytes, Size, "RCCL_DDA_SENDBUF_BYTES", "", "2097152", "65536..1073741824", Dda, Agreed,                  \
    "Bytes of each rank's direct-access staging area (shared memory in host mode, device memory on "                   \
    "GPUs), made on first DDA or low-precision use; larger messages go in rounds of half of it "                       \
    "(RCCL's default is 32 MiB of GPU memory)")                                                                        \
  X(directBlocks, Int, "WEFT_DIRECT_BLOCKS", "", "8", "1..64", Dda, Rank,                                              \
    "GPU communicators: the most thread blocks one direct-lane sequence (DDA, low precision) runs "                    \
    "on, one per 16 KiB of its largest step; a rank's blocks meet before it meets its peers, so "                      \
    "each rank may choose its own")                                                                                    \
  X(ddaAllGather, Int, "RCCL_ENABLE_DDA_ALL_GATHER", "", "-1", "-1..1", Dda, Agreed,                                   \
    "1 = AllGather up to RCCL_DDA_ALL_GATHER_MAX_BYTES (all ranks' data) uses direct reads; "                          \
    "0 = never; -1 = the default for where the ranks run: off on GPUs (RCCL's default), and in "                       \
    "host mode the cost model weighs direct reads against the ring at every size")                                     \
  X(ddaAllGatherMaxBytes, Size, "RCCL_DDA_ALL_GATHER_MAX_BYTES", "", "16777216", "0..", Dda, Agreed,                   \
    "Largest AllGather (bytes of the whole output) that RCCL_ENABLE_DDA_ALL_GATHER=1 sends "                           \
    "through direct reads")                                                                                            \
  X(ddaReduceScatter, Int, "RCCL_ENABLE_DDA_REDUCE_SCATTER", "", "-1", "-1..1", Dda, Agreed,                           \
    "1 = ReduceScatter up to RCCL_DDA_REDUCE_SCATTER_MAX_BYTES (the whole input) uses direct "                         \
    "reads; 0 = never; -1 = the default for where the ranks run: off on GPUs (RCCL's default), "                       \
    "and in host mode the cost model weighs direct reads against the ring at every size")                              \
  X(ddaReduceScatterMaxBytes, Size, "RCCL_DDA_REDUCE_SCATTER_MAX_BYTES", "", "8388608", "0..", Dda, Agreed,            \
    "Largest ReduceScatter (bytes of one rank's whole input) that RCCL_ENABLE_DDA_REDUCE_SCATTER=1 "                   \
    "sends through direct reads")                                                                                      \
  X(ddaAllToAll, Bool, "RCCL_ENABLE_DDA_ALL_TO_ALL", "", "0", "", Dda, Agreed,                                         \
    "1 = AlltoAll up to RCCL_DDA_ALL_TO_ALL_MAX_BYTES (one rank's whole input) uses direct reads")                     \
  X(ddaAllToAllMaxBytes, Size, "RCCL_DDA_ALL_TO_ALL_MAX_BYTES", "", "2097152", "0..", Dda, Agreed,                     \
    "Largest AlltoAll (bytes of one rank's whole input) that uses direct reads")                                       \
  X(lowPrecision, Bool, "RCCL_LOW_PRECISION_ENABLE", "", "0", "", Dda, Agreed,                                         \
    "1 = float32, bfloat16 and float16 AllReduce, AllGather, ReduceScatter and AlltoAll (sum "                         \
    "only) of at least WEFT_LOW_PRECISION_MIN_BYTES travel as FP8 e4m3 with a float32 scale per "                      \
    "256 elements: lossy, about 2 significant digits")                                                                 \
  X(lowPrecisionAllReduce, Int, "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE", "", "-1", "-1..1", Dda, Agreed,                 \
    "Low-precision AllReduce: 1 = on, 0 = off, -1 = as RCCL_LOW_PRECISION_ENABLE says")                                \
  X(lowPrecisionAllGather, Int, "RCCL_LOW_PRECISION_ENABLE_ALLGATHER", "", "-1", "-1..1", Dda, Agreed,                 \
    "Low-precision AllGather: 1 = on, 0 = off, -1 = as RCCL_LOW_PRECISION_ENABLE says")                                \
  X(lowPrecisionReduceScatter, Int, "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER", "", "-1", "-1..1", Dda, Agreed,         \
    "Low-precision ReduceScatter: 1 = on, 0 = off, -1 = as RCCL_LOW_PRECISION_ENABLE says")                            \
  X(lowPrecisionAllToAll, Int, "RCCL_LOW_PRECISION_ENABLE_ALLTOALL", "", "-1", "-1..1", Dda, Agreed,                   \
    "Low-precision AlltoAll: 1 = on, 0 = off, -1 = as RCCL_LOW_PRECISION_ENABLE says")                                 \
  X(lowPrecisionMinBytes, Size, "WEFT_LOW_PRECISION_MIN_BYTES", "", "16777216", "0..", Dda, Agreed,                    \
    "Smallest message (bytes, as RCCL counts them: the whole AllGather output, one rank's whole "                      \
    "ReduceScatter or AlltoAll input) that takes the low-precision path when it is enabled")                           \
  /* ---- tuning ---- */                                                                                               \
  X(algo, String, "NCCL_ALGO", "", "", "", Tuning, Agreed,                                                             \
    "Algorithms the tuner may choose: comma list of Ring, Tree, DDAFlat, DDATree, LowPrecision, "                      \
    "Doubling, HalvingDoubling (NCCL's CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT are accepted and select "      \
    "nothing); a leading ^ excludes the listed ones; per collective with ';' and a prefix, e.g. "                      \
    "\"ring;allreduce:tree,ring;broadcast:ring\"; case-insensitive; a bad token is warned about "                      \
    "and skipped (\"\" = all)")                                                                                        \
  X(proto, String, "NCCL_PROTO", "", "", "", Tuning, Agreed,                                                           \
    "Protocols the tuner may choose, same syntax as NCCL_ALGO: LL, LL128, Simple, e.g. "                               \
    "\"^LL128;allreduce:LL,Simple\". Host mode: Simple = FIFO slots with separate payload; LL = "                      \
    "the small-message path (32-byte inline slot payload, the one-shot ring AllReduce); LL128 = LL")                   \
  X(overrideAlgo, String, "RCCL_OVERRIDE_ALGO", "", "", "", Tuning, Agreed,                                            \
    "One algorithm forced over the tuner's choice for every collective that can run with it "                          \
    "(others keep the tuner's choice, with one warning); unlike NCCL_ALGO it bypasses the model")                      \
  X(overrideProto, String, "RCCL_OVERRIDE_PROTO", "", "", "", Tuning, Agreed,                                          \
    "One protocol forced over the tuner's choice wherever the chosen algorithm has it")                                \
  X(envPlugin, String, "NCCL_ENV_PLUGIN", "", "", "", Tuning, Rank,                                                    \
    "Environment plugin (NCCL env ABI v2 or v1) that answers every other parameter in place of the "                   \
    "process environment: a path, libX.so, or NAME for libnccl-env-NAME.so; none = no plugin "                         \
    "(\"\" = libnccl-env.so if it loads). Always read from the process environment")                                   \
  X(tunerPlugin, String, "NCCL_TUNER_PLUGIN", "", "", "", Tuning, Rank,                                                \
    "Tuner plugin (NCCL tuner ABI v7, v6, v5 or v4): a path, libX.so, or NAME for "                                    \
    "libnccl-tuner-NAME.so; none = no plugin (\"\" = libnccl-tuner.so if it loads). It sees and "                      \
    "may change each operation's cost table and channel count; one that fails is reported and "                        \
    "ignored")                                                                                                         \
  X(tunerCalibrate, String, "WEFT_TUNER_CALIBRATE", "", "auto", "auto|redo|off", Tuning, Rank,                         \
    "This host's contribution to the cost model's machine constants (a communicator agrees on "                        \
    "them across its ranks): auto = from the cache file, else measured by one process of the "                         \
    "host at a time under a lock (about 300 ms; provisional when the machine is loaded) and "                          \
    "cached; redo = measure and rewrite the cache; off = built-in defaults")                                           \
  X(tunerConstants, String, "WEFT_TUNER_CONSTANTS", "", "", "", Tuning, Agreed,                                        \
    "Overrides of single cost-model constants, \"name=value,...\", applied after the ranks "                           \
    "combined their hosts' constants (copyGBps, reduceGBps, handoffUs, stepUs, futexWakeUs, "                          \
    "yieldHandoffUs, memGBps, peerReadGBps, cacheMiB, netGBps, netLatUs, crossNumaBwScale, "                           \
    "crossNumaLatScale; weft-info --tuning prints them)")                                                              \
  X(cacheDir, String, "WEFT_CACHE_DIR", "XDG_CACHE_HOME", "", "", Tuning, Rank,                                        \
    "Cache directory; the tuner's calibration goes to its weft/ folder, one file per host name "                       \
    "and CPU model (\"\" = ~/.cache)")
