#include "task/task.h"

namespace weft {

const char* collName(CollKind k) {
  switch (k) {
    case CollKind::kAllReduce: return "AllReduce";
    case CollKind::kBroadcast: return "Broadcast";
    case CollKind::kReduce: return "Reduce";
    case CollKind::kAllGather: return "AllGather";
    case CollKind::kReduceScatter: return "ReduceScatter";
    case CollKind::kAlltoAll: return "AlltoAll";
    case CollKind::kAlltoAllv: return "AlltoAllv";
    case CollKind::kGather: return "Gather";
    case CollKind::kScatter: return "Scatter";
    case CollKind::kSend: return "Send";
    case CollKind::kRecv: return "Recv";
    case CollKind::kCopy: return "SelfCopy";
    case CollKind::kAllGatherv: return "AllGatherv";
    case CollKind::kReduceScatterv: return "ReduceScatterv";
  }
  return "?";
}

const char* collApiPrefix(CollKind k) { return isVariableKind(k) ? "weft" : "nccl"; }

bool collReduces(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kReduce || k == CollKind::kReduceScatter ||
         k == CollKind::kReduceScatterv;
}

}  // namespace weft
