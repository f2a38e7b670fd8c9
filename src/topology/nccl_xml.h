// NCCL's topology XML <-> Weft's Topology. Reading checks what Weft relies on (the version, every
// cpu's numaid, every pci's busid and class, every gpu's dev, every nvlink's target, every net's
// dev, numbers that are numbers) and names file and line in each message; anything it does not
// know it keeps (see model.h).
#pragma once
#include <string>

#include "nccl.h"
#include "topology/model.h"
#include "topology/xml.h"

namespace weft::topo {

// Converts a parsed document; on failure *error says "<source>:<line>: ..." and the result is
// ncclInvalidUsage (a file the user supplied is wrong).
ncclResult_t topologyFromXml(const XmlElement& root, const std::string& source, Topology* out, std::string* error);
XmlElement topologyToXml(const Topology& t);

// Parses XML text (source names it in messages).
ncclResult_t parseTopology(const std::string& text, const std::string& source, Topology* out, std::string* error);
// Reads a file: ncclSystemError when it cannot be read, ncclInvalidUsage when it is not a valid
// topology; *error says which and why.
ncclResult_t loadTopologyFile(const std::string& path, Topology* out, std::string* error);
// The XML text NCCL's own dumps would hold for t.
std::string topologyToXmlText(const Topology& t);
// Writes the file whole (a temporary name, then rename, so a reader never sees half of it).
ncclResult_t writeTopologyFile(const std::string& path, const Topology& t, std::string* error);

}  // namespace weft::topo
