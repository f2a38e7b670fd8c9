#include "rma/window.h"

#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "rma/net_puts.h"

namespace weft {

ncclResult_t exchangeWindow(ncclWindow_vidmem* win, std::string* why) {
  ncclComm* comm = win->comm;
  std::vector<WindowSpan> spans(comm->nranks);
  spans[comm->rank] = WindowSpan{reinterpret_cast<uint64_t>(win->buff), win->size};
  ncclResult_t r = comm->bootstrap->allGather(spans.data(), sizeof(WindowSpan), why);
  if (r != ncclSuccess) {
    *why = "rank " + std::to_string(comm->rank) + " cannot exchange its window with its peers: " + *why;
    return r;
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(comm->windows->mutex);
    // Registrations are collective and issued in the same order on every rank, so the count names
    // the same window everywhere.
    win->id = ++comm->windows->registrations;
    first = win->id == 1;
    comm->windows->windows[win->id] = spans[comm->rank];
  }
  win->spans = std::move(spans);
  if (first && (r = connectPutLinks(comm, why)) != ncclSuccess) {
    forgetWindow(win);
    win->spans.clear();
    return r;
  }
  return ncclSuccess;
}

void forgetWindow(ncclWindow_vidmem* win) {
  std::lock_guard<std::mutex> lock(win->comm->windows->mutex);
  win->comm->windows->windows.erase(win->id);
}

}  // namespace weft
