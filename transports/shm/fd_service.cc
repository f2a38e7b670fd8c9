#include "transports/shm/fd_service.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/log.h"
#include "transports/shm/fd_passing.h"

namespace weft {
namespace {

struct Offer {
  int listenFd = -1;
  int memfd = -1;
  uint64_t bytes = 0;
  int left = 0;  // deliveries before the name goes
  std::string name;
};

class FdService {
 public:
  FdService() { pthread_atfork(&FdService::prepareFork, &FdService::parentAfterFork, &FdService::childAfterFork); }
  uint64_t offer(const std::string& name, int memfd, uint64_t bytes, int peers, std::string* why);
  void withdraw(uint64_t id);
  size_t count();
  void stop();

 private:
  bool startLocked(std::string* why);
  static void* loop(void* self);
  void serve(uint64_t id);
  bool deliver(Offer& o, int conn);
  void closeLocked(uint64_t id);
  static void prepareFork();
  static void parentAfterFork();
  static void childAfterFork();

  std::mutex mu_;
  std::unordered_map<uint64_t, Offer> offers_;  // by handle; epoll events carry the handle, so a
                                                // reused descriptor number never reaches a new offer
  uint64_t nextId_ = 1;                         // 0 is the wake-up descriptor
  int epfd_ = -1, wakefd_ = -1;
  pthread_t thread_{};
  bool running_ = false, stopping_ = false, exited_ = false;
};

bool serviceMade = false;

// Never freed: segments destroyed late in exit may still withdraw their names.
FdService& service() {
  static FdService* s = [] {
    serviceMade = true;
    return new FdService();
  }();
  return *s;
}

bool FdService::startLocked(std::string* why) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (epfd_ < 0 || wakefd_ < 0 || epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) {
    *why = std::string("cannot start the shared-memory service: ") + strerror(errno);
  } else {
    // The thread takes no signals: the application's handlers must not run on it.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&thread_, nullptr, &FdService::loop, this);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc == 0) {
      pthread_setname_np(thread_, "weft-shm");
      running_ = true;
      return true;
    }
    *why = std::string("cannot start the shared-memory service thread: ") + strerror(rc);
  }
  if (epfd_ >= 0) close(epfd_);
  if (wakefd_ >= 0) close(wakefd_);
  epfd_ = wakefd_ = -1;
  return false;
}

uint64_t FdService::offer(const std::string& name, int memfd, uint64_t bytes, int peers, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (exited_) {
    *why = "cannot offer shared memory segment " + name + ": the process is exiting";
    return 0;
  }
  if (!running_ && !startLocked(why)) return 0;
  sockaddr_un addr;
  socklen_t len = 0;
  if (!shmSocketAddress(name, &addr, &len, why)) return 0;
  Offer o;
  o.name = name;
  o.bytes = bytes;
  o.left = peers;
  o.listenFd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (o.listenFd < 0) {
    *why = "cannot make a socket to offer shared memory segment " + name + ": " + strerror(errno);
    return 0;
  }
  if (bind(o.listenFd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(o.listenFd, SOMAXCONN) != 0) {
    const int e = errno;
    close(o.listenFd);
    *why = "cannot offer shared memory segment " + name + " at @" + shmSocketName(name) + ": " + strerror(e);
    // Abstract names vanish with their process, so the holder is alive: the same rank twice, or two
    // communicators with the same id.
    if (e == EADDRINUSE)
      *why += " (a live process already offers this name: is a rank of this communicator running twice?)";
    return 0;
  }
  o.memfd = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
  if (o.memfd < 0) {
    *why = "cannot keep shared memory segment " + name + ": " + strerror(errno);
    close(o.listenFd);
    return 0;
  }
  const uint64_t id = nextId_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, o.listenFd, &ev) != 0) {
    *why = "cannot serve shared memory segment " + name + ": " + strerror(errno);
    close(o.listenFd);
    close(o.memfd);
    return 0;
  }
  offers_.emplace(id, std::move(o));
  return id;
}

void FdService::closeLocked(uint64_t id) {
  auto it = offers_.find(id);
  if (it == offers_.end()) return;
  close(it->second.listenFd);  // also leaves the epoll set
  close(it->second.memfd);
  offers_.erase(it);
}

void FdService::withdraw(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  closeLocked(id);
}

size_t FdService::count() {
  std::lock_guard<std::mutex> lock(mu_);
  return offers_.size();
}

// One answer, never blocking: a fresh Unix socket always has room for it. True when delivered.
bool FdService::deliver(Offer& o, int conn) {
  ucred cred{};
  socklen_t len = sizeof cred;
  FdOffer answer;
  answer.bytes = o.bytes;
  const bool sameUser = getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
  if (!sameUser) {
    WEFT_WARN("shared memory segment %s: refused pid %d of uid %u (only uid %u may map it)", o.name.c_str(),
              static_cast<int>(cred.pid), static_cast<unsigned>(cred.uid), static_cast<unsigned>(geteuid()));
    answer.status = FdOffer::kRefusedUid;
  }
  iovec iov{&answer, sizeof answer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (sameUser) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &o.memfd, sizeof(int));
  }
  const ssize_t n = sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(sizeof answer))
    WEFT_INFO(kLogShm, "shared memory segment %s: answering pid %d failed: %s", o.name.c_str(),
              static_cast<int>(cred.pid), n < 0 ? strerror(errno) : "short write");
  return sameUser && n == static_cast<ssize_t>(sizeof answer);
}

void FdService::serve(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = offers_.find(id);
  if (it == offers_.end()) return;  // withdrawn since the event
  Offer& o = it->second;
  for (;;) {
    const int conn = accept4(o.listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        WEFT_INFO(kLogShm, "shared memory segment %s: accept failed: %s", o.name.c_str(), strerror(errno));
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    const bool delivered = deliver(o, conn);
    close(conn);
    if (delivered && --o.left == 0) {
      closeLocked(id);  // every expected peer has it: the name goes
      return;
    }
  }
}

void* FdService::loop(void* self) {
  auto* s = static_cast<FdService*>(self);
  epoll_event events[16];
  for (;;) {
    const int n = epoll_wait(s->epfd_, events, 16, -1);
    if (n < 0 && errno != EINTR) {
      WEFT_WARN("the shared-memory service stops: epoll_wait failed: %s", strerror(errno));
      return nullptr;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 != 0) {
        s->serve(events[i].data.u64);
        continue;
      }
      uint64_t v = 0;
      (void)!read(s->wakefd_, &v, sizeof v);
      std::lock_guard<std::mutex> lock(s->mu_);
      if (s->stopping_) return nullptr;
    }
  }
}

void FdService::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
    if (!running_) return;
    stopping_ = true;
    const uint64_t one = 1;
    (void)!write(wakefd_, &one, sizeof one);
  }
  pthread_join(thread_, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  while (!offers_.empty()) closeLocked(offers_.begin()->first);
  close(epfd_);
  close(wakefd_);
  epfd_ = wakefd_ = -1;
  running_ = false;
}

// fork() copies this object with the lock held by the forking thread, so the child finds it
// consistent. The child has no service thread, and the parent's offers are not its own.
void FdService::prepareFork() { service().mu_.lock(); }
void FdService::parentAfterFork() { service().mu_.unlock(); }
void FdService::childAfterFork() {
  FdService& s = service();
  for (auto& [id, o] : s.offers_) {
    close(o.listenFd);
    close(o.memfd);
  }
  s.offers_.clear();
  if (s.epfd_ >= 0) close(s.epfd_);
  if (s.wakefd_ >= 0) close(s.wakefd_);
  s.epfd_ = s.wakefd_ = -1;
  s.running_ = false;
  s.stopping_ = false;
  s.mu_.unlock();
}

// Stops the thread when the library unloads (or the process exits normally).
struct StopAtUnload {
  ~StopAtUnload() {
    if (serviceMade) service().stop();
  }
} stopAtUnload;

}  // namespace

uint64_t offerSegmentFd(const std::string& segmentName, int memfd, uint64_t bytes, int peers, std::string* why) {
  return service().offer(segmentName, memfd, bytes, peers, why);
}

void withdrawSegmentFd(uint64_t handle) {
  if (handle != 0) service().withdraw(handle);
}

size_t offeredSegmentCount() { return service().count(); }

}  // namespace weft
