// NCCL's topology XML as a user supplies it (NCCL_TOPO_FILE): the XML reader, then the conversion
// to Weft's Topology. What is accepted must survive Weft's own dump: written out and read back it
// must parse again.
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "topology/nccl_xml.h"
#include "topology/xml.h"

using namespace weft;
using namespace weft::topo;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  XmlElement root;
  std::string error;
  if (parseXml(text, "fuzz.xml", &root, &error)) {
    XmlElement again;
    if (!parseXml(writeXml(root), "rewritten.xml", &again, &error)) fuzz::fail("writeXml's output does not parse");
  } else if (error.empty()) {
    fuzz::fail("an XML refusal without a message");
  }
  Topology topo;
  error.clear();
  if (parseTopology(text, "fuzz.xml", &topo, &error) != ncclSuccess) {
    if (error.empty()) fuzz::fail("a topology refusal without a message");
    return 0;
  }
  Topology again;
  std::string again_error;
  if (parseTopology(topologyToXmlText(topo), "dumped.xml", &again, &again_error) != ncclSuccess) {
    fprintf(stderr, "%s\n", again_error.c_str());
    fuzz::fail("Weft's dump of an accepted topology does not parse");
  }
  return 0;
}
