// 16-bit floats in checkpoints: a bfloat16 variable is saved as BF16 with
// checksums over its stored bytes; BF16 and F16 tensors load into bfloat16,
// float16, float32 and float64 variables, widened exactly, and nothing
// loads where it would be rounded; PyTorch's bfloat16 and float16 files
// load (tools/goldens/bf16.py wrote one), and dagrad's load in PyTorch
// (a round trip through /usr/bin/python3, skipped without it).

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/bfloat16.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

std::vector<uint16_t> BitsOf(const Tensor& t) {
  const auto* p = static_cast<const uint16_t*>(t.raw_data());
  return std::vector<uint16_t>(p, p + t.num_elements());
}

// 1/3, -2, 2^-133 (the least subnormal), -0 in bfloat16.
Tensor Weights() {
  return T<BFloat16>({2, 2}, {{0x3eab}, {0xc000}, {0x0001}, {0x8000}});
}

TEST(BFloat16Checkpoint, ABFloat16VariableIsSavedAsBF16WithChecksums) {
  Graph g;
  const Value w = g.Parameter("w", {2, 2}, Initializer::Zeros(), DType::kBFloat16);
  Executor exec(g);
  ASSERT_OK(exec.Assign(w, Weights()));
  const std::string path = testing::NewTempDir("bf16") + "/bf16.safetensors";
  ASSERT_OK(SaveVariables(exec, {w}, {}, path));
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(path));
  EXPECT_NE(bytes.find(R"("w":{"dtype":"BF16","shape":[2,2])"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadCheckpoint(path));
  EXPECT_THAT(BitsOf(*f.Find("w")), ::testing::ElementsAre(0x3eab, 0xc000, 0x0001, 0x8000));
  // The checksum covers the bytes as stored: one changed bit is found.
  bytes[bytes.size() - 1] ^= 0x01;
  EXPECT_STATUS(ParseCheckpoint(bytes).status(), absl::StatusCode::kDataLoss,
                "tensor 'w': data fails its checksum");
}

TEST(BFloat16Checkpoint, SixteenBitTensorsLoadWidenedAndNothingLoadsRounded) {
  SafetensorsFile file;
  file.tensors.emplace_back("w", Weights());
  file.tensors.emplace_back("h", T<Float16>({2}, {{0x3555}, {0xfc00}}));  // 0.33325195, -inf
  Graph g;
  const Value w32 = g.Parameter("w", {2, 2}, Initializer::Ones());
  const Value h64 = g.Parameter("h", {2}, Initializer::Ones(), DType::kFloat64);
  Executor exec(g);
  ASSERT_OK(AssignVariables(exec, {w32, h64}, file, "'file'"));
  ASSERT_OK_AND_ASSIGN(Tensor w, exec.Read(w32));
  ASSERT_OK_AND_ASSIGN(Tensor h, exec.Read(h64));
  const std::vector<float> wv = w.ToVector<float>();
  EXPECT_EQ(wv[0], 0.333984375f);
  EXPECT_EQ(wv[1], -2.0f);
  EXPECT_EQ(wv[2], std::ldexp(1.0f, -133));
  EXPECT_TRUE(wv[3] == 0 && std::signbit(wv[3]));
  EXPECT_THAT(h.ToVector<double>(),
              ::testing::ElementsAre(0.333251953125, -std::numeric_limits<double>::infinity()));
  // Into bfloat16 variables, as they are.
  Graph g16;
  const Value w16 = g16.Parameter("w", {2, 2}, Initializer::Ones(), DType::kBFloat16);
  Executor exec16(g16);
  ASSERT_OK(AssignVariables(exec16, {w16}, file, "'file'", {.strict = false}));
  ASSERT_OK_AND_ASSIGN(Tensor back, exec16.Read(w16));
  EXPECT_THAT(BitsOf(back), ::testing::ElementsAre(0x3eab, 0xc000, 0x0001, 0x8000));
  // float32 into bfloat16 would round; float16 into bfloat16 too.
  SafetensorsFile wide;
  wide.tensors.emplace_back("w", T<float>({2, 2}, {1, 2, 3, 4}));
  wide.tensors.emplace_back("h", T<Float16>({2}, {{0x3555}, {0xfc00}}));
  Graph g2;
  const Value w2 = g2.Parameter("w", {2, 2}, Initializer::Ones(), DType::kBFloat16);
  const Value h2 = g2.Parameter("h", {2}, Initializer::Ones(), DType::kBFloat16);
  Executor exec2(g2);
  EXPECT_STATUS(AssignVariables(exec2, {w2, h2}, wide, "'wide'"),
                absl::StatusCode::kInvalidArgument,
                "w: checkpoint has float32 (2, 2), model expects bfloat16 (2, 2); h: checkpoint "
                "has float16 (2,), model expects bfloat16 (2,)");
}

std::string TorchFile() {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/torch_bf16.safetensors");
}

// PyTorch's bytes (tools/goldens/bf16.py) load as the values torch gave
// beside them in float32.
TEST(BFloat16Checkpoint, PyTorchsBFloat16AndFloat16TensorsLoad) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadCheckpoint(TorchFile()));
  Graph g;
  const Value w = g.Parameter("w", {3, 4}, Initializer::Zeros());
  const Value h = g.Parameter("h", {5}, Initializer::Zeros());
  Executor exec(g);
  ASSERT_OK(AssignVariables(exec, {w, h}, f, "torch_bf16", {.strict = false}));
  for (const auto& [v, name] : {std::pair{w, "w_f32"}, std::pair{h, "h_f32"}}) {
    ASSERT_OK_AND_ASSIGN(Tensor got, exec.Read(v));
    const Tensor* want = f.Find(name);
    ASSERT_NE(want, nullptr);
    EXPECT_EQ(std::memcmp(got.raw_data(), want->raw_data(), want->nbytes()), 0) << name;
  }
  EXPECT_EQ(f.Find("w")->data<BFloat16>()[2].bits, 0x0001);  // 2^-133, as written
  EXPECT_EQ(f.Find("h")->data<Float16>()[0].bits, 0x0001);   // 2^-24
}

// dagrad writes bfloat16 and float16; PyTorch reads them and writes back
// their float32 values and 2 w in bfloat16.
TEST(BFloat16Checkpoint, PyTorchReadsDagradsFilesAndDagradReadsItsAnswer) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no PyTorch at /usr/bin/python3";
  }
  Graph g;
  const Value w = g.Parameter("w", {2, 2}, Initializer::Zeros(), DType::kBFloat16);
  const Value h = g.Variable("h", {2}, Initializer::Constant(1.0 / 3), DType::kFloat16);
  Executor exec(g);
  ASSERT_OK(exec.Assign(w, Weights()));
  const std::string dir = testing::NewTempDir("bf16_torch");
  ASSERT_OK(SaveVariables(exec, {w, h}, {{"note", "for torch"}}, dir + "/to_torch.safetensors"));
  const std::string script = std::string(DAGRAD_TEST_DATA_DIR) + "/../../tools/goldens/bf16.py";
  ASSERT_EQ(std::system(absl::StrCat("/usr/bin/python3 ", script, " --roundtrip ", dir,
                                     "/to_torch.safetensors ", dir, "/from_torch.safetensors")
                            .c_str()),
            0);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile back, ReadCheckpoint(dir + "/from_torch.safetensors"));
  EXPECT_THAT(BitsOf(*back.Find("w")), ::testing::ElementsAre(0x3eab, 0xc000, 0x0001, 0x8000));
  EXPECT_THAT(BitsOf(*back.Find("h")), ::testing::ElementsAre(0x3555, 0x3555));
  const std::vector<float> w32 = back.Find("w_f32")->ToVector<float>();
  EXPECT_EQ(w32[0], 0.333984375f);
  EXPECT_EQ(w32[2], std::ldexp(1.0f, -133));
  EXPECT_THAT(back.Find("h_f32")->ToVector<float>(), ::testing::Each(0.333251953125f));
  // 2 w: exponents up by one, the least subnormal doubled.
  EXPECT_THAT(BitsOf(*back.Find("w_twice")), ::testing::ElementsAre(0x3f2b, 0xc080, 0x0002, 0x8000));
}

}  // namespace
}  // namespace dagrad::testing
