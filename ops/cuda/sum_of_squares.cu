// CUDA kernel of sum_of_squares (ops/sum_of_squares.cc): the same chunks,
// lanes and tree as the CPU kernel (ops/math/sum_of_squares_math.h), so the two
// give the same bits.
//
// One block of kSquaresLanes threads per chunk writes the chunk's sum to a
// scratch array, indexed by the chunk's number; one more block adds those
// sums. The inputs' pointers and sizes go to the kernel as an argument (a
// SquaresBatch of up to kBatchInputs inputs: one launch for all the
// gradients of a model of that many parameters, a few for a larger one),
// not through a table in device memory: kernel arguments are copied when
// the launch is queued, so nothing is copied from the host while kernels
// run, and a CUDA graph that records the launches replays them with the
// same arguments.

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/math/sum_of_squares_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

// 48 inputs: the argument is 1.4 KB, well inside the 4 KB every GPU takes.
constexpr int kBatchInputs = 48;

struct SquaresBatch {
  const void* data[kBatchInputs];
  int64_t elements[kBatchInputs];
  bool is_double[kBatchInputs];
  // first_chunk[i]: the number of input i's first chunk among all the
  // op's chunks; first_chunk[count]: one past the last chunk of the batch.
  int64_t first_chunk[kBatchInputs + 1];
  int count;
};

// LaneSum is lane `lane`'s sum over chunk `chunk` of x (n elements).
template <typename T>
__device__ double LaneSum(const T* x, int64_t n, int64_t chunk, int lane) {
  const int64_t begin = chunk * kSquaresChunk;
  const int64_t end = n - begin < kSquaresChunk ? n : begin + kSquaresChunk;
  double s = 0;
  for (int64_t i = begin + lane; i < end; i += kSquaresLanes) s += SquareOf(x[i]);
  return s;
}

// FoldBlock folds the block's lanes (blockDim.x == kSquaresLanes), one
// width at a time, leaving the sum in lanes[0], for thread 0 only (the
// last step is its own: no other thread may read it without a barrier).
// Contains __syncthreads: call it from every thread.
__device__ void FoldBlock(double* lanes) {
  for (int width = kSquaresLanes / 2; width > 0; width /= 2) {
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < width) FoldLanes(lanes, width, threadIdx.x);
  }
}

// ChunkSumsKernel writes the sum of each chunk of the batch to
// sums[chunk number], a block per chunk.
__global__ void ChunkSumsKernel(SquaresBatch batch, double* sums) {
  __shared__ double lanes[kSquaresLanes];
  const int64_t first = batch.first_chunk[0], end = batch.first_chunk[batch.count];
  for (int64_t c = first + blockIdx.x; c < end; c += gridDim.x) {
    int i = 0;
    while (c >= batch.first_chunk[i + 1]) ++i;
    const int64_t chunk = c - batch.first_chunk[i];
    lanes[threadIdx.x] =
        batch.is_double[i]
            ? LaneSum(static_cast<const double*>(batch.data[i]), batch.elements[i], chunk,
                      threadIdx.x)
            : LaneSum(static_cast<const float*>(batch.data[i]), batch.elements[i], chunk,
                      threadIdx.x);
    FoldBlock(lanes);
    if (threadIdx.x == 0) sums[c] = lanes[0];
    __syncthreads();  // thread 0 reads lanes[0] before the next chunk writes the lanes
  }
}

// TotalKernel adds the `count` chunk sums into *out (one block).
__global__ void TotalKernel(const double* sums, int64_t count, double* out) {
  __shared__ double lanes[kSquaresLanes];
  double s = 0;
  for (int64_t c = threadIdx.x; c < count; c += kSquaresLanes) s += sums[c];
  lanes[threadIdx.x] = s;
  FoldBlock(lanes);
  if (threadIdx.x == 0) *out = lanes[0];
}

// LaunchBatch queues ChunkSumsKernel for inputs [begin, end), whose
// chunks start at number `first_chunk`; returns the number after theirs.
absl::StatusOr<int64_t> LaunchBatch(const KernelContext& ctx, size_t begin, size_t end,
                                    int64_t first_chunk, double* sums) {
  SquaresBatch batch{};
  batch.count = static_cast<int>(end - begin);
  batch.first_chunk[0] = first_chunk;
  for (size_t i = begin; i < end; ++i) {
    const TensorRef& x = ctx.inputs[i];
    const int k = static_cast<int>(i - begin);
    if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64) {
      return absl::UnimplementedError(
          absl::StrCat("kernel has no ", DTypeName(x.dtype), " variant"));
    }
    batch.data[k] = x.data;
    batch.elements[k] = x.num_elements();
    batch.is_double[k] = x.dtype == DType::kFloat64;
    batch.first_chunk[k + 1] = batch.first_chunk[k] + SquaresChunks(x.num_elements());
  }
  const int64_t chunks = batch.first_chunk[batch.count] - first_chunk;
  if (chunks == 0) return first_chunk;
  ChunkSumsKernel<<<cuda::GridFor(chunks, 1), kSquaresLanes, 0,
                    CudaContextOf(ctx).stream()>>>(batch, sums);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("ChunkSumsKernel"));
  return first_chunk + chunks;
}

absl::Status SumOfSquaresKernel(const KernelContext& ctx) {
  CudaContext& cuda = CudaContextOf(ctx);
  int64_t count = 0;
  for (const TensorRef& x : ctx.inputs) count += SquaresChunks(x.num_elements());
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer sums, cuda.Scratch(count * sizeof(double)));
  int64_t next = 0;
  for (size_t begin = 0; begin < ctx.inputs.size(); begin += kBatchInputs) {
    const size_t end = std::min(ctx.inputs.size(), begin + kBatchInputs);
    DAGRAD_ASSIGN_OR_RETURN(next, LaunchBatch(ctx, begin, end, next, sums.as<double>()));
  }
  TotalKernel<<<1, kSquaresLanes, 0, cuda.stream()>>>(sums.as<double>(), count,
                                                      ctx.output.as<double>());
  return CheckLaunch("TotalKernel");
}

}  // namespace

DAGRAD_CUDA_KERNEL(sum_of_squares, SumOfSquaresKernel);

}  // namespace dagrad
