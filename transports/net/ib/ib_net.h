// The built-in IB network (NCCL_NET=IB): RDMA over InfiniBand or RoCE through libibverbs, loaded
// at run time. Written as an ncclNet plugin of the newest ABI version and reached, like the Socket
// network and external plugins, through the loader's adapter (transports/net/plugin).
//
// Host memory only: GPU memory registration (dmabuf) is compiled but has never run on a GPU.
#pragma once
#include <string>
#include <vector>

#include "transports/net/net_abi.h"

namespace weft::net::ib {

const ncclNet_v12_t* ibNetTable();

// One line per RDMA port considered and whether it is used (weft-info, NCCL_DEBUG=INFO).
std::vector<std::string> ibDeviceReport();

// Each usable device's GID table (see gidTableLines), under a line naming the device.
std::vector<std::string> ibGidReport();

// Forgets the discovered devices, so that the next use discovers again under the current
// parameters (the loader's resetNetworksForTesting).
void rediscoverDevicesForTesting();

}  // namespace weft::net::ib
