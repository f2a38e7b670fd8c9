#include "program/step.h"

namespace weft {

const char* stepName(StepOp op) {
  switch (op) {
    case StepOp::kSend: return "send";
    case StepOp::kRecv: return "recv";
    case StepOp::kRecvReduceSend: return "recvReduceSend";
    case StepOp::kRecvReduceCopy: return "recvReduceCopy";
    case StepOp::kRecvReduceCopySend: return "recvReduceCopySend";
    case StepOp::kRecvCopySend: return "recvCopySend";
    case StepOp::kCopySend: return "copySend";
    case StepOp::kCopy: return "copy";
    case StepOp::kReduceScratch: return "reduceScratch";
    case StepOp::kDirectStage: return "directStage";
    case StepOp::kDirectBarrier: return "directBarrier";
    case StepOp::kDirectReduce: return "directReduce";
    case StepOp::kDirectCopy: return "directCopy";
    case StepOp::kLowpQuantize: return "lowpQuantize";
    case StepOp::kLowpReduce: return "lowpReduce";
    case StepOp::kLowpDequant: return "lowpDequant";
  }
  return "?";
}

}  // namespace weft
