// The C header check of weft/weft.h, compiled as C++.
#include "header_check_weft.c"
