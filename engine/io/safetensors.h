// engine/io/safetensors.h
//
// Reading and writing the safetensors format, dagrad's checkpoint format and
// the one PyTorch users exchange weights in. A file is
//
//   8 bytes    N, the header length, little-endian unsigned
//   N bytes    UTF-8 JSON: {"<tensor name>": {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//   the rest   the data buffer; each tensor's little-endian row-major bytes
//              are buffer[begin, end)
//
// dagrad supports the dtypes F32, F64, I32, I64, BOOL, BF16 and F16 (its
// own seven: BF16 is bfloat16, F16 IEEE float16, engine/bfloat16.h), each
// read and written as its bytes.
// The reader trusts nothing in the file: every length, offset and shape is
// checked before it is used, and a malformed file is an error naming the
// file, the tensor and the bytes at fault, never a crash. It accepts what
// the reference implementation (huggingface/safetensors) accepts, minus
// other dtypes: in particular the tensors must cover the data buffer
// exactly, without overlaps, holes or trailing bytes (so that no unindexed
// data can hide in a file). The writer produces the same bytes as
// tools/goldens/safetensors_io.py for the same tensors: tensors in
// name order, packed from offset 0, compact JSON with non-ASCII characters
// \u-escaped, padded with spaces to a multiple of 8 bytes.
//
//   SafetensorsFile f;
//   f.tensors.emplace_back("w", *Tensor::FromVector<float>({2}, {1, 2}));
//   f.metadata["step"] = "100";
//   DAGRAD_RETURN_IF_ERROR(WriteSafetensors("w.safetensors", f));
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile g, ReadSafetensors("w.safetensors"));
//   const Tensor* w = g.Find("w");   // float32 (2,): 1, 2

#ifndef DAGRAD_ENGINE_IO_SAFETENSORS_H_
#define DAGRAD_ENGINE_IO_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tensor.h"

namespace dagrad {

// The largest header the reader accepts (the reference implementation's
// limit): a bigger one is a corrupt or hostile file, not a checkpoint.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// The header key of the string metadata, which no tensor may have.
inline constexpr absl::string_view kSafetensorsMetadataKey = "__metadata__";

// SafetensorsFile is the content of one file: named tensors and string
// metadata. The reader returns tensors in name order; the writer sorts them.
struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  // Find returns the tensor named `name`, or nullptr.
  //   // setup: Files
  //   const Tensor* w = file.Find("encoder.layers.0.linear1.weight");
  const Tensor* Find(absl::string_view name) const;
};

// ParseSafetensors decodes a whole file held in `bytes`. It reads nothing
// else and keeps no pointer into `bytes`, so it is the entry point for
// fuzzing; error messages call the input "safetensors data".
//
// Errors: InvalidArgument for any malformed input: shorter than 8 bytes; a
// header length beyond the input or above kMaxSafetensorsHeaderBytes; a
// header that is not valid JSON or UTF-8, not an object, has a duplicate
// key, nests deeper than 16 levels or holds an array of more than 1024
// elements (limits far above any real header); an entry with a missing or
// ill-typed "dtype", "shape" or "data_offsets"; a negative or non-integer
// dimension; a shape whose element count overflows int64; offsets with
// begin > end, past the data buffer, overlapping another tensor, leaving a
// hole or trailing bytes; a byte length other than elements x dtype size; a
// BOOL byte other than 0 or 1; "__metadata__" not an object of strings; an
// unknown dtype. Unimplemented
// for a valid safetensors dtype that dagrad lacks (U8, I8, F8_E4M3, ...);
// ResourceExhausted when memory for the tensors runs out. Each message
// names the tensor and the offsets or field at fault.
//
//   // setup: Files
//   auto f = ParseSafetensors(bytes);
//   if (!f.ok()) return f.status();
absl::StatusOr<SafetensorsFile> ParseSafetensors(absl::string_view bytes);

// ReadSafetensors reads and parses the file at `path`; error messages begin
// with the path.
//
// Errors: those of ReadFile (NotFound, PermissionDenied, ...) and of
// ParseSafetensors.
//
//   // setup: Files
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadSafetensors("model.safetensors"));
//   for (const auto& [name, tensor] : f.tensors) Print(name, tensor.TypeString());
absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

// ReadSafetensorsMetadata reads only the header of the file at `path` and
// returns its "__metadata__" (empty when it has none): what a file says of
// itself (a model's kind, the tokenizer it reads) without reading its
// tensors, which it neither checks nor verifies the checksums of.
//
// Errors: those of ReadFile, and InvalidArgument for a header that is
// malformed as ParseSafetensors says (too short, too long, not JSON, a
// "__metadata__" that is not an object of strings).
//
//   // setup: Files
//   DAGRAD_ASSIGN_OR_RETURN(auto metadata, ReadSafetensorsMetadata("model.safetensors"));
absl::StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(
    const std::string& path);

// SerializeSafetensors returns the bytes of `file` in the format above.
//
// Errors: InvalidArgument for two tensors of one name, a tensor named
// "__metadata__", a name, metadata key or value that is not valid UTF-8, or
// a header larger than kMaxSafetensorsHeaderBytes (which no reader would
// accept).
//
//   // setup: Files
//   DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(file));
absl::StatusOr<std::string> SerializeSafetensors(const SafetensorsFile& file);

// WriteSafetensors serializes `file` and replaces `path` with it atomically
// (WriteFileAtomically): a crash or error leaves the previous file intact
// and no partial or temporary file behind.
//
// Errors: those of SerializeSafetensors (nothing is written) and of
// WriteFileAtomically (NotFound for a missing directory, ...).
//
//   // setup: Files
//   DAGRAD_RETURN_IF_ERROR(WriteSafetensors("ckpt.safetensors", file));
absl::Status WriteSafetensors(const std::string& path, const SafetensorsFile& file);

// SafetensorsDTypeName returns the format's name of a dagrad dtype: "F32",
// "F64", "I32", "I64", "BOOL", "BF16" or "F16".
absl::string_view SafetensorsDTypeName(DType dtype);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_SAFETENSORS_H_
