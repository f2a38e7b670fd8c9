#include "topology/nccl_xml.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/log.h"

namespace weft::topo {

namespace {

// Reading: one Reader per document, so every message can name the source.
class FromXml {
 public:
  FromXml(const std::string& source, std::string* error) : source_(source), error_(error) {}

  bool system(const XmlElement& el, Topology* t) {
    if (el.name != "system") return fail(el, "the top element is <" + el.name + ">, expected <system>");
    for (const XmlAttr& a : el.attrs) {
      if (a.key == "version") {
        if (!toInt(el, a, &t->version)) return false;
        if (t->version != 1)
          return fail(el, "<system version=\"" + a.value + "\">: only version 1 of the topology format exists");
      } else if (a.key == "name") {
        t->name = a.value;
      } else {
        t->extra.attrs.push_back(a);
      }
    }
    if (el.attr("version") == nullptr) return fail(el, "<system> has no version attribute (expected version=\"1\")");
    for (const XmlElement& c : el.children) {
      if (c.name == "cpu") {
        t->cpus.emplace_back();
        if (!cpu(c, &t->cpus.back())) return false;
      } else {
        keepUnknown(c, el, &t->extra);
      }
    }
    return true;
  }

 private:
  bool fail(const XmlElement& el, const std::string& what) {
    *error_ = source_ + ":" + std::to_string(el.line) + ": " + what;
    return false;
  }
  void keepUnknown(const XmlElement& c, const XmlElement& parent, Extras* extra) {
    WEFT_INFO(kLogGraph, "%s:%d: keeping unknown element <%s> inside <%s> as it is", source_.c_str(), c.line,
              c.name.c_str(), parent.name.c_str());
    extra->children.push_back(c);
  }
  bool toInt64(const XmlElement& el, const XmlAttr& a, int64_t* out) {
    const char* s = a.value.c_str();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 0);
    if (a.value.empty() || *end != '\0' || errno == ERANGE)
      return fail(el, "<" + el.name + "> attribute " + a.key + "=\"" + a.value + "\" is not an integer");
    *out = v;
    return true;
  }
  bool toInt(const XmlElement& el, const XmlAttr& a, int* out) {
    int64_t v;
    if (!toInt64(el, a, &v)) return false;
    if (v < INT32_MIN || v > INT32_MAX)
      return fail(el, "<" + el.name + "> attribute " + a.key + "=\"" + a.value + "\" is out of range");
    *out = static_cast<int>(v);
    return true;
  }
  bool toOptInt(const XmlElement& el, const XmlAttr& a, std::optional<int>* out) {
    int v;
    if (!toInt(el, a, &v)) return false;
    *out = v;
    return true;
  }
  // Present and not empty: the dump leaves empty values out, so an empty required one would be
  // accepted here and then missing from Weft's own dump.
  bool require(const XmlElement& el, const char* key, const char* example) {
    const std::string* v = el.attr(key);
    if (v != nullptr && !v->empty()) return true;
    return fail(el, "<" + el.name + "> has " + (v == nullptr ? "no " : "an empty ") + key + " attribute (e.g. " + key +
                        "=\"" + example + "\")");
  }

  bool cpu(const XmlElement& el, Cpu* c) {
    if (!require(el, "numaid", "0")) return false;
    for (const XmlAttr& a : el.attrs) {
      if (a.key == "numaid") {
        if (!toInt(el, a, &c->numaId)) return false;
      } else if (a.key == "host_hash") {
        c->hostHash = a.value;
      } else if (a.key == "affinity") {
        c->affinity = a.value;
      } else if (a.key == "arch") {
        c->arch = a.value;
      } else if (a.key == "vendor") {
        c->vendor = a.value;
      } else if (a.key == "familyid") {
        if (!toOptInt(el, a, &c->familyId)) return false;
      } else if (a.key == "modelid") {
        if (!toOptInt(el, a, &c->modelId)) return false;
      } else {
        c->extra.attrs.push_back(a);
      }
    }
    for (const XmlElement& ch : el.children) {
      if (ch.name == "pci") {
        c->pci.emplace_back();
        if (!pci(ch, &c->pci.back())) return false;
      } else if (ch.name == "nic") {
        c->nics.emplace_back();
        if (!nic(ch, &c->nics.back())) return false;
      } else {
        keepUnknown(ch, el, &c->extra);
      }
    }
    return true;
  }

  bool pci(const XmlElement& el, Pci* p) {
    if (!require(el, "busid", "0000:17:00.0") || !require(el, "class", "0x030200")) return false;
    for (const XmlAttr& a : el.attrs) {
      if (a.key == "busid") {
        if (!parseBusId(a.value, &p->busId))
          return fail(el, "<pci busid=\"" + a.value + "\">: not a PCI bus id (expected dddd:bb:dd.f in hex)");
        if (!seen_.insert(p->busId)) return fail(el, "<pci busid=\"" + a.value + "\"> appears twice in the topology");
      } else if (a.key == "class") {
        const std::string& v = a.value;
        bool hex = v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') && v.size() <= 8 &&
                   v.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
        if (!hex) return fail(el, "<pci class=\"" + v + "\">: not a PCI class (expected hex such as 0x030200)");
        p->pciClass = v;
      } else if (a.key == "link_speed") {
        p->linkSpeed = a.value;
      } else if (a.key == "link_width") {
        // NCCL writes an empty width when sysfs had none; keep it as "not given".
        if (!a.value.empty() && !toOptInt(el, a, &p->linkWidth)) return false;
      } else if (a.key == "vendor") {
        p->vendor = a.value;
      } else if (a.key == "device") {
        p->device = a.value;
      } else if (a.key == "subsystem_vendor") {
        p->subsystemVendor = a.value;
      } else if (a.key == "subsystem_device") {
        p->subsystemDevice = a.value;
      } else {
        p->extra.attrs.push_back(a);
      }
    }
    for (const XmlElement& ch : el.children) {
      if (ch.name == "pci") {
        p->children.emplace_back();
        if (!pci(ch, &p->children.back())) return false;
      } else if (ch.name == "gpu" && !p->gpu) {
        p->gpu.emplace();
        if (!gpu(ch, &*p->gpu)) return false;
      } else if (ch.name == "nic" && !p->nic) {
        p->nic.emplace();
        if (!nic(ch, &*p->nic)) return false;
      } else {
        keepUnknown(ch, el, &p->extra);
      }
    }
    return true;
  }

  bool gpu(const XmlElement& el, Gpu* g) {
    if (!require(el, "dev", "0")) return false;
    for (const XmlAttr& a : el.attrs) {
      if (a.key == "dev") {
        if (!toInt(el, a, &g->dev)) return false;
      } else if (a.key == "sm") {
        if (!toOptInt(el, a, &g->sm)) return false;
      } else if (a.key == "rank") {
        if (!toOptInt(el, a, &g->rank)) return false;
      } else if (a.key == "gdr") {
        if (!toOptInt(el, a, &g->gdr)) return false;
      } else {
        g->extra.attrs.push_back(a);
      }
    }
    for (const XmlElement& ch : el.children) {
      if (ch.name != "nvlink") {
        keepUnknown(ch, el, &g->extra);
        continue;
      }
      NvLink l;
      if (!require(ch, "target", "0000:0c:00.0")) return false;
      for (const XmlAttr& a : ch.attrs) {
        if (a.key == "target") {
          l.target = a.value;
        } else if (a.key == "count") {
          if (!toInt(ch, a, &l.count)) return false;
        } else if (a.key == "tclass") {
          l.tclass = a.value;
        } else {
          l.extra.attrs.push_back(a);
        }
      }
      l.extra.children = ch.children;
      g->nvlinks.push_back(std::move(l));
    }
    return true;
  }

  bool nic(const XmlElement& el, Nic* n) {
    n->extra.attrs = el.attrs;
    for (const XmlElement& ch : el.children) {
      if (ch.name != "net") {
        keepUnknown(ch, el, &n->extra);
        continue;
      }
      Net net;
      if (!require(ch, "dev", "0")) return false;
      for (const XmlAttr& a : ch.attrs) {
        int64_t v;
        if (a.key == "name") {
          net.name = a.value;
        } else if (a.key == "dev") {
          if (!toInt(ch, a, &net.dev)) return false;
        } else if (a.key == "speed") {
          if (!toInt64(ch, a, &v)) return false;
          net.speedMbps = v;
        } else if (a.key == "port") {
          if (!toOptInt(ch, a, &net.port)) return false;
        } else if (a.key == "latency") {
          char* end = nullptr;
          double d = std::strtod(a.value.c_str(), &end);
          if (a.value.empty() || *end != '\0') return fail(ch, "<net latency=\"" + a.value + "\">: not a number");
          net.latency = d;
        } else if (a.key == "guid") {
          net.guid = a.value;
        } else if (a.key == "maxconn") {
          if (!toOptInt(ch, a, &net.maxconn)) return false;
        } else if (a.key == "gdr") {
          if (!toOptInt(ch, a, &net.gdr)) return false;
        } else if (a.key == "coll") {
          if (!toOptInt(ch, a, &net.coll)) return false;
        } else {
          net.extra.attrs.push_back(a);
        }
      }
      net.extra.children = ch.children;
      n->nets.push_back(std::move(net));
    }
    return true;
  }

  // Bus ids seen so far: a device listed twice would make placement ambiguous.
  struct Seen {
    std::vector<BusId> ids;
    bool insert(BusId id) {
      for (BusId s : ids)
        if (s == id) return false;
      ids.push_back(id);
      return true;
    }
  } seen_;
  const std::string& source_;
  std::string* error_;
};

// Writing, in the attribute order of NCCL's own dumps; unknown attributes and elements follow.
void put(XmlElement* el, const char* key, const std::string& v) {
  if (!v.empty()) el->attrs.push_back(XmlAttr{key, v});
}
void put(XmlElement* el, const char* key, const std::optional<int>& v) {
  if (v) el->attrs.push_back(XmlAttr{key, std::to_string(*v)});
}
void putExtras(XmlElement* el, const Extras& x) {
  el->attrs.insert(el->attrs.end(), x.attrs.begin(), x.attrs.end());
  el->children.insert(el->children.end(), x.children.begin(), x.children.end());
}

XmlElement nicToXml(const Nic& n) {
  XmlElement el{"nic", {}, {}, 0};
  el.attrs = n.extra.attrs;
  for (const Net& net : n.nets) {
    XmlElement ne{"net", {}, {}, 0};
    put(&ne, "name", net.name);
    put(&ne, "dev", std::optional<int>(net.dev));
    if (net.speedMbps) put(&ne, "speed", std::to_string(*net.speedMbps));
    put(&ne, "port", net.port);
    if (net.latency) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%f", *net.latency);
      put(&ne, "latency", std::string(buf));
    }
    put(&ne, "guid", net.guid);
    put(&ne, "maxconn", net.maxconn);
    put(&ne, "gdr", net.gdr);
    put(&ne, "coll", net.coll);
    putExtras(&ne, net.extra);
    el.children.push_back(std::move(ne));
  }
  el.children.insert(el.children.end(), n.extra.children.begin(), n.extra.children.end());
  return el;
}

XmlElement pciToXml(const Pci& p) {
  XmlElement el{"pci", {}, {}, 0};
  put(&el, "busid", formatBusId(p.busId));
  put(&el, "class", p.pciClass);
  put(&el, "vendor", p.vendor);
  put(&el, "device", p.device);
  put(&el, "subsystem_vendor", p.subsystemVendor);
  put(&el, "subsystem_device", p.subsystemDevice);
  put(&el, "link_speed", p.linkSpeed);
  put(&el, "link_width", p.linkWidth);
  for (const Pci& c : p.children) el.children.push_back(pciToXml(c));
  if (p.gpu) {
    XmlElement g{"gpu", {}, {}, 0};
    put(&g, "dev", std::optional<int>(p.gpu->dev));
    put(&g, "sm", p.gpu->sm);
    put(&g, "rank", p.gpu->rank);
    put(&g, "gdr", p.gpu->gdr);
    for (const NvLink& l : p.gpu->nvlinks) {
      XmlElement le{"nvlink", {}, {}, 0};
      put(&le, "target", l.target);
      put(&le, "count", std::optional<int>(l.count));
      put(&le, "tclass", l.tclass);
      putExtras(&le, l.extra);
      g.children.push_back(std::move(le));
    }
    putExtras(&g, p.gpu->extra);
    el.children.push_back(std::move(g));
  }
  if (p.nic) el.children.push_back(nicToXml(*p.nic));
  putExtras(&el, p.extra);
  return el;
}

}  // namespace

ncclResult_t topologyFromXml(const XmlElement& root, const std::string& source, Topology* out, std::string* error) {
  *out = Topology{};
  FromXml reader(source, error);
  return reader.system(root, out) ? ncclSuccess : ncclInvalidUsage;
}

XmlElement topologyToXml(const Topology& t) {
  XmlElement root{"system", {}, {}, 0};
  put(&root, "version", std::optional<int>(t.version));
  put(&root, "name", t.name);
  for (const Cpu& c : t.cpus) {
    XmlElement el{"cpu", {}, {}, 0};
    put(&el, "host_hash", c.hostHash);
    put(&el, "numaid", std::optional<int>(c.numaId));
    put(&el, "affinity", c.affinity);
    put(&el, "arch", c.arch);
    put(&el, "vendor", c.vendor);
    put(&el, "familyid", c.familyId);
    put(&el, "modelid", c.modelId);
    for (const Pci& p : c.pci) el.children.push_back(pciToXml(p));
    for (const Nic& n : c.nics) el.children.push_back(nicToXml(n));
    putExtras(&el, c.extra);
    root.children.push_back(std::move(el));
  }
  putExtras(&root, t.extra);
  return root;
}

ncclResult_t parseTopology(const std::string& text, const std::string& source, Topology* out, std::string* error) {
  XmlElement root;
  if (!parseXml(text, source, &root, error)) return ncclInvalidUsage;
  return topologyFromXml(root, source, out, error);
}

ncclResult_t loadTopologyFile(const std::string& path, Topology* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open the topology file: " + std::strerror(errno);
    return ncclSystemError;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *error = path + ": reading the topology file failed";
    return ncclSystemError;
  }
  return parseTopology(text.str(), path, out, error);
}

std::string topologyToXmlText(const Topology& t) { return writeXml(topologyToXml(t)); }

ncclResult_t writeTopologyFile(const std::string& path, const Topology& t, std::string* error) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  std::string text = topologyToXmlText(t);
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    *error = path + ": cannot write the topology dump (" + tmp + "): " + std::strerror(errno);
    return ncclSystemError;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": writing the topology dump failed: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return ncclSystemError;
  }
  return ncclSuccess;
}

}  // namespace weft::topo
