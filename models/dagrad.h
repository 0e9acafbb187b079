// models/dagrad.h
//
// The whole public API in one include: graphs, every op, gradients and
// optimizers, the executor, checkpoints, DOT export and the models' layers.
//
//   #include <dagrad/dagrad.h>
//
//   dagrad::Graph g;
//   dagrad::Value x = g.Input("x", dagrad::DType::kFloat32, {4, 3});
//   dagrad::Value w = g.Parameter("w", {2, 3}, dagrad::Initializer::Ones());
//   dagrad::Value loss = dagrad::Mean(dagrad::Relu(dagrad::Linear(x, w)));
//
// Installed, every header sits under <dagrad/...> (this one as
// <dagrad/dagrad.h>, or a single family such as <dagrad/ops/loss.h>); in
// the source tree this one is "models/dagrad.h" and the others "engine/...",
// "ops/..." and "models/...". Headers under an internal/ folder, and the
// per-ISA kernels' (ops/cpu/kernels/), are the library's own and are not
// installed. The helpers a custom op's kernel uses (ops/registry.h,
// ops/op_util.h, ops/cpu/parallel.h, ops/math/) are installed but are not
// included here.

#ifndef DAGRAD_DAGRAD_H_
#define DAGRAD_DAGRAD_H_

// The graph IR and running it.
#include "engine/cuda/cuda_device.h"
#include "engine/device/device.h"
#include "engine/dot/dot.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/initializer.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/random_tensor.h"
#include "engine/shape.h"
#include "engine/shape_family.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"

// Ops, one header per family.
#include "ops/attention.h"
#include "ops/collective.h"
#include "ops/cumsum.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "ops/sum_of_squares.h"

// The CPU backend: threads, the BLIS kernel set.
#include "ops/cpu/cpu_runtime.h"

// Gradients, optimizers, mixed precision, data parallelism.
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/data_parallel.h"
#include "ops/autodiff/optimizer.h"
#include "ops/autodiff/precision.h"

// Layers (dagrad::nn) and models.
#include "models/evaluate.h"
#include "models/fit.h"
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_trainer.h"
#include "models/gpt/text_task.h"
#include "models/gpt/token_sampler.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/hf_config.h"
#include "models/language_model.h"
#include "models/nn/nn.h"
#include "models/nn/positional_encoding.h"
#include "models/toy/tasks.h"
#include "models/toy/toy_trainer.h"
#include "models/plot/plots.h"
#include "models/plot/svg.h"
#include "models/progress.h"
#include "models/run_config.h"
#include "models/run_directory.h"
#include "models/run_outputs.h"
#include "models/stop_signals.h"
#include "models/toy/transformer.h"
#include "models/trainer.h"

#endif  // DAGRAD_DAGRAD_H_
