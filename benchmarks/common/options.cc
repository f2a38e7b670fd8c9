// Weft perf tools: command-line parsing (see options.h and benchmarks/README.md).
#include "options.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weftbench {

namespace {

enum LongOnly { kRunCycles = 1000, kTimeout, kRotate };

void usage(const char* tool) {
  std::printf(
      "USAGE: %s\n"
      "  Sizes\n"
      "    -b,--minbytes <size>       smallest size (K/M/G suffixes; default 32M)\n"
      "    -e,--maxbytes <size>       largest size (default 32M)\n"
      "    -i,--stepbytes <size>      fixed increment between sizes (default 1M)\n"
      "    -f,--stepfactor <factor>   multiplication factor between sizes (default: disabled)\n"
      "  Operation\n"
      "    -o,--op <sum/prod/max/min/avg/mulsum/all>   reduction operator (default sum)\n"
      "    -d,--datatype <type/all>   int8 uint8 int32 uint32 int64 uint64 half float double\n"
      "                               bfloat16 f8e4m3 f8e5m2 (default float)\n"
      "    -r,--root <root/all>       root of rooted collectives (default 0)\n"
      "  Performance\n"
      "    -n,--iters <n>             timed iterations (default 20)\n"
      "    -w,--warmup_iters <n>      untimed warm-up iterations per size (default 1)\n"
      "    -m,--agg_iters <n>         operations grouped (ncclGroupStart/End) per iteration (default 1)\n"
      "    -a,--average <0/1/2/3>     time reported across ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)\n"
      "    -c,--check <n>             validation passes per size, 0 to skip (default 1)\n"
      "    -u,--unalign <n>           offset both buffers by n elements (default 0)\n"
      "    --run_cycles <n>           repeat the size sweep n times, 0 forever (default 1)\n"
      "    --timeout <seconds>        abort a run that takes longer (default: none)\n"
      "    --rotate <0/1>             walk successive iterations through the whole buffer like\n"
      "                               nccl-tests (1, default) or reuse the same bytes (0)\n"
      "  Ranks (Weft host mode)\n"
      "    -N,--nranks <n>            fork n processes, one rank each (the parent only waits)\n"
      "    -T,-t,--threads <n>        n ranks as threads of each process\n"
      "    (under mpirun or torchrun every process is a rank; see README.md)\n"
      "    -R,--local_register <0/1/2>  register the buffers: 1 ncclCommRegister, 2 symmetric\n"
      "                               windows (default 0)\n"
      "  Accepted for nccl-tests compatibility, no effect in host mode\n"
      "    -z,--blocking  -G,--cudagraph  -C,--report_cputime  -p,--parallel_init\n"
      "    -y,--stream_null  -g,--ngpus 1  -x -D -V -S -J -M -I -K\n"
      "    -h,--help\n",
      tool);
}

bool parseInt(const char* s, long lo, long hi, int* out) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 0);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

bool parseSize(const char* s, size_t* out) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (errno || end == s || !(v >= 0)) return false;
  double mult = 1;
  if (*end) {
    switch (*end) {
      case 'k':
      case 'K': mult = 1024.0; break;
      case 'm':
      case 'M': mult = 1024.0 * 1024; break;
      case 'g':
      case 'G': mult = 1024.0 * 1024 * 1024; break;
      default: return false;
    }
    ++end;
    if (*end == 'B' || *end == 'b') ++end;  // "32MB" as well as "32M"
    if (*end) return false;
  }
  const double bytes = std::floor(v * mult);
  if (bytes > 1e18) return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

bool parseOptions(int argc, char** argv, const char* tool, Options* o, int* exitCode) {
  static const struct option longopts[] = {
      {"nthreads", required_argument, nullptr, 't'},
      {"threads", required_argument, nullptr, 'T'},
      {"nranks", required_argument, nullptr, 'N'},
      {"ngpus", required_argument, nullptr, 'g'},
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"parallel_init", required_argument, nullptr, 'p'},
      {"check", required_argument, nullptr, 'c'},
      {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},
      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},
      {"stream_null", required_argument, nullptr, 'y'},
      {"cudagraph", required_argument, nullptr, 'G'},
      {"report_cputime", required_argument, nullptr, 'C'},
      {"report_timestamps", required_argument, nullptr, 'S'},
      {"output_file", required_argument, nullptr, 'J'},
      {"average", required_argument, nullptr, 'a'},
      {"local_register", required_argument, nullptr, 'R'},
      {"cta_policy", required_argument, nullptr, 'x'},
      {"device_implementation", required_argument, nullptr, 'D'},
      {"device_cta_count", required_argument, nullptr, 'V'},
      {"memory", required_argument, nullptr, 'M'},
      {"unalign", required_argument, nullptr, 'u'},
      {"per_iter_timing", required_argument, nullptr, 'I'},
      {"per_iter_skip", required_argument, nullptr, 'K'},
      {"run_cycles", required_argument, nullptr, kRunCycles},
      {"timeout", required_argument, nullptr, kTimeout},
      {"rotate", required_argument, nullptr, kRotate},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  *exitCode = 1;
  auto bad = [&](const char* what, const char* val) {
    std::fprintf(stderr, "%s: invalid value '%s' for %s (see -h)\n", tool, val ? val : "", what);
    return false;
  };
  int iv = 0;
  optind = 1;
  for (;;) {
    int longindex = 0;
    const int c = getopt_long(argc, argv, "t:T:N:g:b:e:i:f:n:m:w:p:c:o:d:r:z:y:G:C:S:J:a:R:x:D:V:M:u:I:K:h", longopts,
                              &longindex);
    if (c == -1) break;
    switch (c) {
      case 'b':
        if (!parseSize(optarg, &o->minBytes)) return bad("-b (minbytes)", optarg);
        break;
      case 'e':
        if (!parseSize(optarg, &o->maxBytes)) return bad("-e (maxbytes)", optarg);
        break;
      case 'i':
        if (!parseSize(optarg, &o->stepBytes)) return bad("-i (stepbytes)", optarg);
        break;
      case 'f': {
        char* end = nullptr;
        o->stepFactor = std::strtod(optarg, &end);
        if (end == optarg || *end || !(o->stepFactor > 0)) return bad("-f (stepfactor)", optarg);
        break;
      }
      case 'n':
        if (!parseInt(optarg, 1, 1L << 30, &o->iters)) return bad("-n (iters)", optarg);
        break;
      case 'w':
        if (!parseInt(optarg, 0, 1L << 30, &o->warmupIters)) return bad("-w (warmup_iters)", optarg);
        break;
      case 'm':
        if (!parseInt(optarg, 1, 1L << 20, &o->aggIters)) return bad("-m (agg_iters)", optarg);
        break;
      case 'c':
        if (!parseInt(optarg, 0, 1L << 20, &o->check)) return bad("-c (check)", optarg);
        break;
      case 'a':
        if (!parseInt(optarg, 0, 3, &o->average)) return bad("-a (average)", optarg);
        break;
      case 'o':
        if (!parseOps(optarg, &o->ops)) return bad("-o (op)", optarg);
        break;
      case 'd':
        if (!parseTypes(optarg, &o->types)) return bad("-d (datatype)", optarg);
        break;
      case 'r':
        if (std::strcmp(optarg, "all") == 0)
          o->root = -1;
        else if (!parseInt(optarg, 0, 1L << 24, &o->root))
          return bad("-r (root)", optarg);
        break;
      case 'u':
        if (!parseInt(optarg, 0, 1L << 20, &iv)) return bad("-u (unalign)", optarg);
        o->unalign = static_cast<size_t>(iv);
        break;
      case 'N':
        if (!parseInt(optarg, 1, 4096, &o->forkRanks)) return bad("-N (nranks)", optarg);
        break;
      case 't':
      case 'T':
        if (!parseInt(optarg, 1, 4096, &o->threads)) return bad("-T (threads)", optarg);
        break;
      case 'g':
        if (!parseInt(optarg, 1, 1L << 20, &iv)) return bad("-g (ngpus)", optarg);
        if (iv != 1) {
          std::fprintf(stderr, "%s: -g %d: in host mode every rank is one thread or process; use -T or -N\n", tool, iv);
          return false;
        }
        break;
      case kRunCycles:
        if (!parseInt(optarg, 0, 1L << 30, &o->runCycles)) return bad("--run_cycles", optarg);
        break;
      case kTimeout:
        if (!parseInt(optarg, 0, 1L << 30, &o->timeoutSec)) return bad("--timeout", optarg);
        break;
      case kRotate:
        if (!parseInt(optarg, 0, 1, &iv)) return bad("--rotate", optarg);
        o->rotate = iv != 0;
        break;
      case 'z':
        if (!parseInt(optarg, 0, 3, &o->blocking)) return bad("-z (blocking)", optarg);
        if (o->blocking)
          o->notes.push_back("# Option -z " + std::string(optarg) +
                             " accepted: in host mode every call already returns with its result complete");
        break;
      case 'G':
        if (!parseInt(optarg, 0, 1L << 30, &o->graphLaunches)) return bad("-G (cudagraph)", optarg);
        if (o->graphLaunches) o->notes.push_back("# Option -G (CUDA graph) ignored: host mode has no graphs");
        break;
      case 'C':
        if (!parseInt(optarg, 0, 1, &o->cpuTime)) return bad("-C (report_cputime)", optarg);
        if (o->cpuTime) o->notes.push_back("# Option -C ignored: in host mode the CPU time of a call is its latency");
        break;
      case 'p':
        if (!parseInt(optarg, 0, 1, &o->parallelInit)) return bad("-p (parallel_init)", optarg);
        break;
      case 'R':
        if (!parseInt(optarg, 0, 2, &o->localRegister)) return bad("-R (local_register)", optarg);
        break;
      case 'y': break;  // host mode always passes a NULL stream
      case 'x':
      case 'D':
      case 'V':
      case 'S':
      case 'J':
      case 'M':
      case 'I':
      case 'K':
        o->notes.push_back(std::string("# Option -") + static_cast<char>(c) + " " + optarg +
                           " ignored: not supported by Weft's perf tools");
        break;
      case 'h':
        usage(tool);
        *exitCode = 0;
        return false;
      default: usage(tool); return false;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (see -h)\n", tool, argv[optind]);
    return false;
  }
  if (o->minBytes > o->maxBytes) {
    std::fprintf(stderr, "%s: invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n", tool, o->minBytes,
                 o->maxBytes);
    return false;
  }
  if (o->stepFactor <= 1 && o->stepBytes == 0 && o->minBytes != o->maxBytes) {
    std::fprintf(stderr, "%s: -i 0 without -f > 1 would never reach maxbytes\n", tool);
    return false;
  }
  *exitCode = 0;
  return true;
}

}  // namespace weftbench
