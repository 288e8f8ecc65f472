// The one translation unit the committed PTX is made from (native/cuda/gen-ptx.sh): every kernel
// Stoke loads, in one module.
#include "normalize.cu"
#include "resize.cu"
#include "ycc.cu"
