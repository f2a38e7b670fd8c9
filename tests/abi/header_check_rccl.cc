// The C header check of rccl/rccl.h, compiled as C++.
#include "header_check_rccl.c"
