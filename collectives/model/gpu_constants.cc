#include "collectives/model/gpu_constants.h"

namespace weft {
namespace {

// One family's figures. linkGBps: what one GPU writes to one peer per direction; blockGBps: one
// thread block's copy rate from its own memory (an estimate); flagUs: a flag seen by a peer GPU.
struct Family {
  const char* name;
  double linkGBps, blockGBps, flagUs, l2MiB;
};

// A100: NVLink 3, 300 GB/s per GPU in all; 40 MiB L2. H100: NVLink 4, 450 GB/s line rate (about
// 370 GB/s of ring busbw measured by NVIDIA); 50 MiB L2. MI250 (one GCD): xGMI about 50 GB/s
// per peer; 8 MiB L2. MI300X: 64 GB/s raw, about 48 GB/s usable per direction per peer over 7
// links; 256 MiB of Infinity Cache. The per-peer share is what one peer of a full node gets.
constexpr Family kA100{"A100-class (sm_80)", 300.0 / 7, 100, 1.5, 40};
constexpr Family kH100{"H100-class (sm_90)", 370.0 / 7, 150, 1.0, 50};
constexpr Family kMi250{"MI250-class (gfx90a)", 50, 80, 2.0, 8};
constexpr Family kMi300{"MI300X-class (gfx942)", 48, 120, 1.5, 256};
constexpr Family kOther{"unknown GPU (generic)", 20, 60, 2.0, 8};

const Family& familyOf(const GpuDescription& g) {
  if (g.amd) {
    if (g.computeMajor == 9 && g.computeMinor >= 4) return kMi300;
    if (g.computeMajor == 9) return kMi250;
    return kOther;
  }
  if (g.computeMajor >= 9) return kH100;
  if (g.computeMajor == 8) return kA100;
  return kOther;
}

}  // namespace

HostConstants gpuConstants(const GpuDescription& gpu, std::string* family) {
  const Family& f = familyOf(gpu);
  if (family != nullptr) *family = f.name;
  HostConstants c;
  c.copyGBps = f.blockGBps;
  c.memGBps = f.blockGBps;
  c.reduceGBps = f.blockGBps * 2 / 3;  // reads two streams for each one it writes
  c.peerReadGBps = f.linkGBps < f.blockGBps ? f.linkGBps : f.blockGBps;
  c.handoffUs = f.flagUs;
  c.stepUs = 0.5;  // a block's wait, fence and flag per piece
  // A block never sleeps; ranks sharing one GPU share its SMs, not a core.
  c.futexWakeUs = f.flagUs;
  c.yieldHandoffUs = f.flagUs;
  c.cacheMiB = f.l2MiB;
  c.crossNumaBwScale = 1.0;
  c.crossNumaLatScale = 1.0;
  return c;
}

}  // namespace weft
