// One collective case (tests/collectives/coll_cases.h's CollCase) run on GPU buffers: the rank's
// buffers live in device memory with guard bytes on both sides, inputs come from the same
// host reference (reference.h) as the host-mode suites, the call goes on the rank's stream, and
// after gpuStreamSynchronize the buffers are copied back and every element is checked.
// Only the public NCCL API and the vendor runtime (through gpu_test_api.h) are used.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "gpu_test_api.h"
#include "harness.h"

namespace weft_test {

// Records a failure naming `what` and the vendor error unless e is gpuSuccess.
bool gpuOk(Reporter* rep, gpuError_t e, const char* what);

// Device memory for the tests comes from one block per thread, reserved before the thread's
// communicator exists and freed only when the thread ends, and every copy goes through a
// non-blocking stream of that thread. Why: with several ranks of one process on one GPU, a rank
// that calls gpuFree (which waits for the whole device) or copies on the legacy default stream
// while a peer's collective waits for this rank would deadlock (NCCL warns of the same for
// cudaFree). Call reserveDeviceMemory first thing in a rank (openRank does); false on failure.
bool reserveDeviceMemory(Reporter* rep);

// Device bytes with a guard zone either side; data() is 256-byte aligned plus `shift` bytes.
// Taken from the thread's block; the block is reused from its start once no buffer is alive.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool allocate(size_t shift, size_t bytes, Reporter* rep);
  bool allocated() const { return base_ != nullptr; }
  unsigned char* data() const { return base_ + kGuard + shift_; }
  size_t bytes() const { return bytes_; }
  // Copies of the data bytes (not the guards) to and from the host; complete on return.
  bool upload(const std::vector<unsigned char>& host, Reporter* rep);
  bool download(std::vector<unsigned char>* host, Reporter* rep) const;
  bool fill(int byte, Reporter* rep);
  bool guardsIntact(Reporter* rep) const;

 private:
  static constexpr size_t kGuard = 256;
  static constexpr int kGuardByte = 0xCD;
  unsigned char* base_ = nullptr;
  size_t shift_ = 0;
  size_t bytes_ = 0;
};

// One rank's part of one case on the GPU.
class GpuCaseRun {
 public:
  GpuCaseRun(const CollCase& c, int rank, int nranks);
  ~GpuCaseRun();
  GpuCaseRun(const GpuCaseRun&) = delete;
  GpuCaseRun& operator=(const GpuCaseRun&) = delete;

  // Allocates the device buffers and uploads inputs and junk (what untouched outputs keep).
  bool setup(Reporter* rep);
  // PreMulSum: a host-immediate scalar is overwritten right after creation (it must have been
  // copied); a device scalar lives in device memory and holds its value before the call.
  bool createOp(ncclComm_t comm, Reporter* rep);
  bool destroyOp(ncclComm_t comm, Reporter* rep);
  ncclResult_t issue(ncclComm_t comm, gpuStream_t stream) const;
  // Call after the stream is synchronized: copies back, checks outputs, unchanged inputs, guards.
  void verify(Reporter* rep) const;
  std::string label() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole life of one case on one rank: setup, issue on `stream`, synchronize, verify. False
// when a call failed (the ranks may be out of step: stop issuing collectives).
bool runGpuCaseOnRank(const CollCase& c, ncclComm_t comm, gpuStream_t stream, int rank, int nranks, Reporter* rep);
// Every rank from one thread, the calls in one ncclGroupStart/End, each rank on its own stream.
bool runGpuCaseOnClique(const CollCase& c, const std::vector<ncclComm_t>& comms,
                        const std::vector<gpuStream_t>& streams, Reporter* rep);

}  // namespace weft_test
