// The creator's side of fd_passing.h: one thread per process, started on first use, serves every
// offered segment from one epoll loop. Each accepted connection is checked with SO_PEERCRED (the
// same user only; others are refused and logged) and answered with the segment's memfd
// (SCM_RIGHTS). After `peers` deliveries, or at withdrawSegmentFd, the listening socket closes and
// its abstract name is gone. A forked child drops the parent's offers (it did not make them, and
// holding their sockets would keep the names alive); the thread stops when the library unloads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace weft {

// Offers a duplicate of memfd (the caller keeps its own) under segmentName to `peers` (> 0)
// connections of this user, then withdraws it. Returns a handle (> 0), or 0 with *why.
uint64_t offerSegmentFd(const std::string& segmentName, int memfd, uint64_t bytes, int peers, std::string* why);
// Closes the name at once. A handle already withdrawn, or one from before a fork, is ignored.
void withdrawSegmentFd(uint64_t handle);
// Names this process offers right now (tests check that none stays behind).
size_t offeredSegmentCount();

}  // namespace weft
