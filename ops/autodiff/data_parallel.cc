#include "ops/autodiff/data_parallel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/collective.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

// A Piece is elements [begin, end) of gradient `grad`, flattened, at
// `offset` in its bucket.
struct Piece {
  size_t grad;
  int64_t begin, end, offset;
};

struct Bucket {
  std::vector<Piece> pieces;
  int64_t elements = 0;
};

// BackwardOrder lists the non-null gradients by node id: the order the
// planner, lowest id first, computes them in, so that early buckets fill
// first.
std::vector<size_t> BackwardOrder(const std::vector<Value>& grads) {
  std::vector<size_t> order;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].is_null()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return grads[a].id() < grads[b].id(); });
  return order;
}

// MakeBuckets cuts the gradients, in backward order, into buckets of at
// most bucket_bytes, a new one wherever the dtype changes.
std::vector<Bucket> MakeBuckets(const std::vector<Value>& grads, int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  DType dtype = DType::kFloat32;
  int64_t capacity = 0;
  for (size_t i : BackwardOrder(grads)) {
    const int64_t n = grads[i].shape().num_elements();
    for (int64_t begin = 0; begin < n;) {
      if (buckets.empty() || buckets.back().elements == capacity || grads[i].dtype() != dtype) {
        dtype = grads[i].dtype();
        capacity = std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(SizeOf(dtype)));
        buckets.emplace_back();
      }
      Bucket& b = buckets.back();
      const int64_t end = std::min(n, begin + capacity - b.elements);
      b.pieces.push_back({i, begin, end, b.elements});
      b.elements += end - begin;
      begin = end;
    }
  }
  return buckets;
}

// SumBucket returns the bucket's gradients packed and summed over the
// ranks: started as soon as they exist and waited for, or (no overlap) a
// blocking AllReduce of their concatenation.
Value SumBucket(const std::vector<Value>& grads, const Bucket& b, bool overlap) {
  std::vector<Value> values;
  for (const Piece& p : b.pieces) values.push_back(grads[p.grad]);
  if (overlap) {
    return WaitAllReduce(StartAllReduce(values, b.pieces.front().begin, b.pieces.back().end));
  }
  std::vector<Value> flat;
  for (const Piece& p : b.pieces) flat.push_back(Slice(Reshape(grads[p.grad], {-1}), 0, p.begin, p.end));
  return AllReduce(flat.size() == 1 ? flat[0] : Concat(flat, 0));
}

absl::Status CheckGradients(const std::vector<Value>& grads, int64_t bucket_bytes) {
  if (bucket_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data parallel: bucket_bytes must be >= 1, got ", bucket_bytes));
  }
  for (const Value& g : grads) {
    if (g.is_null()) continue;
    if (!g.ok()) return g.status();
    if (g.dtype() != DType::kFloat32 && g.dtype() != DType::kFloat64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data parallel: gradient '", g.path(), "' is ", DTypeName(g.dtype()),
          "; the all-reduce sums float32 or float64"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Value>> ReduceGradients(const std::vector<Value>& grads,
                                                   const DataParallelOptions& options,
                                                   int* num_buckets) {
  DAGRAD_RETURN_IF_ERROR(CheckGradients(grads, options.bucket_bytes));
  const std::vector<Bucket> buckets = MakeBuckets(grads, options.bucket_bytes);
  if (num_buckets != nullptr) *num_buckets = static_cast<int>(buckets.size());
  if (buckets.empty()) return grads;
  Graph& g = *grads[buckets[0].pieces[0].grad].graph();
  Graph::RoleScope role(g, NodeRole::kCommunication);
  // Each gradient's summed pieces, in element order (buckets are in order).
  std::vector<std::vector<Value>> parts(grads.size());
  for (size_t k = 0; k < buckets.size(); ++k) {
    Graph::ScopePathGuard in_bucket(g, absl::StrCat("data_parallel/bucket_", k));
    const Value summed = SumBucket(grads, buckets[k], options.overlap);
    for (const Piece& p : buckets[k].pieces) {
      parts[p.grad].push_back(Slice(summed, 0, p.offset, p.offset + p.end - p.begin));
    }
  }
  std::vector<Value> reduced(grads.size());
  Graph::ScopePathGuard in_unpack(g, "data_parallel");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].is_null()) continue;
    const Value flat = parts[i].size() == 1 ? parts[i][0] : Concat(parts[i], 0);
    const Dims& dims = grads[i].shape().dims();
    reduced[i] = Reshape(flat, {dims.begin(), dims.end()});
    if (!reduced[i].ok()) return reduced[i].status();
  }
  return reduced;
}

}  // namespace dagrad
