// ReadFile and WriteFileAtomically given paths that are no regular file: a
// device (/dev/zero never ends) is refused, not read until memory runs out,
// a FIFO is read, and a device or FIFO to write is refused, not replaced
// by the file renamed over it (`--output=/dev/full` as root did).

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// /dev/null ends at once, so a regression fails here without reading
// /dev/zero until memory runs out, as `--data=/dev/zero` did.
TEST(ReadFile, ADeviceIsRefusedByName) {
  EXPECT_STATUS(ReadFile("/dev/null").status(), absl::StatusCode::kInvalidArgument,
                "cannot read '/dev/null': it is a character device, not a file");
}

TEST(ReadFile, AFifoIsReadToItsEnd) {
  const std::string fifo = NewTempDir("file_io") + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t writer = fork();
  if (writer == 0) {
    const int fd = open(fifo.c_str(), O_WRONLY);
    _exit(fd >= 0 && write(fd, "piped", 5) == 5 ? 0 : 1);
  }
  ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(fifo));
  EXPECT_EQ(bytes, "piped");
  int status = 0;
  waitpid(writer, &status, 0);
}

TEST(WriteFileAtomically, AFifoOrDirectoryIsRefusedAndKept) {
  const std::string dir = NewTempDir("file_io");
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_STATUS(WriteFileAtomically(fifo, "x"), absl::StatusCode::kFailedPrecondition,
                "cannot write '" + fifo + "': it is a FIFO, not a file");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporary
  EXPECT_STATUS(WriteFileAtomically(dir, "x"), absl::StatusCode::kFailedPrecondition,
                "cannot write '" + dir + "': it is a directory, not a file");
}

// A legal name of 251 bytes was refused ("File name too long"): its
// temporary, the name and ".tmp.<pid>.<n>", was not.
TEST(WriteFileAtomically, ANameOfUpTo255BytesIsWritten) {
  const std::string dir = NewTempDir("long_name");
  for (size_t length : {240, 251, 255}) {
    const std::string path = dir + "/" + std::string(length, 'n');
    ASSERT_OK(WriteFileAtomically(path, "x"));
    EXPECT_EQ(ReadFile(path).value_or(""), "x");
    EXPECT_LE(TemporaryPathFor(path).size() - dir.size() - 1, 255u);
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 3);
}

// A set of files is written whole or not at all: a failure while writing
// the second (here a file-size limit, RLIMIT_FSIZE with SIGXFSZ ignored)
// leaves the first as it was, and no temporary behind.
TEST(WriteFilesAtomically, AFailureWhileWritingLeavesEveryFileAsItWas) {
  const std::string dir = NewTempDir("file_set");
  ASSERT_OK(WriteFilesAtomically({{dir + "/a", "old a"}, {dir + "/b", "old b"}}));
  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  const absl::Status st =
      WriteFilesAtomically({{dir + "/a", "new a"}, {dir + "/b", std::string(5000, 'b')}});
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("File too large"), absl::string_view::npos) << st;
  EXPECT_EQ(ReadFile(dir + "/a").value_or(""), "old a");
  EXPECT_EQ(ReadFile(dir + "/b").value_or(""), "old b");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2);  // no temporary
  ASSERT_OK(WriteFilesAtomically({{dir + "/a", "new a"}, {dir + "/b", "new b"}}));
  EXPECT_EQ(ReadFile(dir + "/b").value_or(""), "new b");
}

}  // namespace
}  // namespace dagrad::testing
