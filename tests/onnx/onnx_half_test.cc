// ONNX's FLOAT16 and BFLOAT16 element types in import and export: values
// by their bits (hand-worked), in raw_data and in int32_data (one 16-bit
// word per int32, as ONNX keeps them), and a Max over float16 inputs,
// which dagrad computes in float32.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/bfloat16.h"
#include "gtest/gtest.h"
#include "ops/onnx/onnx_tensor.h"
#include "tests/onnx/support/onnx_test_model.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Words returns a float16 or bfloat16 tensor (1-D) of the given bits.
template <typename Half>
Tensor Words(DType dtype, const std::vector<uint16_t>& bits) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(dtype, Shape({static_cast<int64_t>(bits.size())}));
  EXPECT_TRUE(t.ok());
  for (size_t i = 0; i < bits.size(); ++i) t->data<Half>()[i].bits = bits[i];
  return *t;
}

TEST(OnnxHalf, Float16FromInt32Words) {
  onnx::TensorProto proto;
  proto.set_name("h");
  proto.set_data_type(onnx::TensorProto::FLOAT16);
  proto.add_dims(3);
  for (int32_t word : {0x3c00, 0xc000, 0x7c00}) proto.add_int32_data(word);  // 1, -2, inf
  ASSERT_OK_AND_ASSIGN(Tensor t, TensorFromOnnx(proto, ""));
  ASSERT_EQ(t.dtype(), DType::kFloat16);
  EXPECT_EQ(Float16ToFloat(t.data<Float16>()[0]), 1.0f);
  EXPECT_EQ(Float16ToFloat(t.data<Float16>()[1]), -2.0f);
  EXPECT_EQ(Float16ToFloat(t.data<Float16>()[2]), std::numeric_limits<float>::infinity());
  proto.set_int32_data(1, 70000);
  EXPECT_STATUS(TensorFromOnnx(proto, "").status(), absl::StatusCode::kInvalidArgument,
                "'h': 16-bit value 70000 at 1");
}

TEST(OnnxHalf, BFloat16RoundTripsThroughRawData) {
  // 0x3f80 is 1, 0x4049 is 3.140625 (1.5703125 * 2), 0xc2f7 is -123.5.
  const Tensor t = Words<BFloat16>(DType::kBFloat16, {0x3f80, 0x4049, 0xc2f7});
  const onnx::TensorProto proto = TensorToOnnx(t, "b");
  EXPECT_EQ(proto.data_type(), onnx::TensorProto::BFLOAT16);
  ASSERT_OK_AND_ASSIGN(Tensor back, TensorFromOnnx(proto, ""));
  ASSERT_EQ(back.dtype(), DType::kBFloat16);
  const std::vector<float> want = {1.0f, 3.140625f, -123.5f};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(BFloat16ToFloat(back.data<BFloat16>()[i]), want[i]);
}

// Max and Min of float16 inputs (ONNX's test_max_float16) and a Cast of
// float16 to float.
TEST(OnnxHalf, MaxMinAndCastOfFloat16) {
  OnnxTestModel m;
  m.Input("a", Words<Float16>(DType::kFloat16, {0x3c00, 0xc000, 0x4200}));  // 1, -2, 3
  m.Input("b", Words<Float16>(DType::kFloat16, {0x3800, 0x4000, 0x4400}));  // 0.5, 2, 4
  m.Node("Max", {"a", "b"}, {"hi"});
  m.Node("Min", {"a", "b"}, {"lo"});
  OnnxTestModel::IntAttr(m.Node("Cast", {"hi"}, {"hi32"}), "to", onnx::TensorProto::FLOAT);
  m.Output("hi");
  m.Output("lo");
  m.Output("hi32");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  ASSERT_EQ(y[0].dtype(), DType::kFloat16);
  const std::vector<float> hi = {1, 2, 4}, lo = {0.5, -2, 3};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Float16ToFloat(y[0].data<Float16>()[i]), hi[i]);
    EXPECT_EQ(Float16ToFloat(y[1].data<Float16>()[i]), lo[i]);
  }
  ExpectAllClose(y[2], {1, 2, 4}, 0, 0, "hi32");
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
