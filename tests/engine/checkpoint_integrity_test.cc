// Checkpoints you can trust: the CRC-32C checksums SaveVariables writes and
// ReadCheckpoint verifies (any damaged byte refused, the checksum key's name
// included; truncation refused; other writers' files without checksums
// still read, dagrad's own refused), keeping the previous
// version on a write, and removing the temporary files of killed writers.

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// Saved holds three variables of three dtypes saved with metadata.
struct Saved {
  Graph g;
  std::string path;

  explicit Saved(const std::string& dir) : path(dir + "/ckpt.safetensors") {
    Graph::Scope s(g, "layer");
    g.Parameter("weight", {3, 4}, Initializer::XavierUniform());
    g.Parameter("bias", {4}, Initializer::Constant(0.25));
    g.Variable("count", {2}, Initializer::Constant(7), DType::kInt64);
    Executor exec(g, {.seed = 3});
    EXPECT_TRUE(SaveVariables(exec, g.Variables(), {{"step", "7"}, {"lr", "0.001"}}, path).ok());
  }
};

// Damage writes `bytes` over the file at `path` in place, as a disk or a
// copy gone wrong would (and without fsync, which hundreds of cases would
// wait for).
void Damage(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void Overwrite(const std::string& path, size_t at, char byte) {
  std::string bytes = *ReadFile(path);
  bytes[at] = byte;
  Damage(path, bytes);
}

// DataStart is where the tensors' bytes begin: after the 8-byte length and
// the header.
size_t DataStart(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return 8 + n;
}

TEST(CheckpointIntegrity, SaveWritesChecksumsAndReadVerifiesAndDropsThem) {
  Saved s(NewTempDir("integrity"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile raw, ReadSafetensors(s.path));
  ASSERT_TRUE(raw.metadata.contains(kChecksumKey));
  const std::vector<std::string> fields = absl::StrSplit(raw.metadata[kChecksumKey], ' ');
  EXPECT_EQ(fields.size(), 4u);  // the header and three tensors
  for (const std::string& f : fields) EXPECT_EQ(f.size(), 8u) << f;

  ASSERT_OK_AND_ASSIGN(SafetensorsFile read, ReadCheckpoint(s.path));
  EXPECT_THAT(read.metadata, ElementsAre(Pair("lr", "0.001"), Pair("step", "7")));
  Graph g;
  Graph::Scope scope(g, "layer");
  g.Parameter("weight", {3, 4}, Initializer::Zeros());
  g.Parameter("bias", {4}, Initializer::Zeros());
  g.Variable("count", {2}, Initializer::Zeros(), DType::kInt64);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto metadata, LoadVariables(exec, g.Variables(), s.path));
  EXPECT_THAT(metadata, ElementsAre(Pair("lr", "0.001"), Pair("step", "7")));
  EXPECT_EQ(exec.Read(g.Variables()[1])->data<float>()[0], 0.25f);
}

TEST(CheckpointIntegrity, ADamagedTensorIsRefusedByName) {
  const std::string dir = NewTempDir("integrity");
  Saved s(dir);
  const std::string pristine = *ReadFile(s.path);
  // The writer packs the tensors in name order from the data's start.
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ReadSafetensors(s.path));
  size_t offset = DataStart(pristine);
  for (const auto& [name, tensor] : file.tensors) {
    SCOPED_TRACE(name);
    Damage(s.path, pristine);
    Overwrite(s.path, offset + tensor.nbytes() / 2, pristine[offset + tensor.nbytes() / 2] ^ 0x10);
    EXPECT_STATUS(ReadCheckpoint(s.path).status(), absl::StatusCode::kDataLoss,
                  absl::StrCat("damaged checkpoint '", s.path, "': tensor '", name,
                               "': data fails its checksum (stored crc32c "));
    offset += tensor.nbytes();
  }
}

TEST(CheckpointIntegrity, AnAlteredHeaderIsRefused) {
  Saved s(NewTempDir("integrity"));
  const std::string bytes = *ReadFile(s.path);
  // A metadata value that still parses: the step 7 becomes 8.
  const size_t step = bytes.find("\"step\":\"7\"");
  ASSERT_NE(step, std::string::npos);
  Overwrite(s.path, step + 8, '8');
  ASSERT_OK_AND_ASSIGN(SafetensorsFile raw, ReadSafetensors(s.path));
  ASSERT_EQ(raw.metadata["step"], "8");
  EXPECT_STATUS(ReadCheckpoint(s.path).status(), absl::StatusCode::kDataLoss,
                "the header (tensor names, dtypes, shapes or metadata) fails "
                "its checksum");

  // A checksum that is not hex, and a list of the wrong length.
  const size_t list = bytes.find(kChecksumKey) + std::strlen(kChecksumKey) + 3;
  Damage(s.path, bytes);
  Overwrite(s.path, list, 'z');
  EXPECT_STATUS(ReadCheckpoint(s.path).status(), absl::StatusCode::kDataLoss, "not 8 hex digits");
  Damage(s.path, bytes);
  Overwrite(s.path, list + 8, 'f');  // the space between two checksums
  EXPECT_STATUS(ReadCheckpoint(s.path).status(), absl::StatusCode::kDataLoss, "not 8 hex digits");
}

TEST(CheckpointIntegrity, EveryTruncationIsDataLossNamingTheFile) {
  Saved s(NewTempDir("integrity"));
  const std::string bytes = *ReadFile(s.path);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Damage(s.path, bytes.substr(0, n));
    const absl::Status st = ReadCheckpoint(s.path).status();
    ASSERT_EQ(st.code(), absl::StatusCode::kDataLoss) << n << ": " << st;
    ASSERT_THAT(std::string(st.message()), HasSubstr("damaged checkpoint '" + s.path + "'")) << n;
  }
}

// A file that cannot be read is not a damaged checkpoint: /dev/zero was
// "damaged checkpoint cannot read '/dev/zero': ...".
TEST(CheckpointIntegrity, ADeviceIsUnreadableNotDamaged) {
  const absl::Status st = ReadCheckpoint("/dev/zero").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(st.message(), "cannot read '/dev/zero': it is a character device, not a file");
}

// ExpectDamaged checks that the checkpoint `bytes` read as damaged.
void ExpectDamaged(const std::string& bytes, const std::string& what) {
  const absl::Status st = ParseCheckpoint(bytes).status();
  ASSERT_EQ(st.code(), absl::StatusCode::kDataLoss) << what << ": " << st;
  ASSERT_THAT(std::string(st.message()), HasSubstr("damaged checkpoint safetensors data"))
      << what;
}

// Any byte of the file changed is refused, alone or with a data byte: a
// change to the checksum key's name too, since a file of dagrad's without
// its checksums is damaged (it loaded unverified, damaged data and all).
TEST(CheckpointIntegrity, EverySingleByteChangeIsRefused) {
  Saved s(NewTempDir("integrity"));
  const std::string bytes = *ReadFile(s.path);
  ASSERT_OK(ParseCheckpoint(bytes).status());
  const size_t data = DataStart(bytes) + 1;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (const int flip : {0x01, 0x80}) {
      std::string damaged = bytes;
      damaged[i] ^= static_cast<char>(flip);
      ExpectDamaged(damaged, absl::StrCat("byte ", i, " ^ ", flip));
      if (i == data) continue;
      damaged[data] ^= 0x10;
      ExpectDamaged(damaged, absl::StrCat("byte ", i, " ^ ", flip, " and data"));
    }
  }
}

// Every byte of the metadata (the "__metadata__" key, and each entry's key
// and value: the checksum key's, the config's) changed to any other value;
// a change to a key's name also with a data byte.
TEST(CheckpointIntegrity, EveryChangeToTheMetadataIsRefused) {
  Saved s(NewTempDir("integrity"));
  const std::string bytes = *ReadFile(s.path);
  const size_t begin = bytes.find("\"__metadata__\"");
  const size_t end = bytes.find('}', begin) + 1;
  ASSERT_LT(end, DataStart(bytes));
  std::vector<bool> in_key(bytes.size(), false);
  for (const std::string key : {std::string(kChecksumKey), std::string("step"), std::string("lr")}) {
    const size_t at = bytes.find("\"" + key + "\":", begin) + 1;
    ASSERT_LT(at, end) << key;
    std::fill(in_key.begin() + at, in_key.begin() + at + key.size(), true);
  }
  const size_t data = DataStart(bytes) + 4;
  for (size_t i = begin; i < end; ++i) {
    for (int flip = 1; flip < 256; ++flip) {
      std::string damaged = bytes;
      damaged[i] ^= static_cast<char>(flip);
      ExpectDamaged(damaged, absl::StrCat("byte ", i, " ^ ", flip));
      if (!in_key[i]) continue;
      damaged[data] ^= 0x01;
      ExpectDamaged(damaged, absl::StrCat("key byte ", i, " ^ ", flip, " and data"));
    }
  }
}

// A file of dagrad's without checksums: one with a "dagrad." key, and any
// file where the reader takes dagrad's own only (--resume).
TEST(CheckpointIntegrity, DagradsOwnFilesWithoutChecksumsAreDamaged) {
  Saved s(NewTempDir("integrity"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile raw, ReadSafetensors(s.path));
  raw.metadata["dagrad.step"] = raw.metadata["step"];
  raw.metadata.erase(kChecksumKey);
  ASSERT_OK(WriteSafetensors(s.path, raw));
  EXPECT_STATUS(ReadCheckpoint(s.path).status(), absl::StatusCode::kDataLoss,
                "the checksums 'dagrad.crc32c' are missing from a file of dagrad's (its metadata "
                "key 'dagrad.step' is dagrad's)");
  raw.metadata.erase("dagrad.step");
  ASSERT_OK(WriteSafetensors(s.path, raw));
  ASSERT_OK(ReadCheckpoint(s.path).status());
  EXPECT_STATUS(ReadCheckpoint(s.path, {.require_checksums = true}).status(),
                absl::StatusCode::kDataLoss,
                "the checksums 'dagrad.crc32c' are missing from a file of dagrad's (the reader "
                "takes only dagrad's own checkpoints)");
}

TEST(CheckpointIntegrity, OtherWritersFilesWithoutChecksumsStillLoad) {
  // A file with none of dagrad's keys (as a dagrad model file of before
  // checksums), PyTorch's state_dict, and the reference models' files,
  // which carry dagrad's config keys.
  for (const char* file : {"/toy_eval/model.safetensors", "/goldens/gpt/model.safetensors"}) {
    SCOPED_TRACE(file);
    ASSERT_OK(ReadCheckpoint(absl::StrCat(DAGRAD_TEST_DATA_DIR, file)).status());
  }
  Saved s(NewTempDir("integrity"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile raw, ReadSafetensors(s.path));
  raw.metadata.erase(kChecksumKey);
  ASSERT_OK(WriteSafetensors(s.path, raw));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile read, ReadCheckpoint(s.path));
  EXPECT_EQ(read.tensors.size(), 3u);
  ASSERT_OK(
      ReadCheckpoint(absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/state_dict.safetensors"))
          .status());
}

TEST(CheckpointIntegrity, TheChecksumKeyIsReservedAndOtherErrorsKeepTheirCodes) {
  const std::string dir = NewTempDir("integrity");
  SafetensorsFile f;
  f.metadata[kChecksumKey] = "00000000";
  EXPECT_STATUS(WriteCheckpoint(dir + "/c.safetensors", f), absl::StatusCode::kInvalidArgument,
                "'dagrad.crc32c' is dagrad's own");
  EXPECT_STATUS(ReadCheckpoint(dir + "/none.safetensors").status(), absl::StatusCode::kNotFound,
                "none.safetensors");
  EXPECT_STATUS(
      ReadCheckpoint(absl::StrCat(DAGRAD_TEST_DATA_DIR, "/safetensors/u8.safetensors")).status(),
      absl::StatusCode::kUnimplemented, "'U8' is not supported");
}

TEST(AtomicWrite, KeepsThePreviousVersionWhenAsked) {
  const std::string dir = NewTempDir("integrity");
  const std::string path = dir + "/c", prev = dir + "/c.prev";
  const AtomicWriteOptions keep{.keep_previous_as = prev};
  ASSERT_OK(WriteFileAtomically(path, "one", keep));  // nothing to keep yet
  EXPECT_EQ(*ReadFile(path), "one");
  EXPECT_FALSE(std::filesystem::exists(prev));
  ASSERT_OK(WriteFileAtomically(path, "two", keep));
  ASSERT_OK(WriteFileAtomically(path, "three", keep));
  EXPECT_EQ(*ReadFile(path), "three");
  EXPECT_EQ(*ReadFile(prev), "two");
  ASSERT_OK(WriteFileAtomically(path, "four"));  // not asked: the previous stays as it was
  EXPECT_EQ(*ReadFile(prev), "two");
  // The previous file's place cannot be written: nothing changes.
  EXPECT_STATUS(WriteFileAtomically(path, "five", {.keep_previous_as = dir + "/no/such"}),
                absl::StatusCode::kNotFound,
                "cannot rename '" + path + "' to '" + dir + "/no/such'");
  EXPECT_EQ(*ReadFile(path), "four");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2);
}

// DeadPid returns the pid of a process that has ended.
pid_t DeadPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(StaleTemporaryFiles, OnlyThoseOfEndedWritersAreRemoved) {
  const std::string dir = NewTempDir("integrity");
  const pid_t dead = DeadPid(), alive = getpid();
  const std::vector<std::string> stale = {absl::StrCat("ckpt.safetensors.tmp.", dead, ".0"),
                                          absl::StrCat("metrics.csv.tmp.", dead, ".12")};
  const std::vector<std::string> kept = {
      absl::StrCat("ckpt.safetensors.tmp.", alive,
                   ".0"),               // a writer still at work
      absl::StrCat("ckpt.tmp.", dead),  // not a temporary file's name
      absl::StrCat("ckpt.tmp.", dead, ".x"),
      absl::StrCat("ckpt.tmp.-", dead, ".0"),
      absl::StrCat(".tmp.", dead, ".0"),
      absl::StrCat("ckpt.temp.", dead, ".0"),
      "ckpt"};
  for (const auto& name : stale) ASSERT_OK(WriteFileAtomically(dir + "/" + name, "x"));
  for (const auto& name : kept) ASSERT_OK(WriteFileAtomically(dir + "/" + name, "x"));
  const std::string subdir = absl::StrCat("d.tmp.", dead, ".1");  // a directory: left alone
  ASSERT_EQ(mkdir((dir + "/" + subdir).c_str(), 0755), 0);

  ASSERT_OK_AND_ASSIGN(std::vector<std::string> removed, RemoveStaleTemporaryFiles(dir));
  EXPECT_EQ(removed, stale);
  for (const auto& name : stale) EXPECT_FALSE(std::filesystem::exists(dir + "/" + name)) << name;
  for (const auto& name : kept) EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/" + subdir));
  EXPECT_STATUS(RemoveStaleTemporaryFiles(dir + "/none").status(), absl::StatusCode::kNotFound,
                dir + "/none");
}

// Metadata numbers read back as the numbers written; a number six digits
// hold is written as before, so older files compare equal.
TEST(MetadataNumber, ReadsBackExactlyAndKeepsShortNumbersAsBefore) {
  for (double x : {0.1, 0.9, 0.999, 1e-8, 3e-4, 1e-5, 0.0, 1.0, 2.5, 1e300, 5e-324}) {
    EXPECT_EQ(MetadataNumber(x), absl::StrCat(x)) << x;
  }
  for (double x : {1.0 / 3, 0.123456789, 1.2345678e-5, 6e-4 + 1e-12, -2.0 / 7,
                   1.7976931348623157e308}) {
    const std::string text = MetadataNumber(x);
    double back = 0;
    ASSERT_TRUE(absl::SimpleAtod(text, &back)) << text;
    EXPECT_EQ(back, x) << text;
    EXPECT_NE(text, absl::StrCat(x));
  }
  EXPECT_EQ(MetadataNumber(0.123456789), "0.123456789");
  EXPECT_EQ(MetadataNumber(std::numeric_limits<double>::infinity()), "inf");
}

}  // namespace
}  // namespace dagrad::testing
