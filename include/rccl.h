/* Weft: the RCCL C API under its older include path; see rccl/rccl.h. */
#ifndef WEFT_RCCL_H_
#define WEFT_RCCL_H_
#include "rccl/rccl.h"
#endif /* WEFT_RCCL_H_ */
