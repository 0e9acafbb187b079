#include "ops/broadcast.h"

namespace dagrad {

Dims BroadcastStrides(const Shape& in, const Shape& out) {
  Dims strides(out.rank(), 0);
  const Dims own = RowMajorStrides(in);
  const int shift = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) {
    strides[shift + i] = in[i] == 1 && out[shift + i] != 1 ? 0 : own[i];
  }
  return strides;
}

}  // namespace dagrad
