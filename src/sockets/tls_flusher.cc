// The flusher thread: finishes handshakes and sends queued bytes of links whose owner has gone on to
// wait for something else (see Socket::sendAll). The bootstrap's ring shows why it is needed: every
// rank connects to its successor, sends, and only then accepts its predecessor, so a handshake that
// waited for its peer inside sendAll would wait in a circle.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <vector>

#include "base/log.h"
#include "sockets/tls.h"
#include "sockets/tls_context.h"

namespace weft {
namespace {

// A link whose queue outlives its deadline unset (Deadline::never) still gives up after this long.
constexpr int64_t kLingerMs = 60000;

struct Flusher {
  std::mutex mu;
  std::vector<std::pair<std::shared_ptr<TlsLink>, Deadline>> links;
  int wakeFd = -1;

  void run() {
    for (;;) {
      std::vector<std::pair<std::shared_ptr<TlsLink>, Deadline>> mine;
      {
        std::lock_guard<std::mutex> lock(mu);
        mine = links;
      }
      std::vector<pollfd> fds{{wakeFd, POLLIN, 0}};
      for (auto& [l, d] : mine) {
        // Under the link's mutex: its owner's transfers change both (a short hold: they never block).
        std::lock_guard<std::mutex> lock(l->mutex());
        fds.push_back({l->fd(), static_cast<short>(l->wantEvents() ? l->wantEvents() : POLLIN), 0});
      }
      (void)::poll(fds.data(), fds.size(), mine.empty() ? -1 : 50);
      uint64_t drained;
      if (fds[0].revents) (void)!::read(wakeFd, &drained, sizeof(drained));
      std::vector<TlsLink*> done;
      for (auto& [l, d] : mine) {
        std::lock_guard<std::mutex> lock(l->mutex());
        // Done with: closed under it, taken back by its owner, or nothing left to send.
        bool finished = l->fd() < 0 || l->ownerDrivesLocked() || !l->queuedLocked();
        if (!finished && !l->flushLocked()) {
          WEFT_INFO(kLogBootstrap | kLogNet, "TLS: %s", l->error().c_str());
          finished = true;
        } else if (!finished && !l->queuedLocked()) {
          finished = true;
        } else if (!finished && d.expired()) {
          WEFT_INFO(kLogBootstrap | kLogNet, "TLS: gave up sending to %s: no handshake before the deadline",
                    l->peer().c_str());
          finished = true;
        }
        if (finished) done.push_back(l.get());
      }
      if (done.empty()) continue;
      std::lock_guard<std::mutex> lock(mu);
      for (TlsLink* l : done)
        for (size_t i = 0; i < links.size(); ++i)
          if (links[i].first.get() == l) {
            links.erase(links.begin() + static_cast<long>(i));
            break;
          }
    }
  }
};

std::mutex gFlusherMu;  // guards gFlusher
Flusher* gFlusher = nullptr;

// Started on first use and never stopped: it holds no state that must be torn down at exit.
Flusher* flusher() {
  std::lock_guard<std::mutex> lock(gFlusherMu);
  if (!gFlusher) {
    auto* x = new Flusher();
    x->wakeFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    std::thread([x] { x->run(); }).detach();
    gFlusher = x;
  }
  return gFlusher;
}

}  // namespace

void tlsFlusherAtFork(int phase) {
  if (phase == 0) {
    gFlusherMu.lock();
    if (gFlusher) gFlusher->mu.lock();
    return;
  }
  if (gFlusher) gFlusher->mu.unlock();
  // The child has no flusher thread, and the parent's links are the parent's: leave them behind.
  if (phase == 2) gFlusher = nullptr;
  gFlusherMu.unlock();
}

void tlsFlushInBackground(const std::shared_ptr<TlsLink>& link) {
  Flusher* f = flusher();
  Deadline d = link->queueDeadline();
  if (d.isNever()) d = Deadline::afterMs(kLingerMs);
  {
    std::lock_guard<std::mutex> lock(f->mu);
    for (auto& e : f->links)
      if (e.first == link) return;
    f->links.emplace_back(link, d);
  }
  uint64_t one = 1;
  (void)!::write(f->wakeFd, &one, sizeof(one));
}

}  // namespace weft
