#include "trace/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "nccl.h"

namespace weft::trace {

namespace detail {
std::atomic<int> gState{0};
}  // namespace detail

namespace {

struct Event {
  int64_t startNs, durNs;
  const char* name;
  Cat cat;
  int32_t rank;
  std::string args;
};

// One thread's events. Its own lock is taken by the thread for each event (never contended but
// by a flush) and by a flush to read them.
struct ThreadBuffer {
  std::mutex mutex;
  long tid = 0;
  std::string name;
  std::vector<Event> events;
};

struct RankInfo {
  int nranks = 0;
  double offsetUs = 0, uncertaintyUs = -1;
};

// Never destroyed: threads may still record while the process exits.
struct State {
  std::mutex mutex;  // the lists below, and one flush at a time
  std::string pattern;
  std::string host;
  int64_t maxEvents = 0;
  std::atomic<int64_t> count{0}, dropped{0};
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::map<int, RankInfo> ranks;
};

State& state() {
  static State* s = new State;
  return *s;
}

thread_local std::shared_ptr<ThreadBuffer> tBuffer;
thread_local const char* tPendingName = nullptr;  // nameThread before the thread's first event

ThreadBuffer& buffer() {
  if (!tBuffer) {
    tBuffer = std::make_shared<ThreadBuffer>();
    tBuffer->tid = static_cast<long>(syscall(SYS_gettid));
    tBuffer->name = tPendingName != nullptr ? tPendingName : "thread " + std::to_string(tBuffer->tid);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.buffers.push_back(tBuffer);
  }
  return *tBuffer;
}

void flushAllAtExit() {
  std::vector<int> ranks;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    for (const auto& [rank, info] : state().ranks) ranks.push_back(rank);
  }
  for (int r : ranks) flushRank(r);
}

void appendEscaped(std::string* out, const char* s) {
  for (; *s != 0; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      *out += b;
    } else {
      *out += static_cast<char>(c);
    }
  }
}

void appendEvent(std::string* out, const Event& e, int pid, long tid) {
  char head[160];
  snprintf(head, sizeof head,
           "{\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%ld,\"name\":\"", catName(e.cat),
           static_cast<double>(e.startNs) / 1000.0, static_cast<double>(e.durNs) / 1000.0, pid, tid);
  *out += head;
  appendEscaped(out, e.name);
  *out += "\",\"args\":{";
  *out += e.args;
  *out += "}},\n";
}

void appendMeta(std::string* out, const char* what, int pid, long tid, const std::string& name) {
  char head[96];
  if (tid < 0)
    snprintf(head, sizeof head, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"", what, pid);
  else
    snprintf(head, sizeof head, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,\"args\":{\"name\":\"", what, pid,
             tid);
  *out += head;
  appendEscaped(out, name.c_str());
  *out += "\"}},\n";
}

}  // namespace

const char* catName(Cat c) {
  switch (c) {
    case Cat::kApi: return "api";
    case Cat::kGroup: return "group";
    case Cat::kOp: return "op";
    case Cat::kStep: return "step";
    case Cat::kWait: return "wait";
    case Cat::kNet: return "net";
  }
  return "?";
}

int detail::decide() {
  static std::once_flag once;
  std::call_once(once, [] {
    State& s = state();
    s.pattern = param::traceFile();
    s.host = shortHostNameForFiles();
    s.maxEvents = param::traceMaxEvents();
    if (!s.pattern.empty()) std::atexit(flushAllAtExit);
    gState.store(s.pattern.empty() ? 1 : 2, std::memory_order_relaxed);
  });
  return gState.load(std::memory_order_relaxed);
}

void Args::key(const char* k) {
  if (text_.empty())
    text_.reserve(192);  // one allocation for a typical event's members
  else
    text_ += ',';
  text_ += '"';
  text_ += k;
  text_ += "\":";
}

Args& Args::num(const char* k, int64_t v) {
  key(k);
  text_ += std::to_string(v);
  return *this;
}

Args& Args::real(const char* k, double v) {
  key(k);
  char b[32];
  snprintf(b, sizeof b, "%.3f", v);
  text_ += b;
  return *this;
}

Args& Args::str(const char* k, const char* v) {
  key(k);
  text_ += '"';
  appendEscaped(&text_, v);
  text_ += '"';
  return *this;
}

Args& Args::hex(const char* k, uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%016" PRIx64, v);
  return str(k, b);
}

void record(Cat cat, int rank, const char* name, int64_t startNs, int64_t endNs, std::string args) {
  State& s = state();
  if (s.count.fetch_add(1, std::memory_order_relaxed) >= s.maxEvents) {
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadBuffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.events.push_back(Event{startNs, std::max<int64_t>(0, endNs - startNs), name, cat, rank, std::move(args)});
}

void nameThread(const char* name) {
  if (!tBuffer) {
    tPendingName = name;
    return;
  }
  std::lock_guard<std::mutex> lock(tBuffer->mutex);
  tBuffer->name = name;
}

void noteRank(int rank, int nranks, double clockOffsetUs, double uncertaintyUs) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  RankInfo& r = s.ranks[rank];
  r.nranks = nranks;
  r.offsetUs = clockOffsetUs;
  r.uncertaintyUs = uncertaintyUs;
}

// The file of `rank` holds every rank of this process whose path expands to the same name (all
// of them when the pattern has no %r), and the process's own events (API calls, groups) once,
// under its first rank.
void flushRank(int rank) {
  if (!on()) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.ranks.find(rank) == s.ranks.end()) s.ranks[rank] = RankInfo{};
  const std::string path = expandFileName(s.pattern, s.host, rank);
  std::set<int> mine;
  for (const auto& [r, info] : s.ranks)
    if (expandFileName(s.pattern, s.host, r) == path) mine.insert(r);
  const int first = *mine.begin();
  std::string out = "{\"traceEvents\":[\n";
  std::set<std::pair<int, long>> threads;
  for (const auto& b : s.buffers) {
    std::lock_guard<std::mutex> bl(b->mutex);
    for (const Event& e : b->events) {
      if (e.rank >= 0 && mine.count(e.rank) == 0) continue;
      const int pid = e.rank >= 0 ? e.rank : first;
      appendEvent(&out, e, pid, b->tid);
      if (threads.insert({pid, b->tid}).second) appendMeta(&out, "thread_name", pid, b->tid, b->name);
    }
  }
  std::string ranks;
  for (int r : mine) {
    const RankInfo& info = s.ranks[r];
    appendMeta(&out, "process_name", r, -1,
               "rank " + std::to_string(r) + " (" + s.host + ", pid " + std::to_string(getpid()) + ")");
    char b[160];
    snprintf(b, sizeof b, "%s{\"rank\":%d,\"nranks\":%d,\"clockOffsetUs\":%.3f,\"clockUncertaintyUs\":%.3f}",
             ranks.empty() ? "" : ",", r, info.nranks, info.offsetUs, info.uncertaintyUs);
    ranks += b;
  }
  out.resize(out.size() - 2);  // the last ",\n" (a process_name entry always precedes it)
  char tail[256];
  snprintf(tail, sizeof tail,
           "\n],\n\"displayTimeUnit\":\"ns\",\n\"weft\":{\"version\":\"%d.%d.%d\",\"pid\":%ld,"
           "\"clock\":\"CLOCK_MONOTONIC\",\"droppedEvents\":%" PRId64 ",\"host\":\"",
           NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, static_cast<long>(getpid()), s.dropped.load());
  out += tail;
  appendEscaped(&out, s.host.c_str());
  out += "\",\"ranks\":[" + ranks + "]}}\n";
  // Written aside and renamed, so a reader never sees half a file.
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    WEFT_WARN("WEFT_TRACE_FILE: cannot write \"%s\" (%s); rank %d's trace is lost", path.c_str(), std::strerror(errno),
              rank);
    return;
  }
  if (s.dropped.load() > 0)
    WEFT_WARN("WEFT_TRACE_FILE: %" PRId64 " events were dropped past WEFT_TRACE_MAX_EVENTS=%" PRId64, s.dropped.load(),
              s.maxEvents);
}

}  // namespace weft::trace
