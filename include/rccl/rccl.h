/* Weft: the RCCL C API under RCCL's include path. The declarations live in ../rccl.h, beside
 * nccl.h, so that the public headers include only upward and never form a cycle. */
#ifndef WEFT_RCCL_RCCL_H_
#define WEFT_RCCL_RCCL_H_
#include "../rccl.h"
#endif /* WEFT_RCCL_RCCL_H_ */
