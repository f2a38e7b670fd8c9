// Loading NCCL_NET_PLUGIN, registering the built-in networks, and choosing one by name.
#include "transports/net/plugin/loader.h"

#include <dlfcn.h>
#include <strings.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "transports/net/net_abi.h"
#include "transports/net/network.h"
#include "transports/net/plugin/adapter.h"
#include "transports/net/socket/socket_net.h"
#include "weft/build_config.h"
#if WEFT_HAVE_VERBS
#include "transports/net/ib/ib_net.h"
#endif

namespace weft::net {

namespace {

struct Entry {
  std::unique_ptr<Network> net;
  std::string origin;  // "built-in" or the library file
  int ndev = 0;
};

struct Registry {
  std::mutex mu;
  bool loaded = false;
  std::vector<Entry> nets;       // in preference order: the external plugin first
  std::vector<void*> libraries;  // dlopen handles of the plugins in use
  std::vector<std::string> report;
};

// Never destroyed: a plugin's threads may still run while the process exits.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

constexpr const char* kIbName = "IB";

struct Version {
  int number;
  const char* symbol;
};
constexpr Version kVersions[] = {
    {12, NCCL_NET_PLUGIN_SYMBOL_V12}, {11, NCCL_NET_PLUGIN_SYMBOL_V11}, {10, NCCL_NET_PLUGIN_SYMBOL_V10},
    {9, NCCL_NET_PLUGIN_SYMBOL_V9},   {8, NCCL_NET_PLUGIN_SYMBOL_V8},
};

void addNetwork(Registry& reg, std::unique_ptr<Network> net, const std::string& origin) {
  Entry e;
  e.origin = origin;
  if (net->devices(&e.ndev) != ncclSuccess) e.ndev = 0;
  reg.report.push_back(std::string(net->name()) + ": loaded from " + origin + " (ncclNet v" +
                       std::to_string(net->abiVersion()) + "), " + std::to_string(e.ndev) + " device(s)");
  WEFT_INFO(kLogNet | kLogInit, "network %s", reg.report.back().c_str());
  e.net = std::move(net);
  reg.nets.push_back(std::move(e));
}

void refuse(Registry& reg, const std::string& what) {
  reg.report.push_back(what);
  WEFT_WARN("%s; Weft uses its built-in networks", what.c_str());
}

// The files NCCL_NET_PLUGIN asks for, in the order NCCL documents; *quiet when a missing default
// plugin is not worth a warning.
std::vector<std::string> pluginFiles(const std::string& spec, bool* quiet) {
  *quiet = false;
  if (spec.empty()) {
    *quiet = true;
    return {"libnccl-net.so"};
  }
  if (strcasecmp(spec.c_str(), "none") == 0) return {};
  if (spec.find(".so") != std::string::npos || spec.find('/') != std::string::npos) return {spec};
  return {"libnccl-net-" + spec + ".so", "librccl-net-" + spec + ".so"};
}

void loadPlugin(Registry& reg) {
  std::string spec = param::netPlugin();
  bool quiet = false;
  std::vector<std::string> files = pluginFiles(spec, &quiet);
  if (files.empty()) {
    reg.report.push_back("NCCL_NET_PLUGIN=" + spec + ": no external plugin");
    return;
  }
  void* lib = nullptr;
  std::string file, errors;
  for (const std::string& f : files) {
    dlerror();
    lib = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      file = f;
      break;
    }
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : f + ": dlopen failed");
  }
  if (lib == nullptr) {
    // The default plugin is optional: only a file that exists but does not load deserves a warning.
    if (quiet && errors.find("cannot open shared object file") != std::string::npos) {
      reg.report.push_back("no default network plugin (libnccl-net.so not found)");
      WEFT_INFO(kLogNet | kLogInit, "%s", reg.report.back().c_str());
      return;
    }
    std::string label = spec.empty() ? std::string("default network plugin") : "NCCL_NET_PLUGIN=" + spec;
    refuse(reg, label + ": cannot load it: " + errors);
    return;
  }
  for (const Version& v : kVersions) {
    void* table = dlsym(lib, v.symbol);
    if (table == nullptr) continue;
    std::string why;
    std::unique_ptr<Network> net = adaptPlugin(v.number, table, file, &why);
    if (net == nullptr) {
      refuse(reg, "network plugin " + file + " (" + v.symbol + "): " + why);
      dlclose(lib);
      return;
    }
    reg.libraries.push_back(lib);
    addNetwork(reg, std::move(net), file);
    return;
  }
  refuse(reg, "network plugin " + file + " exports none of ncclNetPlugin_v12 .. ncclNetPlugin_v8");
  dlclose(lib);
}

void addBuiltin(Registry& reg, const char* name, const ncclNet_v12_t* table, const ProgressEvents* events = nullptr) {
  std::string why;
  std::unique_ptr<Network> net = adaptPlugin(WEFT_NET_NEWEST_VERSION, table, "built-in", &why, events);
  if (net == nullptr) {
    reg.report.push_back(std::string(name) + ": built-in, unusable: " + why);
    WEFT_WARN("the built-in %s network is unusable: %s", name, why.c_str());
    return;
  }
  addNetwork(reg, std::move(net), "built-in");
}

// IB before Socket: with no NCCL_NET, a machine with an active RDMA port uses it, as NCCL does.
void loadBuiltins(Registry& reg) {
#if WEFT_HAVE_VERBS
  addBuiltin(reg, kIbName, ib::ibNetTable());
  for (const std::string& line : ib::ibDeviceReport()) reg.report.push_back("  " + line);
#else
  reg.report.push_back(std::string(kIbName) + ": not in this build (it was built without libibverbs headers)");
#endif
  addBuiltin(reg, "Socket", socketnet::socketNetTable(), socketnet::socketProgressEvents());
}

void ensureLoaded(Registry& reg) {
  if (reg.loaded) return;
  loadPlugin(reg);
  loadBuiltins(reg);
  reg.loaded = true;
}

std::string available(const Registry& reg) {
  std::string list;
  for (const Entry& e : reg.nets) {
    list += (list.empty() ? "" : ", ") + std::string(e.net->name()) + " (" + e.origin + ", " + std::to_string(e.ndev) +
            " device(s))";
  }
  return list.empty() ? "none" : list;
}

std::string refused(const Registry& reg) {
  std::string text;
  for (const std::string& line : reg.report) {
    if (line.find(": loaded from ") == std::string::npos) text += "\n  " + line;
  }
  return text;
}

// What to look at when a network named by the user has no device: its own settings.
std::string noDeviceHint(const Registry& reg, const Entry& e) {
  std::string name = e.net->name();
  if (strcasecmp(name.c_str(), "Socket") == 0) return "see NCCL_SOCKET_IFNAME and NCCL_SOCKET_FAMILY";
  if (strcasecmp(name.c_str(), kIbName) == 0) {
    std::string lines;
    for (const std::string& line : reg.report)
      if (line.rfind("  IB: ", 0) == 0) lines += (lines.empty() ? "" : "; ") + line.substr(2);
    return (lines.empty() ? std::string("no RDMA port found") : lines) +
           "; see NCCL_IB_HCA, NCCL_IB_DISABLE and NCCL_IB_GID_INDEX";
  }
  return "the plugin " + e.origin + " reported 0 devices";
}

}  // namespace

ncclResult_t selectNetwork(const char* netName, Network** out, std::string* why) {
  *out = nullptr;
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  ensureLoaded(reg);
  bool fromConfig = netName != nullptr && netName[0] != '\0';
  std::string want = fromConfig ? netName : param::net();
  std::string label = (fromConfig ? std::string("the communicator's netName ") : std::string("NCCL_NET=")) + want;
  if (want.empty()) {
    for (const Entry& e : reg.nets) {
      if (e.ndev > 0) {
        *out = e.net.get();
        return ncclSuccess;
      }
    }
    *why = "no network has a usable device; networks: " + available(reg) + refused(reg);
    return ncclSystemError;
  }
  for (const Entry& e : reg.nets) {
    if (strcasecmp(e.net->name(), want.c_str()) != 0) continue;
    if (e.ndev <= 0) {
      *why = label + ": that network has no usable device (" + noDeviceHint(reg, e) + ")";
      return ncclSystemError;
    }
    *out = e.net.get();
    return ncclSuccess;
  }
#if !WEFT_HAVE_VERBS
  if (strcasecmp(want.c_str(), kIbName) == 0) {
    *why = label + ": this build of Weft has no IB network (it was built without libibverbs headers); available: " +
           available(reg);
    return ncclInvalidUsage;
  }
#endif
  *why = label + ": no network of that name; available: " + available(reg) + refused(reg);
  return ncclInvalidArgument;
}

std::vector<std::string> networkReport() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  ensureLoaded(reg);
  return reg.report;
}

void resetNetworksForTesting() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.nets.clear();  // finalizes v11+ plugins before their code is unmapped
  for (void* lib : reg.libraries) dlclose(lib);
  reg.libraries.clear();
  reg.report.clear();
  reg.loaded = false;
#if WEFT_HAVE_VERBS
  ib::rediscoverDevicesForTesting();
#endif
}

}  // namespace weft::net
