// The values the engine headers' examples promise in their comments
// (`a.GetInt("axis");  // -1`): the examples themselves run as
// HeaderExample.engine_*, extracted from the headers; these check what they
// return.

#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "engine/attrs.h"
#include "engine/bfloat16.h"
#include "engine/checked_math.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/feed_conversion.h"
#include "engine/graph.h"
#include "engine/initializer.h"
#include "engine/io/dir_lock.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/philox.h"
#include "engine/random_tensor.h"
#include "engine/plan/host_memory.h"
#include "engine/plan/memory_budget.h"
#include "engine/shape.h"
#include "engine/tensor.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

TEST(DocumentedValues, AttrsDTypesAndFloats) {
  Attrs a = Attrs().Int("axis", -1).Bool("keepdims", true);
  EXPECT_EQ(a.GetInt("axis"), -1);
  EXPECT_EQ(a.ToString(), "axis=-1, keepdims=true");
  EXPECT_TRUE(absl::IsInvalidArgument(CheckValueFits(3e9, DType::kInt32, "value")));
  EXPECT_EQ(ShortestDecimal(2147483648.0), "2147483648");
  EXPECT_EQ(ShortestDecimal(0.1), "0.1");
  EXPECT_EQ(ShortestDecimal(1.0000001), "1.0000001");
  EXPECT_EQ(ShortestDecimal(1e20f), "1e+20");
  EXPECT_EQ(ShortestDecimal(5e-324), "5e-324");
  EXPECT_EQ(ShortestDecimal(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_STATUS(CheckValueFits(1.0000001, DType::kBool, "value"),
                absl::StatusCode::kInvalidArgument, "value 1.0000001 is not 0 or 1 (dtype bool)");
  EXPECT_STATUS(CheckValueFits(2147483647.5, DType::kInt32, "value"),
                absl::StatusCode::kInvalidArgument, "value 2147483647.5 is not an integer");
  EXPECT_TRUE(absl::IsInvalidArgument(CheckIntegerFits(int64_t{1} << 40, DType::kInt32, "value")));
  EXPECT_EQ(GradientDType(DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(DTypeBit(DType::kBFloat16) | DTypeBit(DType::kFloat16), kReducedFloatBits);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.00390625f)), 1.0f);
  EXPECT_TRUE(std::isinf(Float16ToFloat(FloatToFloat16(70000.0f))));
  EXPECT_EQ(BFloat16ToFloat(ConvertElement<BFloat16>(int64_t{257})), 256.0f);
  EXPECT_TRUE(absl::IsInvalidArgument(Initializer::Constant(3e9).Validate({2}, DType::kInt32)));
}

// A host program may set a locale whose decimal point is a comma; the
// shortest decimal is still shortest (strtod read "0.1" there as 0).
TEST(DocumentedValues, ShortestDecimalIgnoresTheLocale) {
  const std::string saved = std::setlocale(LC_NUMERIC, nullptr);
  const char* comma = nullptr;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
    if (std::setlocale(LC_NUMERIC, name) != nullptr) {
      comma = name;
      break;
    }
  }
  if (comma == nullptr) GTEST_SKIP() << "no locale with a decimal comma is installed";
  const std::string d = ShortestDecimal(0.1), f = ShortestDecimal(0.1f);
  const std::string i = ShortestDecimal(2.5);
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_EQ(d, "0.1") << comma;
  EXPECT_EQ(f, "0.1") << comma;
  EXPECT_EQ(i, "2.5") << comma;
}

TEST(DocumentedValues, ShapesSizesAndRandomBits) {
  Shape s({2, 3, 4});
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.ToString(), "(2, 3, 4)");
  std::optional<int64_t> n = CheckedMul(int64_t{1} << 31, int64_t{1} << 31);
  EXPECT_EQ(n, int64_t{1} << 62);
  EXPECT_EQ(CheckedBytes(*n, 4), std::nullopt);
  EXPECT_EQ(SliceLength(10, 0, INT64_MAX, INT64_MAX), 1);
  const float u = UniformFromBits(Philox4x32_10({1, 2, 3, 4}, 5, 6).v[0]);
  EXPECT_GE(u, 0);
  EXPECT_LT(u, 1);
}

TEST(DocumentedValues, Utf8) {
  const std::string s = "caf\xc3\xa9 \xff";
  int invalid_bytes = 0;
  for (size_t pos = 0; pos < s.size();) invalid_bytes += NextCodePoint(s, pos) < 0;
  EXPECT_EQ(invalid_bytes, 1);
  size_t pos = 0;
  EXPECT_EQ(NextCodePoint("\xc3\xa9!", pos), 0xE9);
  EXPECT_EQ(pos, 2u);
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));
  EXPECT_EQ(PrintableText("a\nb\xff", true), "'a\\nb\\xff'");
  EXPECT_EQ(JsonErrorText("[json.exception.parse_error.101] parse error at line 2"),
            "parse error at line 2");
  EXPECT_EQ(TerminalText("caf\xc3\xa9\r\n\xff"), "caf\xc3\xa9\r\n\\xff");
  // Tabs stay; a C0 control, DEL, a C1 control (two bytes, shown as one), a
  // lone continuation byte and a truncated sequence are escaped.
  EXPECT_EQ(TerminalText("\t\x01\x7f\xc2\x85\x80\xe2\x82"), "\t\\x01\\x7f\\x85\\x80\\xe2\\x82");
  EXPECT_EQ(IncompleteTail("a\xc3"), 1u);
  EXPECT_EQ(IncompleteTail("a\xe2\x82"), 2u);
  EXPECT_EQ(IncompleteTail("a\xe2\x82\xac"), 0u);  // the euro sign, whole
  EXPECT_EQ(IncompleteTail("a\x80"), 0u);            // no lead byte: nothing to wait for
  EXPECT_EQ(IncompleteTail("\xc3\xa9"), 0u);
}

// TerminalStream prints each piece as it comes, holding back a sequence
// whose last byte has not come, and escapes what Flush finds incomplete.
TEST(DocumentedValues, TerminalStream) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  auto written = [file] {
    std::string all(static_cast<size_t>(std::ftell(file)), '\0');
    std::rewind(file);
    all.resize(std::fread(all.data(), 1, all.size(), file));
    std::fseek(file, 0, SEEK_END);  // writing after reading needs a seek
    return all;
  };
  TerminalStream out(file);
  out.Write("caf\xc3");
  EXPECT_EQ(written(), "caf");
  out.Write("\xa9 \xe2\x82");
  EXPECT_EQ(written(), "caf\xc3\xa9 ");
  out.Flush();
  EXPECT_EQ(written(), "caf\xc3\xa9 \\xe2\\x82");
  std::fclose(file);
}

TEST(DocumentedValues, ParametersInitialisedByRule) {
  Graph g;
  Value w = g.Parameter("w", {4, 4}, Initializer::XavierUniform());
  { Graph::Scope fc(g, "fc"); g.Parameter("bias", {4}, Initializer::Ones()); }
  Executor exec(g);
  ParameterRule matrices = [](const std::string&, const Value& p) {
    return p.rank() >= 2 ? std::optional(Initializer::Normal(0.0, 0.02)) : std::nullopt;
  };
  ASSERT_OK_AND_ASSIGN(int n, InitParametersBy(exec, g.Parameters(), matrices));
  EXPECT_EQ(n, 1);
  ASSERT_OK(InitParameter(exec, w, Initializer::TruncatedNormal(0.0, 0.02)));
  ASSERT_OK_AND_ASSIGN(Tensor value, exec.Read(w));
  for (float v : value.ToVector<float>()) EXPECT_LE(std::abs(v), 0.2f);   // within 10 std
}

TEST(DocumentedValues, FeedsConvertedExactly) {
  Graph g;
  Value step = g.Input("step", DType::kFloat64, {});
  const Feeds feeds = {{step, Tensor::Scalar(7)}};
  ASSERT_OK_AND_ASSIGN(std::optional<Feeds> converted, ExactFloatFeeds(g, feeds));
  const Feeds& used = converted ? *converted : feeds;
  EXPECT_EQ(used[0].second.dtype(), DType::kFloat64);
  EXPECT_EQ(used[0].second.data<double>()[0], 7.0);
}

TEST(DocumentedValues, TensorsAndFloatsInThem) {
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(x.data<float>()[0], 1);
  EXPECT_EQ(Tensor::Scalar<int64_t>(3).data<int64_t>()[0], 3);
  ASSERT_OK_AND_ASSIGN(Tensor t, ConvertFloats(x, DType::kBFloat16));
  ASSERT_OK_AND_ASSIGN(Tensor wide, ConvertFloats(t, DType::kFloat32));
  EXPECT_EQ(wide.ToVector<float>(), x.ToVector<float>());
  EXPECT_EQ(FloatAt(t.raw_data(), t.dtype(), 0), 1);
  EXPECT_LT(FirstNonFinite(t.raw_data(), t.dtype(), t.num_elements()), 0);
}

TEST(DocumentedValues, FilesAndLocks) {
  const std::string dir = testing::NewTempDir("documented_values_files");
  std::vector<std::string> removed;
  ASSERT_OK_AND_ASSIGN(DirectoryLock lock, LockDirectory(dir, &removed));
  EXPECT_EQ(LockDirectory(dir, &removed).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_OK(WriteFileAtomically(dir + "/w.bin", "weights"));
  ASSERT_OK_AND_ASSIGN(FileInFolder file, FileInFolder::Open(dir, "w.bin"));
  std::string head(file.size(), '\0');
  ASSERT_OK(file.ReadAt(0, head.size(), head.data()));
  EXPECT_EQ(head, "weights");
  EXPECT_TRUE(absl::StartsWith(TemporaryPathFor("/tmp/g.svg"), "/tmp/g.svg.tmp."));
}

TEST(DocumentedValues, MemoryBudgets) {
  EXPECT_TRUE(HostMemoryAvailable().has_value());   // Linux has /proc/meminfo
  const int64_t arena_bytes = 1 << 20, scores_bytes = 1 << 19;
  MemoryBudget need;
  need.Add("parameters", "variable 'w' float32 (8192, 8192)", 268435456);
  need.Add("arena", arena_bytes);
  need.AddPart("matmul 'scores' float32 (64, 4, 512, 512)", scores_bytes);
  ASSERT_OK(need.CheckFits({.bytes = int64_t{1} << 30, .source = "a limit"}, "compiling"));
  EXPECT_EQ(need.total(), 268435456 + arena_bytes);
  const absl::Status status =
      need.CheckFits({.bytes = 1000, .source = "a small limit"}, "compiling");
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "matmul 'scores'")) << status;
}

}  // namespace
}  // namespace dagrad
