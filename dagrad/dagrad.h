// dagrad/dagrad.h
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
// Installed, every header sits under <dagrad/...> (this one, or a single
// family such as <dagrad/ops/loss.h>); inside the source tree the same
// headers are "engine/...", "ops/..." and "models/...". The kernel helpers
// (ops/broadcast.h, ops/parallel.h, ops/*_math.h, ...) are installed for the
// headers that use them but are not part of the API, so they are not here.

#ifndef DAGRAD_DAGRAD_H_
#define DAGRAD_DAGRAD_H_

// The graph IR and running it.
#include "engine/checkpoint.h"
#include "engine/cuda/cuda_device.h"
#include "engine/device.h"
#include "engine/dot.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/initializer.h"
#include "engine/safetensors.h"
#include "engine/shape.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"

// Ops, one header per family.
#include "ops/attention.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_runtime.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/minmax.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

// Gradients, optimizers, training steps.
#include "engine/autodiff/autodiff.h"
#include "engine/autodiff/optimizer.h"

// Layers (dagrad::nn) and models.
#include "models/nn.h"
#include "models/positional_encoding.h"
#include "models/tasks.h"
#include "models/toy_trainer.h"
#include "models/transformer.h"

#endif  // DAGRAD_DAGRAD_H_
