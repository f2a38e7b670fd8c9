// The per-thread failure detail of the built-in networks (network.h).
#include <string>

#include "transports/net/network.h"

namespace weft::net {

namespace {
thread_local std::string tDetail;
}  // namespace

void setFailureDetail(const std::string& detail) { tDetail = detail; }

std::string takeFailureDetail() {
  std::string d;
  d.swap(tDetail);
  return d;
}

}  // namespace weft::net
