#include "tests/support/cuda_cases.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/autodiff/autodiff.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/case_table.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

void ElementwiseCases(Cases& cs) {
  const std::vector<std::pair<const char*, Value (*)(Value)>> unary = {
      {"neg", Neg}, {"exp", Exp},   {"relu", Relu}, {"gelu", Gelu},
      {"tanh", Tanh}, {"sigmoid", Sigmoid}, {"sin", Sin}, {"cos", Cos}};
  for (const auto& [name, op] : unary) {
    cs.Floats(name, [op = op](CaseBuilder& b, DType d) {
      b.Out(op(b.Input("x", d, {37, 129}, -3, 3)));
    });
  }
  for (const auto& [name, op] :
       std::vector<std::pair<const char*, Value (*)(Value)>>{{"log", Log}, {"sqrt", Sqrt},
                                                            {"rsqrt", Rsqrt}}) {
    cs.Floats(name, [op = op](CaseBuilder& b, DType d) {
      b.Out(op(b.Input("x", d, {37, 129}, 0.1, 3)));
    });
  }
  cs.Floats("pow", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {5, 61}, 0.2, 2);
    b.Out(Pow(x, 2.0));
    b.Out(Pow(x, 3.0));
    b.Out(Pow(x, -0.5));
  });
  cs.Floats("scale_and_add_scalar", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {1000});
    b.Out(Scale(x, 2.5));
    b.Out(AddScalar(Scale(x, -0.3), 0.7));
  });
  cs.Floats("gelu_relu_grad_direct", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {9, 33}, -3, 3), g = b.Input("g", d, {9, 33});
    b.Out(GeluGrad(x, g));
    b.Out(ReluGrad(x, g));
  }, {.gradients = false});
  // Every cast, with values every target can hold.
  for (DType from : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                     DType::kBool}) {
    for (DType to : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                     DType::kBool}) {
      cs.Add(absl::StrCat("cast_", Suffix(from), "_to_", Suffix(to)), [from, to](CaseBuilder& b) {
        b.Out(Cast(b.Input("x", from, {7, 45}, -100, from == DType::kBool ? 0.5 : 100), to));
      });
    }
  }
  const std::vector<std::pair<const char*, Value (*)(Value, Value)>> arith = {
      {"add", Add}, {"sub", Sub}, {"mul", Mul}, {"maximum", Maximum}, {"minimum", Minimum}};
  for (const auto& [name, op] : arith) {
    cs.Each(absl::StrCat(name, "_broadcast"), kNumeric, [op = op](CaseBuilder& b, DType d) {
      b.Out(op(b.Input("a", d, {2, 3, 40}, -50, 50), b.Input("b", d, {3, 1}, -50, 50)));
    });
    cs.Each(absl::StrCat(name, "_same_shape"), kNumeric, [op = op](CaseBuilder& b, DType d) {
      b.Out(op(b.Input("a", d, {33, 65}, -50, 50), b.Input("b", d, {33, 65}, -50, 50)));
    });
  }
  cs.Each("div_broadcast", kNumeric, [](CaseBuilder& b, DType d) {
    b.Out(Div(b.Input("a", d, {4, 1, 50}, -50, 50), b.Input("b", d, {3, 1}, 1, 9)));
  });
  // Ties (whole numbers) send maximum's and minimum's gradient to a.
  cs.Floats("maximum_minimum_ties", [](CaseBuilder& b, DType d) {
    const Value a = Add(Cast(b.Input("ia", DType::kInt64, {6, 50}, -3, 3), d),
                        Scale(b.Input("x", d, {6, 50}), 0.0));
    const Value c = Cast(b.Input("ib", DType::kInt64, {50}, -3, 3), d);
    b.Out(Maximum(a, c));
    b.Out(Minimum(a, c));
  });
  for (const auto& [name, op] : std::vector<std::pair<const char*, Value (*)(Value, Value)>>{
           {"equal", Equal}, {"less", Less}, {"greater", Greater}}) {
    cs.Each(name, kNumeric, [op = op](CaseBuilder& b, DType d) {
      b.Out(op(b.Input("a", d, {5, 1, 30}, -3, 3), b.Input("b", d, {4, 30}, -3, 3)));
    });
  }
  cs.Add("logic", [](CaseBuilder& b) {
    const Value p = b.Input("p", DType::kBool, {3, 1, 40}, 0, 0.5);
    const Value q = b.Input("q", DType::kBool, {5, 40}, 0, 0.5);
    b.Out(LogicalAnd(p, q));
    b.Out(LogicalOr(p, q));
    b.Out(LogicalNot(q));
  });
  cs.Each("where_broadcast", {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool},
          [](CaseBuilder& b, DType d) {
            b.Out(Where(b.Input("c", DType::kBool, {3, 1, 20}, 0, 0.5),
                        b.Input("a", d, {4, 20}, -9, 9), b.Input("b", d, {3, 4, 1}, -9, 9)));
          });
  cs.Floats("where_same_shape", [](CaseBuilder& b, DType d) {
    b.Out(Where(b.Input("c", DType::kBool, {31, 33}, 0, 0.3), b.Input("a", d, {31, 33}),
                b.Input("b", d, {31, 33})));
  });
}

void ReduceCases(Cases& cs) {
  using ReduceFn = Value (*)(Value, std::vector<int64_t>, bool);
  for (const auto& [name, op] :
       std::vector<std::pair<const char*, ReduceFn>>{{"sum", Sum}, {"mean", Mean}, {"max", Max}}) {
    ReduceFn f = op;
    // mean is defined for floats only.
    const auto dtypes = std::string(name) == "mean" ? kFloating : kNumeric;
    cs.Each(absl::StrCat(name, "_paths"), dtypes, [f](CaseBuilder& b, DType d) {
      const Value x = b.Input("x", d, {6, 300, 7}, -20, 20);
      b.Out(f(x, {}, false));          // everything: one row
      b.Out(f(x, {-1}, true));         // last axis: rows
      b.Out(f(x, {1}, false));         // middle axis: columns, three chunks
      b.Out(f(x, {0, 1}, false));      // leading axes: columns, fifteen chunks
      b.Out(f(x, {0, 2}, true));       // not contiguous: the odometer
      b.Out(f(b.Input("e", d, {3, 0, 2}), {1}, false));  // empty: 0, or -inf / lowest() for max
    });
    cs.Each(absl::StrCat(name, "_long_rows"), dtypes, [f](CaseBuilder& b, DType d) {
      const Value x = b.Input("x", d, {3, 40000}, -20, 20);
      b.Out(f(x, {-1}, false));  // few long rows: chunks of a row, then their partials
      b.Out(f(x, {}, false));
    });
  }
  cs.Add("max_rows_of_minus_inf", [](CaseBuilder& b) {
    const float inf = INFINITY;
    const Value x = b.Fixed("x", T<float>({2, 3}, {-inf, -inf, -inf, 1, -inf, 2}));
    b.Out(Max(x, {-1}));
    b.Out(Max(x, {0}));
  });
}

void ShapeCases(Cases& cs) {
  cs.Each("reshape_permute_transpose", {DType::kFloat32, DType::kFloat64, DType::kBool},
          [](CaseBuilder& b, DType d) {
            const Value x = b.Input("x", d, {2, 3, 4, 5}, 0, 0.5);
            b.Out(Reshape(x, {6, -1}));
            b.Out(Permute(x, {0, 2, 1, 3}));
            b.Out(Permute(x, {3, 1, 0, 2}));
            b.Out(Transpose(x, -1, -2));
          });
  cs.Each("broadcast_to", {DType::kFloat32, DType::kFloat64, DType::kInt32},
          [](CaseBuilder& b, DType d) {
            b.Out(BroadcastTo(b.Input("x", d, {3, 1, 5}, -9, 9), Shape({2, 3, 4, 5})));
          });
  cs.Each("concat", {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool},
          [](CaseBuilder& b, DType d) {
            const Value a = b.Input("a", d, {2, 1, 3}, -9, 0.5);
            const Value c = b.Input("c", d, {2, 4, 3}, -9, 0.5);
            b.Out(Concat({a, c, a}, 1));
            b.Out(Concat({c, c}, -1));
            b.Out(Concat({a, a}, 0));
          });
  cs.Each("slice", {DType::kFloat32, DType::kFloat64, DType::kInt32},
          [](CaseBuilder& b, DType d) {
            const Value x = b.Input("x", d, {3, 17, 4}, -9, 9);
            b.Out(Slice(x, 1, 2, 15, 3));
            b.Out(Slice(x, -1, -3, 100));
            b.Out(Slice(x, 0, 1, 2));
          });
}

void MatMulCases(Cases& cs) {
  struct Shapes {
    const char* name;
    Shape a, b;
    MatMulOptions o;
  };
  const std::vector<Shapes> shapes = {
      {"plain", {5, 7}, {7, 3}, {}},
      {"transpose_a", {7, 5}, {7, 3}, {.transpose_a = true}},
      {"transpose_b", {2, 5, 7}, {2, 3, 7}, {.transpose_b = true}},
      {"transpose_both", {2, 7, 5}, {3, 7}, {.transpose_a = true, .transpose_b = true}},
      {"batched_whole", {2, 3, 4, 5}, {2, 3, 5, 6}, {}},
      {"tall_shared_rhs", {2, 3, 4, 5}, {5, 6}, {}},
      {"shared_lhs", {4, 5}, {3, 5, 2}, {}},
      {"batch_broadcast", {2, 1, 3, 4}, {1, 3, 4, 2}, {}},
      {"batch_broadcast_transposed", {3, 1, 4, 3}, {2, 2, 4}, {.transpose_a = true,
                                                               .transpose_b = true}},
      {"empty_contraction", {3, 0}, {0, 4}, {}},
      {"large", {64, 128}, {128, 96}, {}},
  };
  for (const Shapes& s : shapes) {
    cs.Floats(absl::StrCat("matmul_", s.name), [s](CaseBuilder& b, DType d) {
      b.Out(MatMul(b.Input("a", d, s.a), b.Input("b", d, s.b), s.o));
    });
  }
  cs.Floats("linear", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {2, 3, 40}), w = b.Input("w", d, {17, 40});
    b.Out(Linear(x, w, b.Input("bias", d, {17})));
    b.Out(Linear(x, w));
  });
  // No gradients: linear's rule reshapes x to (-1, 0), which cannot infer
  // the -1 (a CPU-side limitation of the rule, not of the kernels).
  cs.Floats("linear_zero_in_features", [](CaseBuilder& b, DType d) {
    b.Out(Linear(b.Input("x", d, {4, 0}), b.Input("w", d, {3, 0}), b.Input("b", d, {3})));
  }, {.gradients = false});
}

void NnCases(Cases& cs) {
  cs.Floats("layer_norm", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {2, 3, 300}, -2, 5);
    const Value gamma = b.Input("gamma", d, {300}), beta = b.Input("beta", d, {300});
    b.Out(LayerNorm(x, gamma, beta));
    b.Out(LayerNorm(x, Value(), Value(), 1e-3));
    b.Out(LayerNorm(x, gamma, Value()));
    b.Out(LayerNorm(b.Input("v", d, {7}), Value(), b.Input("v_beta", d, {7})));
  });
  cs.Floats("gather_embedding", [](CaseBuilder& b, DType d) {
    const Value table = b.Input("table", d, {50, 33});
    b.Out(Embedding(table, b.Input("ids", DType::kInt64, {4, 9}, 0, 50)));
    b.Out(Gather(b.Input("p", d, {3, 6, 5}), b.Input("i32", DType::kInt32, {2, 7}, 0, 6), 1));
    b.Out(Gather(b.Input("q", d, {3, 6, 5}), b.Input("last", DType::kInt64, {4}, 0, 5), -1));
  });
  cs.Add("gather_of_ints_and_bools", [](CaseBuilder& b) {
    const Value idx = b.Input("idx", DType::kInt64, {11}, 0, 8);
    b.Out(Gather(b.Input("i", DType::kInt32, {8, 3}, -9, 9), idx));
    b.Out(Gather(b.Input("m", DType::kBool, {2, 8}, 0, 0.5), idx, 1));
  });
  cs.Floats("scatter_add_repeats", [](CaseBuilder& b, DType d) {
    b.Out(ScatterAdd(b.Input("idx", DType::kInt64, {500}, 0, 7), b.Input("u", d, {2, 500, 3}),
                     7, 1));
    b.Out(ScatterAdd(b.Input("i32", DType::kInt32, {3, 4}, 0, 300), b.Input("v", d, {3, 4, 2}),
                     300));
  });
  cs.Floats("softmax_masks", [](CaseBuilder& b, DType d) {
    const Value s = b.Input("s", d, {2, 3, 5, 6}, -3, 3);
    b.Out(Softmax(s));
    b.Out(MaskedSoftmax(s, {.keep = b.Input("keep", DType::kBool, {2, 1, 1, 6}, 0, 0.7)}, 0.5));
    b.Out(MaskedSoftmax(s, {.valid_lens = b.Input("lens", DType::kInt64, {2}, 0, 7)}));
    b.Out(MaskedSoftmax(s, {.valid_lens = b.Input("lens2", DType::kInt32, {2, 5}, 0, 7)}));
    b.Out(MaskedSoftmax(s, {.causal = true}));
    b.Out(MaskedSoftmax(s, {.causal = true, .causal_offset = 1}));
    b.Out(MaskedSoftmax(s, {.causal = true, .causal_offset = -2}));
    b.Out(MaskedSoftmax(s, {.bias = b.Input("bias", d, {5, 6}, -2, 2)}));
    b.Out(MaskedSoftmax(s, {.bias = b.Input("row_bias", d, {2, 3, 5, 1}, -2, 2)}));
    b.Out(MaskedSoftmax(s,
                        {.keep = b.Input("keep2", DType::kBool, {5, 6}, 0, 0.8),
                         .valid_lens = b.Input("lens3", DType::kInt64, {2}, 0, 7),
                         .bias = b.Input("bias2", d, {3, 1, 6}, -2, 2),
                         .causal = true},
                        0.3));
    b.Out(MaskedSoftmax(s, {.keep = b.Input("row_keep", DType::kBool, {2, 3, 5, 1}, 0, 0.5)}));
  });
  cs.Floats("softmax_long_rows", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {3, 1000}, -5, 5);
    b.Out(Softmax(x));
    b.Out(LogSoftmax(x));
    b.Out(Softmax(b.Input("v", d, {7})));
  });
  cs.Floats("log_softmax_and_softmax_grad", [](CaseBuilder& b, DType d) {
    b.Out(LogSoftmax(b.Input("x", d, {4, 3, 9}, -4, 4)));
    b.Out(SoftmaxGrad(b.Input("y", d, {6, 11}, 0, 1), b.Input("g", d, {6, 11})));
  });
  for (const auto& [name, reduction] :
       std::vector<std::pair<const char*, CrossEntropyOptions::Reduction>>{
           {"mean", CrossEntropyOptions::kMean},
           {"sum", CrossEntropyOptions::kSum},
           {"none", CrossEntropyOptions::kNone}}) {
    const auto r = reduction;
    cs.Floats(absl::StrCat("cross_entropy_", name), [r](CaseBuilder& b, DType d) {
      // Targets in [-1, 10): -1 is the ignore_index here.
      b.Out(CrossEntropy(b.Input("logits", d, {3, 5, 10}, -4, 4),
                         b.Input("t", DType::kInt32, {3, 5}, -1, 10),
                         {.ignore_index = -1, .reduction = r}));
      b.Out(CrossEntropy(b.Input("wide", d, {4, 1000}, -4, 4),
                         b.Input("t64", DType::kInt64, {4}, 0, 1000), {.reduction = r}));
      b.Out(CrossEntropy(b.Input("ignored", d, {3, 4}),
                         b.Fixed("all_ignored", T<int64_t>({3}, {-100, -100, -100})),
                         {.reduction = r}));
    });
  }
}

void RandomAndFillCases(Cases& cs) {
  // Dropout masks must be bit-identical: odd sizes, both dtypes, backward.
  cs.Floats("dropout_training", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {3, 1001});
    b.Out(Dropout(x, 0.1));
    b.Out(Dropout(Scale(x, 2.0), 0.5));
    b.Out(Dropout(b.Input("tiny", d, {3}), 0.5));
  }, {.training = true, .exact = true});
  cs.Floats("dropout_eval", [](CaseBuilder& b, DType d) {
    b.Out(Dropout(b.Input("x", d, {7, 9}), 0.3));
  }, {.exact = true});
  // Folding off, so fill and arange run as device kernels.
  cs.Add("fill_and_arange", [](CaseBuilder& b) {
    Graph& g = b.graph();
    b.Out(Fill(g, {3, 5}, 1.5));
    b.Out(Fill(g, {4}, -2.25, DType::kFloat64));
    b.Out(Fill(g, {2, 2}, -7, DType::kInt32));
    b.Out(Fill(g, {5}, 1LL << 40, DType::kInt64));
    b.Out(Fill(g, {3}, 1, DType::kBool));
    b.Out(Arange(g, 0, 1000, 1, DType::kInt64));
    b.Out(Arange(g, 1, -1, -0.125, DType::kFloat64));
    b.Out(Arange(g, -3, 7, 0.7, DType::kFloat32));
    b.Out(Arange(g, 5, -5, -3, DType::kInt32));
  }).fold_constants = false;
}

void OptimizerCases(Cases& cs) {
  cs.Floats("sgd_update", [](CaseBuilder& b, DType d) {
    Graph& g = b.graph();
    const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.05));
    const Value scale = b.Fixed("scale", Tensor::Scalar<double>(0.7));
    for (bool nesterov : {false, true}) {
      const std::string s = nesterov ? "n" : "p";
      const Value p = g.Parameter("p" + s, {5, 77}, Initializer::Normal(0, 1), d);
      const Value v = g.Variable("v" + s, {5, 77}, Initializer::Zeros(), d);
      b.Out(SgdUpdate(p, b.Input("g" + s, d, {5, 77}), v, lr,
                      {.momentum = 0.9, .weight_decay = 0.01, .nesterov = nesterov},
                      nesterov ? scale : Value()));
      b.Out(p);
      b.Out(v);
    }
  }, {.gradients = false, .runs = 3});
  cs.Floats("adam_update", [](CaseBuilder& b, DType d) {
    Graph& g = b.graph();
    const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.01));
    const Value step = b.Fixed("step", Tensor::Scalar<double>(3));
    for (bool decoupled : {false, true}) {
      const std::string s = decoupled ? "w" : "a";
      const Value p = g.Parameter("p" + s, {3, 301}, Initializer::Normal(0, 1), d);
      const Value m = g.Variable("m" + s, {3, 301}, Initializer::Zeros(), d);
      const Value v = g.Variable("v" + s, {3, 301}, Initializer::Zeros(), d);
      b.Out(AdamUpdate(p, b.Input("g" + s, d, {3, 301}), m, v, lr, step,
                       {.weight_decay = 0.1, .decoupled = decoupled},
                       decoupled ? b.Fixed("scale", Tensor::Scalar<double>(0.5)) : Value()));
      b.Out(p);
      b.Out(m);
      b.Out(v);
    }
  }, {.gradients = false, .runs = 3});
  // A non-finite guard makes the update write nothing; a finite one is inert.
  cs.Floats("update_guard", [](CaseBuilder& b, DType d) {
    Graph& g = b.graph();
    const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.05));
    const Value step = b.Fixed("step", Tensor::Scalar<double>(2));
    int i = 0;
    for (double guard : {2.5, std::nan(""), -HUGE_VAL}) {
      const std::string s = std::to_string(i++);
      const Value gv = b.Fixed("guard" + s, Tensor::Scalar<double>(guard));
      const Value p = g.Parameter("p" + s, {4, 33}, Initializer::Normal(0, 1), d);
      const Value q = g.Parameter("q" + s, {4, 33}, Initializer::Normal(0, 1), d);
      const Value v = g.Variable("v" + s, {4, 33}, Initializer::Zeros(), d);
      const Value m = g.Variable("m" + s, {4, 33}, Initializer::Zeros(), d);
      const Value m2 = g.Variable("m2" + s, {4, 33}, Initializer::Zeros(), d);
      b.Out(SgdUpdate(p, b.Input("gp" + s, d, {4, 33}), v, lr, {.momentum = 0.9}, Value(), gv));
      b.Out(AdamUpdate(q, b.Input("gq" + s, d, {4, 33}), m, m2, lr, step, {}, Value(), gv));
      for (const Value& x : {p, v, q, m, m2}) b.Out(x);
    }
  }, {.gradients = false, .runs = 2});
}

// Data errors found on the device: same code, same message as the CPU's.
void ErrorCases(Cases& cs) {
  cs.Error("error_gather_index", [](CaseBuilder& b) {
    b.Out(Gather(b.Input("p", DType::kFloat32, {4, 3}),
                 b.Fixed("i", T<int32_t>({2, 3}, {0, 1, 7, 2, -1, 4}))));
  });
  cs.Error("error_scatter_add_index", [](CaseBuilder& b) {
    b.Out(ScatterAdd(b.Fixed("i", T<int64_t>({3}, {0, 5, 9})), b.Input("u", DType::kFloat64, {3}),
                     5));
  });
  cs.Error("error_integer_division_by_zero", [](CaseBuilder& b) {
    b.Out(Div(b.Input("a", DType::kInt64, {2, 3}, 1, 5), b.Fixed("b", T<int64_t>({3}, {2, 0, 0}))));
  });
  cs.Error("error_cast_out_of_range", [](CaseBuilder& b) {
    b.Out(Cast(b.Fixed("x", T<double>({4}, {1, 2, 3e9, NAN})), DType::kInt32));
  });
  cs.Error("error_cast_nan", [](CaseBuilder& b) {
    b.Out(Cast(b.Fixed("x", T<float>({3}, {NAN, 1, 2})), DType::kInt64));
  });
  cs.Error("error_valid_lens", [](CaseBuilder& b) {
    b.Out(MaskedSoftmax(b.Input("s", DType::kFloat32, {2, 3, 4}),
                        {.valid_lens = b.Fixed("lens", T<int64_t>({2, 3}, {1, 2, 3, 4, 5, -1}))}));
  });
  cs.Error("error_cross_entropy_target", [](CaseBuilder& b) {
    b.Out(CrossEntropy(b.Input("x", DType::kFloat32, {2, 2, 3}),
                       b.Fixed("t", T<int32_t>({2, 2}, {0, -100, 3, 1}))));
  });
  cs.Error("error_adam_step", [](CaseBuilder& b) {
    Graph& g = b.graph();
    const Value p = g.Parameter("p", {4}, Initializer::Ones());
    const Value m = g.Variable("m", {4}, Initializer::Zeros());
    const Value v = g.Variable("v", {4}, Initializer::Zeros());
    b.Out(AdamUpdate(p, b.Input("g", DType::kFloat32, {4}), m, v,
                     b.Fixed("lr", Tensor::Scalar<double>(0.1)),
                     b.Fixed("step", Tensor::Scalar<double>(0.5)), {}));
  });
  // A plan of the gradient alone: the backward op checks the targets itself.
  cs.Error("error_cross_entropy_grad_target", [](CaseBuilder& b) {
    const Value x = b.Input("x", DType::kFloat64, {3, 4});
    const Value loss = CrossEntropy(x, b.Fixed("t", T<int64_t>({3}, {1, 4, 0})));
    absl::StatusOr<std::vector<Value>> dx = Gradients(loss, {x});
    b.Out(dx.ok() ? (*dx)[0] : b.graph().Error(dx.status()));
  });
}

}  // namespace

const std::vector<CrossCase>& CudaCrossCases() {
  static const std::vector<CrossCase>* const cases = [] {
    Cases cs;
    ElementwiseCases(cs);
    ReduceCases(cs);
    ShapeCases(cs);
    MatMulCases(cs);
    NnCases(cs);
    RandomAndFillCases(cs);
    OptimizerCases(cs);
    ErrorCases(cs);
    EdgeCases(cs);
    GeluAndSamplingCases(cs);
    return new std::vector<CrossCase>(cs.Take());
  }();
  return *cases;
}

}  // namespace dagrad::testing
