// engine/device/host_device.h
//
// DAGRAD_HOST_DEVICE marks inline functions that CUDA device code shares
// with the host (Philox, wrapping integer arithmetic), so both backends
// compute the same bits from one definition.

#ifndef DAGRAD_ENGINE_DEVICE_HOST_DEVICE_H_
#define DAGRAD_ENGINE_DEVICE_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define DAGRAD_HOST_DEVICE __host__ __device__
#else
#define DAGRAD_HOST_DEVICE
#endif

#endif  // DAGRAD_ENGINE_DEVICE_HOST_DEVICE_H_
