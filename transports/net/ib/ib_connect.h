// Setting up IB network connections: listen, connect and accept, none of which blocks.
//
// listen() creates the receive side's QPs at once and puts everything the sender needs in the
// handle (the side channel's TCP address, QP numbers, PSN, GID/LID, MTU, a random token). So the
// sender's connect() finishes on its own: it connects its QPs, sends its own QP description over
// the side channel and is done; the receiver's accept() reads that description and connects its
// QPs. Neither side waits for the other to be polled, which keeps a ring whose first step only
// sends from deadlocking. The sender sends nothing before the receiver advertises a buffer, and
// the receiver does that only after accept, so no packet reaches a QP that is not ready.
#pragma once
#include "transports/net/ib/ib_comm.h"
#include "transports/net/net_abi.h"

namespace weft::net::ib {

ncclResult_t ibListen(int dev, void* handle, void** listenComm);
ncclResult_t ibConnect(int dev, void* handle, void** sendComm);
ncclResult_t ibAccept(void* listenComm, void** recvComm);
ncclResult_t ibCloseListen(void* listenComm);

// The side channel's address in a handle listen() wrote (tests aim strangers at it); false when
// the handle is not an IB network handle.
bool sideChannelAddress(const void* handle, SocketAddress* out);

}  // namespace weft::net::ib
