#pragma once
// NumPy's .npy and Hugging Face's safetensors
// (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint): two small formats, a
// header and raw little- (or big-) endian data, read strictly. Every value is widened to
// f64 exactly (f16 and bf16 included); a malformed file is an InputError naming the file
// (and the tensor) and what is wrong.
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn_trace/numeric_array.hpp"

namespace attn_trace {

// A .npy file, versions 1 to 3: dtypes f8, f4, f2, i4, i8 (either byte order), C or
// Fortran order, 1 to 3 dimensions; the data must be exactly what the shape says.
NumericArray read_npy(const std::string& path);
// The same from bytes in memory (`file` names them in messages): tests, fuzzing.
NumericArray parse_npy(std::string_view bytes, const std::string& file);
// Only the shape a .npy file declares (its header), without reading the data.
std::vector<std::size_t> npy_shape(const std::string& path);

// Half-open ranges [first, last) of a 2-D tensor's rows and columns (a 1-D
// tensor has only columns), and whether to transpose what they cut out.
struct TensorSlice {
    std::optional<std::array<std::size_t, 2>> rows, cols;
    bool transpose = false;
};

class SafetensorsFile {
public:
    struct Tensor {
        std::string name, dtype;  // F64, F32, F16, BF16 are read; others are named in the error
        std::vector<std::size_t> shape;
        std::size_t begin = 0, end = 0;  // data_offsets, from the start of the data
    };

    // The file memory-mapped; its header validated (length within the file, JSON,
    // every entry's dtype, shape and offsets in range, agreeing and not overlapping).
    static SafetensorsFile open(const std::string& path);
    // The same over bytes in memory (tests, fuzzing).
    static SafetensorsFile parse(std::string bytes, const std::string& file);

    const std::string& file() const { return file_; }
    const std::vector<Tensor>& tensors() const { return tensors_; }
    const Tensor* find(const std::string& name) const;
    // The named tensor, or an InputError listing the nearest names the file has.
    const Tensor& tensor(const std::string& name) const;
    // The shape read(name, slice) returns, from the header alone.
    std::vector<std::size_t> shape(const std::string& name, const TensorSlice& slice = {}) const;
    NumericArray read(const std::string& name, const TensorSlice& slice = {}) const;

private:
    SafetensorsFile(std::string file, std::shared_ptr<const void> owner, std::string_view bytes);
    void read_header();
    std::string file_;
    std::shared_ptr<const void> owner_;  // the mapping (or the string) the bytes live in
    std::string_view bytes_, data_;
    std::vector<Tensor> tensors_;
};

}  // namespace attn_trace
