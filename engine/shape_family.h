// engine/shape_family.h
//
// ShapeFamily: one graph-building function run at every shape it is fed.
// A graph has fixed shapes; a family declares its inputs with named
// symbolic sizes ("batch", "seq") and a bound on each, and builds the
// graph for a binding of those sizes when a run first needs it:
//
//   // setup: Default
//   Executor exec(g);
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<ShapeFamily> family, ShapeFamily::Create(
//       g, exec, {.inputs = {{"ids", DType::kInt64, {"batch", "seq"}}},
//                 .bounds = {{"batch", 8}, {"seq", 16}}},
//       [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
//         return Specialized{.fetches = {Linear(Embedding(table, b.input("ids")), head)}};
//       }));
//   DAGRAD_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector<int64_t>({1, 3}, {1, 2, 3}));
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, family->Run({{"ids", ids}}));  // (1, 3, V)
//
// Run reads each symbol's size off the fed tensors, checks that the inputs
// agree on it and that it is within its bound, and runs the plan of that
// binding, building and compiling it on a miss.
//
// Why specialise per shape (as JAX's jit and torch.compile(dynamic=False)
// do) rather than re-infer symbolic dims at every run: the planner lays
// out each plan's arena once from static shapes, kernels pick their paths
// (GEMM blocking, fused attention) from them, and a CUDA plan's recording
// replays fixed pointers and sizes; a plan per binding keeps all of that,
// and a model is written once, as a function of its inputs, as dagrad
// models already are (LanguageModel::Logits).
//
// Sharing. Every specialisation is built in the same graph, under a scope
// named after its binding ("batch=2,seq=3/...", or "batch=2,seq=3#2/..."
// where another family of the graph took that name), and runs on the same
// executor, so a parameter or other variable created before the family is
// one buffer in every specialisation: a training step run on one shape is
// seen by all. A variable created inside the build function belongs to its
// specialisation. A specialisation's random ops (dropout) draw by their
// place in it (Graph::StreamOrigin), so a resumed run that meets the
// shapes in another order draws what the first run drew.
//
// Training at every shape: make the optimizer once, before the family
// (MakeOptimizer, ops/autodiff/optimizer.h: its inputs and moments), build
// each shape's step on it, and feed its lr and step to every run as
// shared feeds, so that all the steps move the same moments:
//
//   // setup: Default
//   DAGRAD_ASSIGN_OR_RETURN(Optimizer adam, MakeOptimizer({table, head}, {}));
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<ShapeFamily> steps, ShapeFamily::Create(
//       g, exec, {.inputs = {{"ids", DType::kInt64, {"batch", "seq"}}},
//                 .bounds = {{"batch", 8}, {"seq", 16}}},
//       [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
//         const Value ids = b.input("ids");
//         DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(
//             CrossEntropy(Linear(Embedding(table, ids), head), ids), adam));
//         return Specialized{.fetches = {ts.loss}, .targets = ts.updates};
//       }));
//   DAGRAD_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector<int64_t>({1, 3}, {1, 2, 3}));
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> loss, steps->Run({{"ids", ids}}, {.training = true},
//       {{adam.lr(), Tensor::Scalar(1e-3)}, {adam.step(), Tensor::Scalar(1.0)}}));
//
// Memory. The compiled plans are an LRU of at most max_plans; each plan's
// arena counts against the executor's memory limit
// (ExecutorOptions::memory_limit_bytes, engine/plan/memory_budget.h), and
// a compile that does not fit evicts the least recently used plans, one by
// one, before it is refused. The graph keeps each binding's nodes, so an
// evicted binding is compiled again, not rebuilt: it grows by one
// subgraph per distinct binding, which the bounds limit.
//
// A ShapeFamily is not thread-safe; the graph and the executor must
// outlive it. Make a family once and keep it: the graph keeps the nodes
// of every family made in it, so one made again (per epoch, say) builds
// its specialisations again beside the first one's.

#ifndef DAGRAD_ENGINE_SHAPE_FAMILY_H_
#define DAGRAD_ENGINE_SHAPE_FAMILY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad {

// Dim is one dimension of a family's input: a fixed size, or the name of a
// symbol whose size each run reads off the fed tensor.
struct Dim {
  Dim(int64_t size) : size(size) {}  // NOLINT: {2, "seq"} reads as a shape
  Dim(const char* symbol) : symbol(symbol) {}  // NOLINT
  int64_t size = 0;
  std::string symbol;  // empty: fixed
};

struct FamilyInput {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<Dim> dims;
};

struct ShapeFamilyOptions {
  std::vector<FamilyInput> inputs;
  // Every symbol the inputs name, with the largest size it takes (>= 1);
  // a run's sizes are 1..bound.
  std::map<std::string, int64_t> bounds;
  // The most compiled plans kept at once (>= 1).
  int max_plans = 4;
};

// Binding is what the build function is given: each symbol's size and the
// family's inputs as placeholders of those shapes.
struct Binding {
  std::map<std::string, int64_t> sizes;
  std::map<std::string, Value> inputs;
  // input is the placeholder of the input named `name` (a null Value for a
  // name the family does not declare); size is a symbol's size (0 for one
  // it does not).
  Value input(const std::string& name) const;
  int64_t size(const std::string& symbol) const;
};

// Specialized is what the build function returns: what Run fetches, in
// order, and the ops it runs for their effects (Executor::Compile's).
struct Specialized {
  std::vector<Value> fetches, targets;
};

using SpecializeFn = std::function<absl::StatusOr<Specialized>(Graph&, const Binding&)>;

// NamedFeeds feeds a family's inputs by name.
using NamedFeeds = std::vector<std::pair<std::string, Tensor>>;

// CheckShapeFamilyOptions checks a declaration: InvalidArgument naming
// what is wrong (an input with no or a repeated name, or a '/' in it, a
// fixed size < 0, a symbol with no bound or a bound < 1, a bound no input
// uses, max_plans < 1). ShapeFamily::Create and the ONNX family export
// (ops/onnx/export_family.h) run it.
//
//   DAGRAD_RETURN_IF_ERROR(CheckShapeFamilyOptions(
//       {.inputs = {{"x", DType::kFloat32, {"batch", 4}}}, .bounds = {{"batch", 64}}}));
absl::Status CheckShapeFamilyOptions(const ShapeFamilyOptions& options);

class ShapeFamily {
 public:
  // Create checks the declaration (CheckShapeFamilyOptions, and `exec` not
  // of `g`); nothing is built until a run needs it.
  static absl::StatusOr<std::unique_ptr<ShapeFamily>> Create(Graph& g, Executor& exec,
                                                             ShapeFamilyOptions options,
                                                             SpecializeFn build);

  // Bind returns each symbol's size in `feeds`. InvalidArgument for a
  // missing, repeated or unknown input, a rank or fixed size that differs
  // from the declaration, a symbol's size < 1 or above its bound, and two
  // inputs that disagree on a symbol (naming both inputs and dims).
  absl::StatusOr<std::map<std::string, int64_t>> Bind(const NamedFeeds& feeds) const;

  // Run binds `feeds` and runs that binding's plan (built and compiled on a
  // miss, evicting as the file comment says), feeding `shared` too: inputs
  // of the graph made outside the family (an Optimizer's lr and step), fed
  // as they are to whichever plan runs. Errors: Bind's, a shared feed of
  // one of the family's own inputs, the build function's and the graph
  // errors it made, Compile's (ResourceExhausted when the plan does not fit
  // even with no other plan of the family kept) and Executor::Run's.
  absl::StatusOr<std::vector<Tensor>> Run(const NamedFeeds& feeds,
                                          const RunOptions& options = {},
                                          const Feeds& shared = {});

  // The plans kept now, their arenas' bytes, and how many compiles and
  // builds the family has done (a compile of an evicted binding is not a
  // build).
  int cached_plans() const;
  int64_t cached_bytes() const;
  int64_t compiles() const { return compiles_; }
  int64_t builds() const { return static_cast<int64_t>(built_.size()); }  // failed ones too
  // Whether the plan of `sizes` is kept now.
  bool IsCached(const std::map<std::string, int64_t>& sizes) const;

 private:
  struct Built {
    Binding binding;
    Specialized out;
    absl::Status failed;  // the build's error
    std::unique_ptr<Plan> plan;
    int64_t last_used = 0;
  };
  ShapeFamily(Graph& g, Executor& exec, ShapeFamilyOptions options, SpecializeFn build)
      : graph_(g), exec_(exec), options_(std::move(options)), build_(std::move(build)) {}
  absl::StatusOr<Built*> Find(const std::map<std::string, int64_t>& sizes);
  absl::Status Build(const std::map<std::string, int64_t>& sizes, Built& built);
  absl::Status Compile(Built& built);
  // CheckShared refuses a shared feed that is one of the family's inputs.
  absl::Status CheckShared(const Value& value) const;
  // EvictOldest drops the least recently used plan but `keep`; false when
  // there is none to drop.
  bool EvictOldest(const Built* keep);

  Graph& graph_;
  Executor& exec_;
  const ShapeFamilyOptions options_;
  const SpecializeFn build_;
  std::map<std::map<std::string, int64_t>, Built> built_;
  int64_t clock_ = 0, compiles_ = 0;
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_SHAPE_FAMILY_H_
