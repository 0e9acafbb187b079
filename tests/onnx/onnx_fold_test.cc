// Values an ONNX op needs at import (a Reshape shape, Unsqueeze's axes)
// given as graph inputs: folded when the caller has them (ImportOnnxForValues,
// what `dagrad eval` does), refused with how to make them constant when it
// does not (importing for training); what the importer now takes as an
// input that it once needed known (Pow's exponent); and GatherElements,
// composed of Gather, trained through. Expected values are worked by hand
// from ONNX's definitions.

#ifdef DAGRAD_HAVE_ONNX

#include <string>
#include <vector>

#include "engine/io/file_io.h"
#include "ops/autodiff/autodiff.h"
#include "ops/onnx/run.h"
#include "ops/reduce.h"
#include "tests/onnx/support/onnx_test_model.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;

OnnxTestModel ReshapeByInput() {
  OnnxTestModel m;
  m.Input("x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  m.Input("shape", T<int64_t>({2}, {3, 2}));
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  return m;
}


// A shape computed at run time is named, and the message says how to make
// it a constant (what importing for training needs).
TEST(OnnxFold, ARunTimeShapeIsNamedWithHowToMakeItConstant) {
  OnnxTestModel m;
  m.Input("x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  m.Input("shape", T<int64_t>({2}, {3, 2}));
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  EXPECT_STATUS(m.Import().status(), absl::StatusCode::kUnimplemented,
                "the shape 'shape' must be known when importing (a Constant, an initializer, or "
                "shape arithmetic on the given input shapes); here it is computed at run time. "
                "Export with torch.onnx.export(..., do_constant_folding=True)");
}

// An exponent computed at run time is ONNX's Pow all the same: numpy's
// 2 ** 3 = 8 and 3 ** 0.5 = 1.7320508.
TEST(OnnxFold, ARunTimeExponentIsAnInput) {
  OnnxTestModel m;
  m.Input("x", T<float>({2}, {2, 3}));
  m.Input("e", T<float>({2}, {3, 0.5}));
  m.Node("Pow", {"x", "e"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(8.0f, FloatNear(1.7320508f, 1e-6f)));
}

// GatherElements (torch.gather) trains: data [[1, 2], [3, 4]] picked at
// [[0, 0], [1, 0]] along axis 1 is [[1, 1], [4, 3]], and the gradient of
// their sum counts each element's picks, [[2, 0], [1, 1]].
TEST(OnnxFold, GatherElementsPicksAndItsGradientCountsThePicks) {
  OnnxTestModel m;
  m.Initializer("data", T<float>({2, 2}, {1, 2, 3, 4}));
  m.Input("index", T<int64_t>({2, 2}, {0, 0, 1, 0}));
  OnnxTestModel::IntAttr(m.Node("GatherElements", {"data", "index"}, {"y"}), "axis", 1);
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(OnnxModel model, m.Import());
  ASSERT_EQ(model.parameters.size(), 1u);
  Value loss = Sum(model.outputs[0].value);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {model.parameters[0].value}));
  Executor exec(*model.graph);
  ASSERT_OK(model.LoadParameters(exec));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({model.outputs[0].value, grads[0]}));
  ASSERT_OK_AND_ASSIGN(Feeds feeds, OnnxFeeds(model, m.feeds()));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exec.Run(*plan, feeds));
  EXPECT_THAT(got[0].ToVector<float>(), ElementsAre(1, 1, 4, 3));
  EXPECT_THAT(got[1].ToVector<float>(), ElementsAre(2, 0, 1, 1));
}

// Fed its shape, the model is specialised to it: (2, 3) read as (3, 2)
// holds the same six values; the same shape again feeds, another one is
// refused, naming the input and why.
TEST(OnnxFold, AShapeInputIsFoldedForTheValueFed) {
  OnnxTestModel m = ReshapeByInput();
  const std::string path = NewTempDir("onnx_fold") + "/reshape_by_input.onnx";
  ASSERT_OK(WriteFileAtomically(path, m.Bytes()));
  OnnxInputValues values(m.feeds().begin(), m.feeds().end());
  ASSERT_OK_AND_ASSIGN(OnnxModel model, ImportOnnxForValues(path, values));
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.outputs[0].value.shape(), Shape({3, 2}));
  Executor exec(*model.graph);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({model.outputs[0].value}));
  ASSERT_OK_AND_ASSIGN(Feeds feeds, OnnxFeeds(model, values));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, exec.Run(*plan, feeds));
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
  values["shape"] = T<int64_t>({2}, {1, 6});
  EXPECT_STATUS(OnnxFeeds(model, values).status(), absl::StatusCode::kInvalidArgument,
                "input 'shape' is int64 (2,) with other values than the int64 (2,) the graph "
                "was specialised to");
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
