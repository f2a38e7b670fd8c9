#include "rma/window.h"

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"

namespace weft {

ncclResult_t exchangeWindow(ncclWindow_vidmem* win, std::string* why) {
  ncclComm* comm = win->comm;
  std::vector<WindowSpan> spans(comm->nranks);
  spans[comm->rank] = WindowSpan{reinterpret_cast<uint64_t>(win->buff), win->size};
  const ncclResult_t r = comm->bootstrap->allGather(spans.data(), sizeof(WindowSpan), why);
  if (r != ncclSuccess) {
    *why = "rank " + std::to_string(comm->rank) + " cannot exchange its window with its peers: " + *why;
    return r;
  }
  win->spans = std::move(spans);
  return ncclSuccess;
}

}  // namespace weft
