// engine/cuda/cublas_api.h
//
// The cuBLAS functions dagrad calls, loaded with dlopen when the first CUDA
// device is made instead of linked: libcublasLt's static initialisers take
// about 0.3 s, which every process linking dagrad (each test process, each
// `dagrad` command) would otherwise pay at startup, GPU or not.
//
//   DAGRAD_ASSIGN_OR_RETURN(const CublasApi* blas, LoadCublas());
//   DAGRAD_CUBLAS_RETURN_IF_ERROR(blas->create(&handle));
//
// The library is libcublas.so.<major> of the toolkit dagrad was built with,
// found by the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache), else
// in that toolkit's library directory.

#ifndef DAGRAD_ENGINE_CUDA_CUBLAS_API_H_
#define DAGRAD_ENGINE_CUDA_CUBLAS_API_H_

#include <cublas_v2.h>

#include "absl/status/statusor.h"

namespace dagrad {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasSgemm_v2_64) sgemm;
  decltype(&cublasDgemm_v2_64) dgemm;
  decltype(&cublasSgemmStridedBatched_64) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched_64) dgemm_strided_batched;
  decltype(&cublasSgemmBatched_64) sgemm_batched;
  decltype(&cublasDgemmBatched_64) dgemm_batched;
  // The typed-operand gemms: bfloat16 operands, float32 accumulation.
  decltype(&cublasGemmEx_64) gemm_ex;
  decltype(&cublasGemmStridedBatchedEx_64) gemm_strided_batched_ex;
  decltype(&cublasGemmBatchedEx_64) gemm_batched_ex;
};

// LoadCublas returns the functions, loading the library on the first call
// (later calls return the first call's result). Unavailable, naming the
// files tried and the loader's message, when the library or a function is
// missing.
absl::StatusOr<const CublasApi*> LoadCublas();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_CUBLAS_API_H_
