// weft-info: tells a user what this Weft build is and which settings it would run with in the
// current environment. `--markdown` prints docs/env.md (the committed file is its output), `--json`
// the same facts for scripts.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/env_plugin.h"
#include "base/params.h"
#include "collectives/registry.h"
#include "comm/comm_algorithms.h"
#include "rma/one_sided.h"
#include "topology/describe.h"
#include "topology/nccl_xml.h"
#include "topology/system.h"
#include "transports/net/network.h"
#include "transports/net/plugin/loader.h"
#include "tuning/calibration.h"
#include "tuning/select.h"
#include "tuning/tuner.h"
#include "tuning/tuner_setup.h"
#include "weft/build_config.h"
#if WEFT_HAVE_VERBS
#include "transports/net/ib/ib_net.h"
#endif

namespace {

void usage(FILE* to) {
  std::fprintf(to,
               "usage: weft-info [--markdown | --json | --algorithms | --networks | --topology | --topology-xml |\n"
               "                  --tuning [--nranks N] [--nhosts H] [--candidates] | --calibrate] [-o FILE]\n"
               "  (no option)  this build, its algorithms, and every environment variable Weft reads,\n"
               "               with the value in effect now\n"
               "  --markdown   docs/env.md, the reference of those variables\n"
               "  --json       the same facts as the plain listing, for scripts\n"
               "  --algorithms the registered algorithms: their names, what they run and when\n"
               "  --networks   the networks Weft can use (plugin, IB, Socket), their devices, the RDMA\n"
               "               ports with their GID tables, and the one NCCL_NET would choose\n"
               "  --topology   the machine as Weft sees it: hwloc's detection merged under\n"
               "               NCCL_TOPO_FILE when that is set\n"
               "  --topology-xml  the same topology as NCCL topology XML (what NCCL_TOPO_DUMP_FILE gets)\n"
               "  --tuning     what the tuner picks for each collective and size (8 B..1 GiB) on\n"
               "               N ranks (default 4) spread over H hosts (default 1), with the\n"
               "               model's machine constants in force for this process and where they\n"
               "               came from (calibrated as a communicator would); --candidates adds\n"
               "               every algorithm's own estimate beside the pick\n"
               "  --calibrate  measure this host's constants now (one process at a time: it waits\n"
               "               for the calibration lock), print them with the machine's load, and\n"
               "               write the cache file (marked provisional when the machine was loaded)\n"
               "  -o FILE      write to FILE instead of stdout\n");
}

// --networks: every network considered, the RDMA ports and GIDs, and the choice under NCCL_NET.
std::string renderNetworks(int* status) {
  std::string t = "Networks (in preference order; NCCL_NET picks one by name):\n";
  for (const std::string& line : weft::net::networkReport()) t += "  " + line + "\n";
#if WEFT_HAVE_VERBS
  std::vector<std::string> gids = weft::net::ib::ibGidReport();
  if (!gids.empty()) {
    t += "RDMA ports in use and their GID tables:\n";
    for (const std::string& line : gids) t += "  " + line + "\n";
  }
#endif
  weft::net::Network* net = nullptr;
  std::string why;
  if (weft::net::selectNetwork(nullptr, &net, &why) != ncclSuccess) {
    *status = 1;
    return t + "Chosen: none: " + why + "\n";
  }
  int ndev = 0;
  (void)net->devices(&ndev);
  t += std::string("Chosen: ") + net->name() + ", " + std::to_string(ndev) + " device(s):\n";
  for (int d = 0; d < ndev; ++d) {
    weft::net::Properties p;
    if (net->getProperties(d, &p) != ncclSuccess) continue;
    t += "  device " + std::to_string(d) + ": " + p.name + (p.port > 0 ? " port " + std::to_string(p.port) : "") +
         ", " + std::to_string(p.speedMbps) + " Mbit/s" + (p.pciPath.empty() ? "" : ", " + p.pciPath) + "\n";
  }
  return t;
}

// Backends compiled into this build: host mode always, plus the GPU one if any.
std::vector<std::string> backends() {
  std::vector<std::string> out{"host"};
  if (std::strcmp(WEFT_GPU_BACKEND, "none") != 0) out.emplace_back(WEFT_GPU_BACKEND);
  return out;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// A parameter's value as JSON: numbers and booleans typed, strings quoted.
std::string jsonValue(const std::string& type, const std::string& v) {
  if (type == "bool") return v == "0" ? "false" : "true";
  if (type == "int" || type == "size") return v;
  return jsonString(v);
}

// The kinds an algorithm runs, by name.
std::vector<std::string> kindNames(uint32_t kinds) {
  std::vector<std::string> out;
  for (int k = 0; k < weft::kNumCollKinds; ++k)
    if (kinds >> k & 1) out.emplace_back(weft::collName(static_cast<weft::CollKind>(k)));
  return out;
}

// How the tuner comes to pick an algorithm, from its descriptor.
std::string howChosen(const weft::AlgorithmDesc& d) {
  if (d.lossy) return "only where a setting asks for it (it changes results)";
  if (d.cost == nullptr) return "always, for its kinds (not tuned)";
  return std::string("by the tuner's cost model") + (d.channelled ? ", on one or more channels" : ", on one channel");
}

// The registry (collectives/registry.cc), in registration order.
std::string renderAlgorithms() {
  std::string t = "Algorithms (collectives/registry.cc, in registration order):\n";
  char line[256];
  for (int i = 0; i < weft::algorithmCount(); ++i) {
    const weft::AlgorithmDesc& d = weft::algorithmDesc(weft::Algorithm(i));
    std::string names = d.cost == nullptr ? "(not tuned: no NCCL_ALGO name)" : std::string("NCCL_ALGO: ") + d.name;
    for (const std::string& a : splitComma(d.aliases)) names += ", " + a;
    std::snprintf(line, sizeof(line), "  %-16s %s\n", d.name, names.c_str());
    t += line;
    t += "      runs    ";
    for (const std::string& k : kindNames(d.kinds)) t += " " + k;
    t += "\n";
    if (*d.needs) t += std::string("      needs    ") + d.needs + "\n";
    t += "      chosen   " + howChosen(d) + "\n";
    t += std::string("      how      ") + d.summary + "\n";
  }
  return t;
}

// Where the parameters below came from: the process environment, or an environment plugin.
std::string environmentSource() {
  const weft::param::EnvPlugin& p = weft::param::environmentPlugin(weft::param::envPlugin().c_str());
  if (p.inUse())
    return "env plugin " + p.name + " (ABI v" + std::to_string(p.abiVersion) + ", " + p.library + ", NCCL_ENV_PLUGIN)";
  if (!p.problem.empty()) return "the process environment (" + p.problem + ")";
  return "the process environment";
}

std::string renderJson() {
  std::string j = "{\n";
  j += "  \"weft_version\": " + jsonString(WEFT_VERSION_STRING) + ",\n";
  j += "  \"nccl_api_version\": " + jsonString(weft::param::kNcclApiVersion) + ",\n";
  j += "  \"backends\": [";
  std::vector<std::string> b = backends();
  for (size_t i = 0; i < b.size(); ++i) j += (i ? ", " : "") + jsonString(b[i]);
  j += "],\n  \"environment\": " + jsonString(environmentSource()) + ",\n";
  j += "  \"cross_memory_attach\": " + jsonString(weft::crossMemoryAttachProbe()) + ",\n  \"algorithms\": [\n";
  for (int i = 0; i < weft::algorithmCount(); ++i) {
    const weft::AlgorithmDesc& d = weft::algorithmDesc(weft::Algorithm(i));
    j += "    {\"name\": " + jsonString(d.name) + ", \"aliases\": [";
    std::vector<std::string> aliases = splitComma(d.aliases);
    for (size_t k = 0; k < aliases.size(); ++k) j += (k ? ", " : "") + jsonString(aliases[k]);
    j += "], \"kinds\": [";
    std::vector<std::string> kinds = kindNames(d.kinds);
    for (size_t k = 0; k < kinds.size(); ++k) j += (k ? ", " : "") + jsonString(kinds[k]);
    j += "], \"needs\": " + jsonString(d.needs);
    j += std::string(", \"tuned\": ") + (d.cost != nullptr ? "true" : "false");
    j += std::string(", \"lossy\": ") + (d.lossy ? "true" : "false");
    j += std::string(", \"channelled\": ") + (d.channelled ? "true" : "false");
    j += ", \"summary\": " + jsonString(d.summary) + "}";
    j += i + 1 < weft::algorithmCount() ? ",\n" : "\n";
  }
  j += "  ],\n  \"parameters\": [\n";
  std::vector<weft::param::ParamView> params = weft::param::list();
  for (size_t i = 0; i < params.size(); ++i) {
    const weft::param::ParamView& p = params[i];
    j += "    {\"name\": " + jsonString(p.name) + ", \"aliases\": [";
    std::vector<std::string> aliases = splitComma(p.aliases);
    for (size_t k = 0; k < aliases.size(); ++k) j += (k ? ", " : "") + jsonString(aliases[k]);
    j += "], \"type\": " + jsonString(p.type);
    j += ", \"value\": " + jsonValue(p.type, p.value);
    j += ", \"default\": " + jsonValue(p.type, p.defaultValue);
    j += ", \"allowed\": " + jsonString(p.allowed);
    j += std::string(", \"set\": ") + (p.set ? "true" : "false");
    j += ", \"source\": " + (p.set ? jsonString(p.source) : std::string("null"));
    j += ", \"env_text\": " + (p.set ? jsonString(p.envText) : std::string("null"));
    j += ", \"problem\": " + (p.problem.empty() ? std::string("null") : jsonString(p.problem));
    j += ", \"group\": " + jsonString(p.group);
    j += ", \"doc\": " + jsonString(p.doc) + "}";
    j += i + 1 < params.size() ? ",\n" : "\n";
  }
  j += "  ]\n}\n";
  return j;
}

std::string quoteIfString(const std::string& type, const std::string& v) {
  return type == "string" ? "\"" + v + "\"" : v;
}

std::string renderText() {
  std::string t;
  t += std::string("Weft ") + WEFT_VERSION_STRING + " (NCCL API " + weft::param::kNcclApiVersion +
       ", reports NCCL version " + weft::param::kNcclApiVersion + "+weft-" + WEFT_VERSION_STRING + ")\n";
  t += "backends:";
  for (const std::string& b : backends()) t += " " + b;
  t += "\nenvironment: " + environmentSource() + "\n";
  t += "cross-memory attach (puts between processes into windows not from ncclMemAlloc): " +
       weft::crossMemoryAttachProbe() + "\n";
  t += "\n" + renderAlgorithms();
  t += "\nParameters (\"*\" = set by the environment, \"!\" = set but rejected; see docs/env.md):\n";
  std::string group;
  for (const weft::param::ParamView& p : weft::param::list()) {
    if (p.group != group) {
      group = p.group;
      t += "\n[" + group + "]\n";
    }
    const char* mark = !p.set ? " " : (p.problem.empty() ? "*" : "!");
    t += std::string(mark) + " " + p.name + " = " + quoteIfString(p.type, p.value) + "\n";
    t += "      type " + p.type;
    if (!p.allowed.empty()) t += " (" + p.allowed + ")";
    t += ", default " + quoteIfString(p.type, p.defaultValue);
    if (!p.aliases.empty()) t += ", aliases " + p.aliases;
    t += "\n";
    if (p.set) {
      t += "      from " + p.source + "=\"" + p.envText + "\"";
      if (!p.problem.empty()) t += ": " + p.problem + ", so the default is used";
      t += "\n";
    }
    t += "      " + p.doc + "\n";
  }
  std::vector<std::string> warnings = weft::param::loadWarnings();
  if (!warnings.empty()) {
    t += "\nWarnings:\n";
    for (const std::string& w : warnings) t += "  " + w + "\n";
  }
  return t;
}

std::string constantsTable(const weft::HostConstants& hc) {
  std::string t;
  char line[256];
  for (int i = 0; i < weft::kNumConstantFields; ++i) {
    const weft::ConstantField& f = weft::kConstantFields[i];
    std::snprintf(line, sizeof(line), "  %-18s %10.4g   %s\n", f.name, hc.*f.field, f.doc);
    t += line;
  }
  return t;
}

// --calibrate: a measurement on purpose, under the same lock a communicator's init takes.
std::string renderCalibration() {
  weft::CalibrationRun run = weft::calibrateNow();
  std::string t = "Calibration of this host (" + std::string(run.cal.provisional ? "provisional" : "final") + "):\n";
  t += constantsTable(run.cal.constants);
  t += weft::describeCalibration(run.cal) + "\n";
  t += "cache: " + run.outcome + "\n";
  return t;
}

// A communicator as the tuner sees it, without creating one: N ranks, H hosts, this machine's
// channel and FIFO settings.
std::string renderTuning(int nranks, int nhosts, bool candidates) {
  // This process's own settings stand in for the agreed ones (a communicator uses rank 0's).
  const weft::param::Agreed agreed = weft::param::localAgreed();
  const int nch = static_cast<int>(std::clamp<int64_t>(agreed.nChannels, agreed.minNChannels, agreed.maxNChannels));
  weft::TunerInit init;
  init.nranks = nranks;
  init.nChannels = nch;
  init.minChannels = static_cast<int>(agreed.minNChannels);
  init.slotBytes = static_cast<size_t>(std::max<int64_t>(64, agreed.buffSize / 8));
  init.agreed = &agreed;
  for (int r = 0; r < nranks; ++r) init.hostOf.push_back(uint64_t(r * nhosts / nranks) + 1);
  weft::TunerOptions opts = weft::tunerOptionsFrom(agreed, weft::param::tunerPlugin());
  weft::ModelInput in = weft::modelInputFor(init);
  opts.pluginShape = weft::TunerPluginShape{0, in.nranks, in.nHosts, in.nranks / in.nHosts, in.ranksPerHost};
  // What selection sees on rank 0 in host mode: with every rank on one host and shared memory
  // allowed, the direct lane (DDA) is a candidate. Low precision changes results and is never the
  // model's pick, so it is not listed.
  weft::CommShape shape;
  shape.nranks = nranks;
  shape.nLocal = in.nHosts == 1 ? nranks : in.ranksPerHost;
  shape.nChannels = nch;
  shape.spansHosts = in.nHosts > 1;
  shape.slotBytes = static_cast<uint32_t>(init.slotBytes);
  shape.agreed = &agreed;
  std::vector<std::string> warnings = opts.warnings;
  weft::HostConstants constants = weft::hostConstants();
  // Across hosts a rank also takes its network's device into account, as a communicator's would.
  std::string netNote;
  weft::net::Network* net = nullptr;
  std::string netWhy;
  if (in.nHosts > 1 && weft::net::selectNetwork(nullptr, &net, &netWhy) == ncclSuccess) {
    if (std::optional<weft::TunerInit::NetLink> link = weft::netLinkOf(net, 0)) {
      weft::applyNetLink(*link, &constants);
      char buf[200];
      std::snprintf(buf, sizeof buf, "network: %s, device 0 at %.3g GB/s%s\n", net->name(), link->gBps,
                    link->hostTcp ? " (netGBps is the smaller of it and this host's TCP stack)" : "");
      netNote = buf;
    }
  }
  std::string bad;
  weft::applyConstantOverrides(agreed.tunerConstants, &constants, &bad);
  if (!bad.empty()) warnings.push_back("WEFT_TUNER_CONSTANTS: ignoring " + bad);
  weft::Tuner tuner(in, constants, std::move(opts));
  char line[256];
  std::string t;
  std::snprintf(line, sizeof(line),
                "Tuning for %d ranks on %d host(s) (%d per host), %d cores, channels %d..%d, slot %zu B\n", in.nranks,
                in.nHosts, in.ranksPerHost, in.cores, in.minChannels, in.maxChannels, in.slotBytes);
  t += line;
  t += "constants (this host's: " + weft::hostConstantsSource() +
       (agreed.tunerConstants.empty() ? std::string() : ", then WEFT_TUNER_CONSTANTS") + "):\n";
  t += constantsTable(constants);
  t += netNote;
  weft::Calibration record;
  if (weft::hostCalibrationRecord(&record)) t += "calibration: " + weft::describeCalibration(record) + "\n";
  t += "A communicator uses the constants agreed by its ranks: every rank contributes its host's constants, the "
       "lowest rank of each host speaks for it, the slowest host sets each field, then rank 0's "
       "WEFT_TUNER_CONSTANTS applies (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints them at init).\n";
  if (tuner.plugin())
    t += "tuner plugin: " + tuner.plugin()->name() + " (v" + std::to_string(tuner.plugin()->version()) + ", " +
         tuner.plugin()->library() + ")\n";
  for (const std::string& w : warnings) t += "warning: " + w + "\n";
  for (int c = 0; c < weft::kNumTunedColls; ++c) {
    weft::Task task;
    task.kind = weft::tunedCollKind(c);
    task.dtype = ncclFloat32;
    // The columns: every algorithm that may run some size of this collective.
    task.count = 1;
    const uint32_t supported = weft::modelCandidates(shape, task);
    const size_t perCount = weft::tunedBytes(nranks, task) / sizeof(float);  // nranks for AllGather
    t += std::string("\n") + weft::collName(task.kind) + " (float)\n";
    t += "         bytes  algorithm        protocol  channels   estimate (us)";
    if (candidates)
      for (int a = 0; a < weft::algorithmCount(); ++a)
        if (supported >> a & 1) {
          std::snprintf(line, sizeof(line), "  %10s", weft::algorithmName(weft::Algorithm(a)));
          t += line;
        }
    t += "\n";
    for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 2) {
      // Size limits (RCCL_DDA_ALL_REDUCE_*_MAX_BYTES) apply per size; the table's sizes are totals.
      task.count = std::max<size_t>(1, bytes / sizeof(float) / perCount);
      const uint32_t here = weft::modelCandidates(shape, task);
      weft::TunerChoice ch = tuner.choose(task.kind, bytes, here);
      std::snprintf(line, sizeof(line), "  %12zu  %-15s  %-8s  %8d  %14.2f", bytes, weft::algorithmName(ch.algorithm),
                    weft::protocolName(ch.protocol), ch.nChannels, double(ch.costUs));
      t += line;
      // Each candidate alone, at its own best protocol and channel count: how close the race is.
      for (int a = 0; candidates && a < weft::algorithmCount(); ++a)
        if (supported >> a & 1) {
          const weft::TunerChoice own = tuner.choose(task.kind, bytes, 1u << a);
          const bool shown = (here >> a & 1) && own.algorithm == weft::Algorithm(a);
          if (shown)
            std::snprintf(line, sizeof(line), "  %10.2f", double(own.costUs));
          else
            std::snprintf(line, sizeof(line), "  %10s", "-");
          t += line;
        }
      t += "\n";
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  enum class Mode {
    Text,
    Markdown,
    Json,
    Algorithms,
    Networks,
    Topology,
    TopologyXml,
    Tuning,
    Calibrate
  } mode = Mode::Text;
  int nranks = 4, nhosts = 1;
  bool candidates = false;
  const char* outPath = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--markdown") {
      mode = Mode::Markdown;
    } else if (arg == "--json") {
      mode = Mode::Json;
    } else if (arg == "--algorithms") {
      mode = Mode::Algorithms;
    } else if (arg == "--networks") {
      mode = Mode::Networks;
    } else if (arg == "--topology") {
      mode = Mode::Topology;
    } else if (arg == "--topology-xml") {
      mode = Mode::TopologyXml;
    } else if (arg == "--tuning") {
      mode = Mode::Tuning;
    } else if (arg == "--candidates") {
      candidates = true;
    } else if (arg == "--calibrate") {
      mode = Mode::Calibrate;
    } else if ((arg == "--nranks" || arg == "--nhosts") && i + 1 < argc) {
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 1 || v > 65536) {
        std::fprintf(stderr, "weft-info: %s needs a number from 1 to 65536, not \"%s\"\n", arg.c_str(), argv[i]);
        return 2;
      }
      (arg == "--nranks" ? nranks : nhosts) = static_cast<int>(v);
    } else if (arg == "-o" && i + 1 < argc) {
      outPath = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "weft-info: unknown argument \"%s\"\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (nhosts > nranks) {
    std::fprintf(stderr, "weft-info: --nhosts %d is more than --nranks %d\n", nhosts, nranks);
    return 2;
  }
  std::string text;
  int status = 0;
  if (mode == Mode::Topology || mode == Mode::TopologyXml) {
    const weft::topo::SystemTopology* sys = nullptr;
    // An invalid NCCL_TOPO_FILE still gets its description (which names file and line).
    if (weft::topo::getSystemTopology(&sys) != ncclSuccess) status = 1;
    if (mode == Mode::Topology || status != 0) {
      text = weft::topo::describeTopology(*sys);
    } else {
      text = weft::topo::topologyToXmlText(sys->topology);
    }
  } else {
    text = mode == Mode::Networks     ? renderNetworks(&status)
           : mode == Mode::Tuning     ? renderTuning(nranks, nhosts, candidates)
           : mode == Mode::Calibrate  ? renderCalibration()
           : mode == Mode::Markdown   ? weft::param::renderMarkdown()
           : mode == Mode::Json       ? renderJson()
           : mode == Mode::Algorithms ? renderAlgorithms()
                                      : renderText();
  }
  FILE* out = stdout;
  if (outPath != nullptr) {
    out = std::fopen(outPath, "w");
    if (out == nullptr) {
      std::fprintf(stderr, "weft-info: cannot write \"%s\": %s\n", outPath, std::strerror(errno));
      return 1;
    }
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  ok = (out == stdout ? std::fflush(out) : std::fclose(out)) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "weft-info: write failed\n");
    return 1;
  }
  return status;
}
