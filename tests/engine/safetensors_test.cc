// safetensors I/O: files written by the reference numpy writer
// (tools/goldens/safetensors_fixtures.py) read with exact values, dagrad's
// writer byte-identical to the reference's, round trips, a table of
// malformed files each with its own error, every truncation and byte
// corruption of a valid file, and atomic replacement on disk.

#include "engine/io/safetensors.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/", name, ".safetensors");
}

std::string FixtureBytes(const std::string& name) {
  auto bytes = ReadFile(Fixture(name));
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

// MakeFile assembles a file from a header (not padded) and a data buffer.
std::string MakeFile(absl::string_view header, absl::string_view data = "") {
  const uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return absl::StrCat(out, header, data);
}

std::string LengthOnly(uint64_t n) { return std::string(reinterpret_cast<const char*>(&n), 8); }

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        names.push_back(e->d_name);
      }
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The tensors of tools/goldens/safetensors_fixtures.py's "all_dtypes",
// restated by hand.
SafetensorsFile AllDTypes() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::vector<float> cube(24);
  for (int i = 0; i < 24; ++i) cube[i] = i / 8.0f;
  SafetensorsFile f;
  f.tensors = {
      {"f32", T<float>({2, 3}, {0.5f, -1.25f, 3.0f, kInf, -kInf, -0.0f})},
      {"f64", T<double>({3}, {1.0 / 3.0, -std::pow(2.0, -1074), 1e300})},
      {"i32", T<int32_t>({2, 2}, {std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max(), 0, -1})},
      {"i64", T<int64_t>({3}, {std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), 42})},
      {"mask", T<bool>({1, 3}, {true, false, true})},
      {"empty", *Tensor::Zeros(DType::kFloat32, {0, 4})},
      {"cube", T<float>({2, 3, 4}, cube)},
  };
  f.metadata = {{"format", "pt"}, {"note", "h\xc3\xa9llo \"quoted\"\n\ttab\\"}};
  return f;
}

// ExpectSameBits compares two tensors' dtype, shape and bytes (so -0.0 and
// 0.0 differ, and the denormal survives).
void ExpectSameBits(const Tensor* got, const Tensor& want, const std::string& name) {
  ASSERT_NE(got, nullptr) << name;
  EXPECT_EQ(got->TypeString(), want.TypeString()) << name;
  ASSERT_EQ(got->nbytes(), want.nbytes()) << name;
  EXPECT_EQ(std::memcmp(got->raw_data(), want.raw_data(), want.nbytes()), 0) << name;
}

TEST(Safetensors, ReadsTheReferenceWritersFile) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadSafetensors(Fixture("all_dtypes")));
  std::vector<std::string> names;
  for (const auto& [name, t] : f.tensors) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("cube", "empty", "f32", "f64", "i32", "i64", "mask"));
  const SafetensorsFile want = AllDTypes();
  for (const auto& [name, t] : want.tensors) ExpectSameBits(f.Find(name), t, name);
  // Spot checks against literal values, independent of AllDTypes().
  EXPECT_EQ(f.Find("f32")->data<float>()[3], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(f.Find("f32")->data<float>()[5]));
  EXPECT_EQ(f.Find("f64")->data<double>()[1], -4.9406564584124654e-324);
  EXPECT_EQ(f.Find("i64")->data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(f.Find("cube")->data<float>()[23], 2.875f);
  EXPECT_THAT(f.Find("mask")->ToVector<bool>(), ElementsAre(true, false, true));
  EXPECT_EQ(f.Find("empty")->shape(), Shape({0, 4}));
  EXPECT_EQ(f.Find("missing"), nullptr);
  EXPECT_EQ(f.metadata, want.metadata);
}

TEST(Safetensors, ReadsEscapedAndNonAsciiNames) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadSafetensors(Fixture("unicode_names")));
  const std::pair<const char*, float> want[] = {{"poids.\xc3\xa9", 1.0f},
                                                {"\xe5\xb1\x82.0", 2.0f},
                                                {"smile\xf0\x9f\x99\x82", 3.0f},
                                                {"q\"uote\\slash\x01", 4.0f}};
  ASSERT_EQ(f.tensors.size(), 4u);
  for (const auto& [name, value] : want) {
    ASSERT_NE(f.Find(name), nullptr) << name;
    EXPECT_EQ(f.Find(name)->data<float>()[0], value) << name;
  }
  EXPECT_TRUE(f.metadata.empty());
}

TEST(Safetensors, WriterMatchesTheReferenceWriterByteForByte) {
  SafetensorsFile unicode;
  unicode.tensors = {{"\xe5\xb1\x82.0", T<float>({1}, {2})},
                     {"smile\xf0\x9f\x99\x82", T<float>({1}, {3})},
                     {"q\"uote\\slash\x01", T<float>({1}, {4})},
                     {"poids.\xc3\xa9", T<float>({1}, {1})}};
  SafetensorsFile metadata_only;
  metadata_only.metadata["step"] = "100";
  SafetensorsFile state_dict;
  state_dict.tensors = {
      {"head.weight", T<float>({2, 4}, {-4, -3, -2, -1, 0, 1, 2, 3})},
      {"encoder.layers.0.linear1.weight",
       T<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})},
      {"head.bias", T<float>({2}, {0.25, -0.25})},
      {"encoder.layers.0.linear1.bias", T<float>({4}, {0.5, -0.5, 1.5, -1.5})}};
  state_dict.metadata = {{"layers", "1"}, {"dim", "3"}};
  const std::pair<const char*, SafetensorsFile> cases[] = {
      {"all_dtypes", AllDTypes()},
      {"unicode_names", unicode},
      {"empty", SafetensorsFile()},
      {"metadata_only", metadata_only},
      {"state_dict", state_dict}};
  for (const auto& [name, file] : cases) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeSafetensors(file));
    EXPECT_EQ(bytes, FixtureBytes(name)) << name;
  }
}

TEST(Safetensors, RoundTripsEveryDTypeAndARankZeroTensor) {
  SafetensorsFile f = AllDTypes();
  f.tensors.emplace_back("scalar", Tensor::Scalar<double>(7.5));
  f.tensors.emplace_back("int_scalar", Tensor::Scalar<int64_t>(-3));
  f.metadata[""] = "";
  const std::string dir = NewTempDir("safetensors");
  const std::string path = dir + "/round trip.safetensors";
  ASSERT_OK(WriteSafetensors(path, f));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile back, ReadSafetensors(path));
  EXPECT_EQ(back.tensors.size(), f.tensors.size());
  for (const auto& [name, t] : f.tensors) ExpectSameBits(back.Find(name), t, name);
  EXPECT_EQ(back.Find("scalar")->shape().rank(), 0);
  EXPECT_EQ(back.metadata, f.metadata);
  EXPECT_THAT(ListDir(dir), ElementsAre("round trip.safetensors"));
}

TEST(Safetensors, RankZeroHeaderWrittenByHand) {
  // What the reference writer cannot produce (it stores shape () as (1,)):
  // a scalar with "shape": [].
  const std::string file =
      MakeFile(R"({"s":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
               std::string("\x05\0\0\0", 4));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ParseSafetensors(file));
  ASSERT_NE(f.Find("s"), nullptr);
  EXPECT_EQ(f.Find("s")->shape(), Shape());
  EXPECT_EQ(f.Find("s")->data<int32_t>()[0], 5);
}

// The header's checks ran in a parser callback that walked the whole
// enclosing object at each object's end: 40,000 tensors took minutes, a
// 100 MB header hours. 200,000 (empty ones, 13 MB of header) now parse in
// about a second.
TEST(Safetensors, AHeaderOfManyTensorsParsesInLinearTime) {
  constexpr int kTensors = 200000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i) {
    absl::StrAppend(&header, i == 0 ? "" : ",", "\"t", i,
                    "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}");
  }
  header += "}";
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ParseSafetensors(MakeFile(header)));
  EXPECT_EQ(f.tensors.size(), static_cast<size_t>(kTensors));
  EXPECT_EQ(f.Find("t199999")->shape(), Shape({0}));
}

TEST(Safetensors, AcceptsUnknownFieldsAndWhitespace) {
  // Fields a newer writer may add are ignored, like the reference reader;
  // JSON whitespace (including the writers' trailing padding) is fine.
  const std::string file = MakeFile(
      "{ \"a\" : {\"shape\":[1], \"extra\":{\"x\":[1,2]}, \"dtype\":\"BOOL\",\n"
      "\"data_offsets\":[0,1]} }   \t\n",
      std::string(1, '\1'));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ParseSafetensors(file));
  EXPECT_THAT(f.Find("a")->ToVector<bool>(), ElementsAre(true));
}

TEST(Safetensors, UnsupportedDTypesAreUnimplementedAndNamed) {
  EXPECT_STATUS(ReadSafetensors(Fixture("u8")).status(), absl::StatusCode::kUnimplemented,
                "u8.safetensors': tensor 'bytes': dtype 'U8' is not supported by dagrad "
                "(dagrad reads F32, F64, I32, I64, BOOL, BF16 and F16)");
}

// numpy wrote the file (tools/goldens/safetensors_fixtures.py): float16 1
// and 2 are 0x3c00 and 0x4000.
TEST(Safetensors, ReadsFloat16) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile f, ReadSafetensors(Fixture("f16")));
  const Tensor* half = f.Find("half");
  ASSERT_NE(half, nullptr);
  ASSERT_EQ(half->TypeString(), "float16 (2,)");
  EXPECT_EQ(half->data<Float16>()[0].bits, 0x3c00);
  EXPECT_EQ(half->data<Float16>()[1].bits, 0x4000);
}

struct Malformed {
  const char* what;
  std::string bytes;
  absl::StatusCode code;
  const char* message;
};

std::vector<Malformed> MalformedFiles() {
  const auto f32 = [](const std::string& name, const std::string& shape,
                      const std::string& offsets) {
    return absl::StrCat("\"", name, "\":{\"dtype\":\"F32\",\"shape\":", shape,
                        ",\"data_offsets\":", offsets, "}");
  };
  const auto one = [&](const std::string& entry, size_t data_bytes) {
    return MakeFile(absl::StrCat("{", entry, "}"), std::string(data_bytes, '\0'));
  };
  const std::string a4 = f32("a", "[1]", "[0,4]");
  std::string deep = "{\"a\":";
  for (int i = 0; i < 20; ++i) deep += "[";
  for (int i = 0; i < 20; ++i) deep += "]";
  deep += "}";
  std::string long_shape = "[1";
  for (int i = 0; i < 2000; ++i) long_shape += ",1";
  long_shape += "]";
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  return {
      {"empty file", "", kInvalid, "file is 0 bytes, too short for the 8-byte header length"},
      {"seven bytes", std::string(7, '\0'), kInvalid, "file is 7 bytes, too short"},
      {"huge header length", LengthOnly(uint64_t{1} << 63) + "{}", kInvalid,
       "header length 9223372036854775808 exceeds the limit of 100000000 bytes"},
      {"header just over the cap", LengthOnly(100'000'001), kInvalid,
       "header length 100000001 exceeds the limit"},
      {"header past the end", LengthOnly(100) + "{}", kInvalid,
       "header length 100 runs past the end of the 10-byte file"},
      {"zero-length header", LengthOnly(0), kInvalid, "header does not begin with '{'"},
      {"header is an array", MakeFile("[]"), kInvalid, "header does not begin with '{'"},
      {"unterminated object", MakeFile("{"), kInvalid,
       "header is not valid JSON (near file byte 9)"},
      {"missing value", MakeFile("{\"a\":}"), kInvalid, "header is not valid JSON"},
      {"trailing garbage", MakeFile("{} x"), kInvalid, "header is not valid JSON"},
      {"invalid UTF-8", MakeFile("{\"\xff\":1}"), kInvalid, "ill-formed UTF-8 byte"},
      {"lone surrogate", MakeFile("{\"\\ud800\":1}"), kInvalid, "surrogate"},
      {"raw control character", MakeFile("{\"a\nb\":1}"), kInvalid, "control character"},
      {"duplicate tensor", MakeFile(absl::StrCat("{", a4, ",", a4, "}"), std::string(4, '\0')),
       kInvalid, "header has the key 'a' twice"},
      {"duplicate field",
       MakeFile(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})"),
       kInvalid, "header has the key 'dtype' twice (in 'a')"},
      {"duplicate metadata key", MakeFile(R"({"__metadata__":{"k":"1","k":"2"}})"), kInvalid,
       "the key 'k' twice (in '__metadata__')"},
      {"nesting too deep", MakeFile(deep), kInvalid, "header nests deeper than 16 levels"},
      {"array too long", one(f32("a", long_shape, "[0,4]"), 4), kInvalid,
       "header has an array longer than 1024 elements (in 'a'/'shape')"},
      {"entry not an object", MakeFile(R"({"a":[1]})"), kInvalid,
       "tensor 'a': entry is an array, not an object"},
      {"missing dtype", MakeFile(R"({"a":{"shape":[1],"data_offsets":[0,4]}})"), kInvalid,
       "tensor 'a': missing \"dtype\""},
      {"dtype not a string", MakeFile(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})"),
       kInvalid, "tensor 'a': \"dtype\" is an integer, not a string"},
      {"unknown dtype", MakeFile(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})"),
       kInvalid, "tensor 'a': dtype 'F33' is not a safetensors dtype"},
      {"unsupported dtype", MakeFile(R"({"b":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}})"),
       absl::StatusCode::kUnimplemented, "tensor 'b': dtype 'I16' is not supported by dagrad"},
      {"missing shape", MakeFile(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})"), kInvalid,
       "tensor 'a': missing \"shape\""},
      {"shape not an array", one(f32("a", "4", "[0,4]"), 4), kInvalid,
       "tensor 'a': \"shape\" is an integer, not an array"},
      {"negative dimension", one(f32("a", "[2,-1]", "[0,4]"), 4), kInvalid,
       "tensor 'a': \"shape\" [2,-1]: dimension 1 -1 is negative"},
      {"fractional dimension", one(f32("a", "[2.5]", "[0,4]"), 4), kInvalid,
       "dimension 0 2.5 is not an integer"},
      {"string dimension", one(f32("a", "[\"2\"]", "[0,4]"), 4), kInvalid,
       "dimension 0 is a string, not an integer"},
      {"dimension above int64", one(f32("a", "[9223372036854775808]", "[0,4]"), 4), kInvalid,
       "dimension 0 9223372036854775808 is too large"},
      {"dimension above uint64", one(f32("a", "[18446744073709551616]", "[0,4]"), 4), kInvalid,
       "is not an integer"},
      {"element count overflows", one(f32("a", "[4294967296,4294967296]", "[0,4]"), 4), kInvalid,
       "tensor 'a': \"shape\": element count of shape (4294967296, 4294967296) overflows int64"},
      {"missing data_offsets", MakeFile(R"({"a":{"dtype":"F32","shape":[1]}})"), kInvalid,
       "tensor 'a': missing \"data_offsets\""},
      {"one offset", one(f32("a", "[1]", "[0]"), 4), kInvalid,
       "\"data_offsets\" must be [begin, end], got [0]"},
      {"offsets an object", one(f32("a", "[1]", "{\"b\":0}"), 4), kInvalid,
       "must be [begin, end], got an object"},
      {"minus zero is zero", one(f32("a", "[1]", "[-0,0]"), 4), kInvalid,
       "data_offsets [0, 0] hold 0 bytes, but F32 (1,) needs 4"},
      {"negative offset", one(f32("a", "[1]", "[-4,0]"), 4), kInvalid,
       "\"data_offsets\" [-4,0]: begin -4 is negative"},
      {"begin after end", one(f32("a", "[0]", "[4,0]"), 4), kInvalid,
       "tensor 'a': data_offsets [4, 0]: begin is after end"},
      {"past the buffer", one(f32("a", "[1]", "[0,4]"), 2), kInvalid,
       "tensor 'a': data_offsets [0, 4] extend past the data buffer of 2 bytes"},
      {"empty tensor past the buffer", one(f32("a", "[0]", "[16,16]"), 0), kInvalid,
       "data_offsets [16, 16] extend past the data buffer of 0 bytes"},
      {"offset near uint64 max",
       one(f32("a", "[1]", "[18446744073709551612,18446744073709551615]"), 4), kInvalid,
       "extend past the data buffer of 4 bytes"},
      {"wrong byte length", one(f32("a", "[2]", "[0,4]"), 4), kInvalid,
       "tensor 'a': data_offsets [0, 4] hold 4 bytes, but F32 (2,) needs 8"},
      {"overlapping tensors",
       MakeFile(absl::StrCat("{", f32("a", "[2]", "[0,8]"), ",", f32("b", "[2]", "[4,12]"), "}"),
                std::string(12, '\0')),
       kInvalid, "tensor 'b': data_offsets [4, 12] overlap tensor 'a' at [0, 8]"},
      {"hole between tensors",
       MakeFile(absl::StrCat("{", f32("a", "[1]", "[0,4]"), ",", f32("b", "[1]", "[8,12]"), "}"),
                std::string(12, '\0')),
       kInvalid, "data buffer bytes [4, 8) belong to no tensor (a hole before tensor 'b')"},
      {"trailing data", one(a4, 8), kInvalid,
       "data buffer bytes [4, 8) belong to no tensor (trailing bytes)"},
      {"metadata not an object", MakeFile(R"({"__metadata__":"x"})"), kInvalid,
       "\"__metadata__\" is a string, not an object of strings"},
      {"metadata value not a string", MakeFile(R"({"__metadata__":{"k":1}})"), kInvalid,
       "\"__metadata__\" value of 'k' is an integer, not a string"},
      {"bool byte 2", MakeFile(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                               std::string("\1\2\0", 3)),
       kInvalid, "tensor 'm': BOOL element 1 (file byte 64) is 2, not 0 or 1"},
      {"hostile name in message", MakeFile("{\"x\\n\\u0007\":{}}"), kInvalid,
       "tensor 'x\\n\\x07': missing \"dtype\""},
  };
}

TEST(Safetensors, MalformedFilesGiveSpecificErrors) {
  const std::vector<Malformed> cases = MalformedFiles();
  EXPECT_GE(cases.size(), 40u);
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.what);
    auto f = ParseSafetensors(c.bytes);
    ASSERT_FALSE(f.ok());
    EXPECT_STATUS(f.status(), c.code, c.message);
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("safetensors data: "));
  }
}

TEST(Safetensors, ErrorsFromFilesNameThePath) {
  const std::string dir = NewTempDir("safetensors");
  const std::string path = dir + "/bad.safetensors";
  ASSERT_OK(WriteFileAtomically(path, MakeFile(R"({"a":[1]})")));
  EXPECT_STATUS(ReadSafetensors(path).status(), absl::StatusCode::kInvalidArgument,
                absl::StrCat("'", path, "': tensor 'a': entry is an array"));
  EXPECT_STATUS(ReadSafetensors(dir + "/missing.safetensors").status(),
                absl::StatusCode::kNotFound, "missing.safetensors");
  EXPECT_STATUS(ReadSafetensors(dir).status(), absl::StatusCode::kFailedPrecondition,
                "cannot read '" + dir + "'");  // a directory
}

// ReadSafetensorsMetadata reads the header alone: a file whose tensors are
// cut short still says what it is, and a header that is wrong is refused as
// the whole-file reader refuses it.
TEST(Safetensors, MetadataIsReadFromTheHeaderAlone) {
  const std::string dir = NewTempDir("safetensors_metadata");
  SafetensorsFile file;
  file.tensors.emplace_back("w", *Tensor::FromVector<float>({1024}, std::vector<float>(1024, 1)));
  file.metadata = {{"model", "gpt2"}, {"tokenizer", "/models/gpt2"}};
  ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeSafetensors(file));
  const std::string path = dir + "/m.safetensors";
  ASSERT_OK(WriteFileAtomically(path, bytes.substr(0, bytes.size() - 4096)));  // data cut short
  EXPECT_FALSE(ReadSafetensors(path).ok());
  ASSERT_OK_AND_ASSIGN(auto metadata, ReadSafetensorsMetadata(path));
  EXPECT_EQ(metadata, file.metadata);

  ASSERT_OK(WriteFileAtomically(path, MakeFile(R"({"w":{"dtype":"F32","shape":[0],)"
                                               R"("data_offsets":[0,0]}})")));
  ASSERT_OK_AND_ASSIGN(metadata, ReadSafetensorsMetadata(path));
  EXPECT_TRUE(metadata.empty());
  ASSERT_OK(WriteFileAtomically(path, MakeFile(R"({"__metadata__":{"a":1}})")));
  EXPECT_STATUS(ReadSafetensorsMetadata(path).status(), absl::StatusCode::kInvalidArgument,
                absl::StrCat("'", path, "': \"__metadata__\" value of 'a' is an integer"));
  ASSERT_OK(WriteFileAtomically(path, MakeFile(R"({"__metadata__":{"a":"b"})").substr(0, 20)));
  EXPECT_STATUS(ReadSafetensorsMetadata(path).status(), absl::StatusCode::kInvalidArgument,
                "runs past the end of the 20-byte file");
  ASSERT_OK(WriteFileAtomically(path, LengthOnly(kMaxSafetensorsHeaderBytes + 1)));
  EXPECT_STATUS(ReadSafetensorsMetadata(path).status(), absl::StatusCode::kInvalidArgument,
                "exceeds the limit");
  ASSERT_OK(WriteFileAtomically(path, "abc"));
  EXPECT_STATUS(ReadSafetensorsMetadata(path).status(), absl::StatusCode::kInvalidArgument,
                "file is 3 bytes, too short");
  EXPECT_STATUS(ReadSafetensorsMetadata(dir + "/missing.safetensors").status(),
                absl::StatusCode::kNotFound, "missing.safetensors");
}

TEST(Safetensors, EveryTruncationOfAValidFileFailsCleanly) {
  const std::string bytes = FixtureBytes("all_dtypes");
  ASSERT_TRUE(ParseSafetensors(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = ParseSafetensors(absl::string_view(bytes).substr(0, n));
    ASSERT_FALSE(f.ok()) << "truncated to " << n << " bytes";
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << n << ": " << f.status();
  }
  // One byte too many is as wrong as one too few.
  EXPECT_STATUS(ParseSafetensors(bytes + "x").status(), absl::StatusCode::kInvalidArgument,
                "trailing bytes");
}

TEST(Safetensors, EverySingleByteCorruptionIsHandled) {
  // Not a check of particular messages: no corruption may crash, and what
  // parses must still be self-consistent.
  const std::string bytes = FixtureBytes("all_dtypes");
  int parsed = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (char c : {'\0', '\xff', '"', '{', '}', '[', ',', '9', '-', '\\', ' ', '\x80'}) {
      std::string corrupt = bytes;
      if (corrupt[i] == c) continue;
      corrupt[i] = c;
      auto f = ParseSafetensors(corrupt);
      if (!f.ok()) continue;
      ++parsed;
      for (const auto& [name, t] : f->tensors) {
        EXPECT_LE(t.nbytes(), bytes.size()) << "byte " << i;
      }
    }
  }
  EXPECT_GT(parsed, 0);  // corrupting tensor data bytes keeps the file valid
}

TEST(Safetensors, RandomEditsNeverCrash) {
  // Seeded, so a failure reproduces: overwrite, insert or delete a few
  // bytes of the header or the data, then parse.
  const std::string bytes = FixtureBytes("all_dtypes");
  std::mt19937 rng(0);
  const auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int trial = 0; trial < 5000; ++trial) {
    std::string edited = bytes;
    for (int edits = 1 + below(4); edits > 0 && !edited.empty(); --edits) {
      const size_t at = below(edited.size());
      const char c = static_cast<char>(rng());
      switch (below(3)) {
        case 0: edited[at] = c; break;
        case 1: edited.insert(edited.begin() + at, c); break;
        case 2: edited.erase(at, 1 + below(8)); break;
      }
    }
    auto f = ParseSafetensors(edited);
    if (f.ok()) {
      for (const auto& [name, t] : f->tensors) ASSERT_LE(t.nbytes(), edited.size());
    }
  }
}

TEST(Safetensors, SerializeRejectsWhatNoReaderCouldRead) {
  SafetensorsFile dup;
  dup.tensors = {{"w", T<float>({1}, {1})}, {"w", T<float>({1}, {2})}};
  EXPECT_STATUS(SerializeSafetensors(dup).status(), absl::StatusCode::kInvalidArgument,
                "two tensors are named 'w'");
  SafetensorsFile reserved;
  reserved.tensors = {{"__metadata__", T<float>({1}, {1})}};
  EXPECT_STATUS(SerializeSafetensors(reserved).status(), absl::StatusCode::kInvalidArgument,
                "may not be named \"__metadata__\"");
  SafetensorsFile bad_name;
  bad_name.tensors = {{"w\xc3", T<float>({1}, {1})}};
  EXPECT_STATUS(SerializeSafetensors(bad_name).status(), absl::StatusCode::kInvalidArgument,
                "tensor name 'w\\xc3' is not valid UTF-8 (byte 1)");
  SafetensorsFile bad_meta;
  bad_meta.metadata["k"] = "\xed\xa0\x80";  // an encoded surrogate
  EXPECT_STATUS(SerializeSafetensors(bad_meta).status(), absl::StatusCode::kInvalidArgument,
                "metadata value");
}

TEST(Safetensors, WriteReplacesAtomicallyAndLeavesNothingOnFailure) {
  const std::string dir = NewTempDir("safetensors");
  const std::string path = dir + "/w.safetensors";
  SafetensorsFile old_file;
  old_file.tensors = {{"w", T<float>({2}, {1, 2})}};
  ASSERT_OK(WriteSafetensors(path, old_file));
  ASSERT_OK_AND_ASSIGN(const std::string old_bytes, ReadFile(path));

  // A file that cannot be serialized touches nothing.
  SafetensorsFile dup;
  dup.tensors = {{"w", T<float>({1}, {1})}, {"w", T<float>({1}, {2})}};
  EXPECT_FALSE(WriteSafetensors(path, dup).ok());
  // A rename that fails (over a directory) removes its temporary file.
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0755), 0);
  EXPECT_FALSE(WriteSafetensors(dir + "/sub", old_file).ok());
  // A missing directory is NotFound and names the path.
  EXPECT_STATUS(WriteSafetensors(dir + "/no/such/dir.safetensors", old_file),
                absl::StatusCode::kNotFound, "no/such/dir.safetensors");
  EXPECT_THAT(ListDir(dir), ElementsAre("sub", "w.safetensors"));
  EXPECT_TRUE(ListDir(dir + "/sub").empty());
  EXPECT_EQ(*ReadFile(path), old_bytes);

  // A replaced file keeps its mode.
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  SafetensorsFile new_file;
  new_file.tensors = {{"w", T<float>({3}, {3, 4, 5})}};
  ASSERT_OK(WriteSafetensors(path, new_file));
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile back, ReadSafetensors(path));
  ExpectSameBits(back.Find("w"), new_file.tensors[0].second, "w");
  EXPECT_THAT(ListDir(dir), ElementsAre("sub", "w.safetensors"));
}

TEST(Safetensors, ReadersNeverSeeAPartialFile) {
  // A reader racing many rewrites sees the old or the new file, whole.
  const std::string dir = NewTempDir("safetensors");
  const std::string path = dir + "/big.safetensors";
  SafetensorsFile a, b;
  a.tensors = {{"w", Random(DType::kFloat32, {1 << 18}, 1)}};
  b.tensors = {{"w", Random(DType::kFloat32, {1 << 18}, 2)}};
  const std::string bytes_a = *SerializeSafetensors(a), bytes_b = *SerializeSafetensors(b);
  ASSERT_OK(WriteSafetensors(path, a));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(WriteSafetensors(path, i % 2 ? a : b).ok());
    done = true;
  });
  int reads = 0;
  while (!done || reads == 0) {
    auto bytes = ReadFile(path);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_TRUE(*bytes == bytes_a || *bytes == bytes_b) << "read " << bytes->size() << " bytes";
    ++reads;
  }
  writer.join();
  EXPECT_THAT(ListDir(dir), ElementsAre("big.safetensors"));
}

}  // namespace
}  // namespace dagrad::testing
