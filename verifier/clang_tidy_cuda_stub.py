"""The minimal CUDA runtime header clang-tidy lints CUDA kernels with where no toolkit is
installed (verifier/clang_tidy_run.py): declarations only, never compiled or run."""

# The CUDA names kernels use most, for linting without a toolkit: declarations only, enough
# for clang to parse host and device code; never compiled or run. __CUDACC__ stays undefined
# so torch's headers take their host-only paths (they would otherwise want cuda_bf16.h...).
CUDA_STUB = r"""#pragma once
#pragma clang system_header
#include <stdlib.h>
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include <stddef.h>
#include <stdint.h>
struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
#include <__clang_cuda_builtin_vars.h>
extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0, void *stream = 0);
struct __half { unsigned short __x; template <class T> __host__ __device__ operator T() const; };
struct __nv_bfloat16 { unsigned short __x; template <class T> __host__ __device__ operator T() const; };
#define __KL_DEV1(name, builtin, T) static __device__ __inline__ T name(T a) { return builtin(a); }
#define __KL_DEV2(name, builtin, T) static __device__ __inline__ T name(T a, T b) { return builtin(a, b); }
__KL_DEV2(fmaxf, __builtin_fmaxf, float) __KL_DEV2(fminf, __builtin_fminf, float)
__KL_DEV2(fmax, __builtin_fmax, double) __KL_DEV2(fmin, __builtin_fmin, double)
__KL_DEV2(powf, __builtin_powf, float) __KL_DEV2(pow, __builtin_pow, double)
__KL_DEV1(expf, __builtin_expf, float) __KL_DEV1(exp, __builtin_exp, double)
__KL_DEV1(logf, __builtin_logf, float) __KL_DEV1(log, __builtin_log, double)
__KL_DEV1(sqrtf, __builtin_sqrtf, float) __KL_DEV1(sqrt, __builtin_sqrt, double)
__KL_DEV1(tanhf, __builtin_tanhf, float) __KL_DEV1(tanh, __builtin_tanh, double)
__KL_DEV1(fabsf, __builtin_fabsf, float) __KL_DEV1(fabs, __builtin_fabs, double)
__KL_DEV1(erff, __builtin_erff, float) __KL_DEV1(erf, __builtin_erf, double)
__KL_DEV1(floorf, __builtin_floorf, float) __KL_DEV1(ceilf, __builtin_ceilf, float)
__KL_DEV1(sinf, __builtin_sinf, float) __KL_DEV1(cosf, __builtin_cosf, float)
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
__host__ __device__ float2 make_float2(float, float);
__host__ __device__ float4 make_float4(float, float, float, float);
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 } cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemcpyToSymbol(const void *, const void *, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice);
template <class T> cudaError_t cudaMemcpyToSymbol(const T &, const void *, size_t, size_t = 0, cudaMemcpyKind = cudaMemcpyHostToDevice);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaGetDevice(int *);
template <class T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive, cudaStreamCaptureStatusInvalidated };
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *);
cudaError_t cudaStreamGetPriority(cudaStream_t, int *);
cudaError_t cudaDeviceGetStreamPriorityRange(int *, int *);
#define cudaStreamNonBlocking 0x01
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned int);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int = 0);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
__device__ void __syncthreads(void);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned int = 0xffffffffu);
__device__ void __threadfence(void);
template <class T> __device__ T __shfl_sync(unsigned int, T, int, int = 32);
template <class T> __device__ T __shfl_down_sync(unsigned int, T, unsigned int, int = 32);
template <class T> __device__ T __shfl_up_sync(unsigned int, T, unsigned int, int = 32);
template <class T> __device__ T __shfl_xor_sync(unsigned int, T, int, int = 32);
__device__ unsigned int __ballot_sync(unsigned int, int);
template <class T> __device__ T __ldg(const T *);
__device__ float atomicAdd(float *, float);
__device__ double atomicAdd(double *, double);
__device__ int atomicAdd(int *, int);
__device__ unsigned int atomicAdd(unsigned int *, unsigned int);
__device__ int atomicMax(int *, int);
__device__ int atomicMin(int *, int);
__device__ int atomicCAS(int *, int, int);
__device__ unsigned long long atomicCAS(unsigned long long *, unsigned long long, unsigned long long);
__device__ int atomicExch(int *, int);
__device__ float atomicExch(float *, float);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __fdividef(float, float);
__device__ float __frcp_rn(float);
__device__ float __fmaf_rn(float, float, float);
__device__ float rsqrtf(float);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ int min(int, int);
__device__ int max(int, int);
__device__ float min(float, float);
__device__ float max(float, float);
"""
