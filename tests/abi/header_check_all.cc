// All public headers together, compiled as C++.
#include "header_check_all.c"
