// onnx_model_cpp: ONNX models from C++ through the installed <rtx.hpp>, with onnxruntime's outputs.
//
//   onnx_model_cpp <folder> <name>...
//
// onnx_model.c's check, written as a C++ host writes it: rtx::Module::load on <folder>/<name>.onnx,
// the inputs <name>.input_K.npy as rtx::BufferViews in rtx::AsyncValues, invoke_sync on a context
// with a pool of two workers, and every output compared with <name>.output_K.npy (element type,
// shape, values within 1e-4 of the largest expected magnitude). A function the model lacks is an
// rtx::Error saying NOT_FOUND. The exit status is 0 only if every check holds.
#include <rtx.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "npy.h"

namespace {

// The arrays <folder>/<name>.<kind>_0.npy, _1, ... (owned: npy_free each).
std::vector<npy_array> read_numbered(const std::string& folder, const std::string& name, const char* kind) {
  std::vector<npy_array> arrays;
  for (npy_array array; npy_read((folder + "/" + name + "." + kind + "_" + std::to_string(arrays.size()) + ".npy").c_str(),
                                 &array);) {
    arrays.push_back(array);
  }
  return arrays;
}

// The number of failed checks of model `name`.
int check_model(const std::string& folder, const std::string& name) {
  std::vector<npy_array> inputs = read_numbered(folder, name, "input");
  std::vector<npy_array> expected = read_numbered(folder, name, "output");
  int failures = inputs.empty() || expected.empty() ? 1 : 0;
  try {
    rtx::Context ctx(rtx::ContextOptions{"mstd:2", nullptr, nullptr});
    ctx.add_module(rtx::Module::load(folder + "/" + name + ".onnx"));
    std::vector<rtx::AsyncValue> args;
    for (const npy_array& input : inputs) {
      const std::vector<std::int64_t> shape(input.shape, input.shape + input.rank);
      args.emplace_back(rtx::BufferView::create(static_cast<rtx::ElementType>(input.element_type), shape, input.data,
                                                input.byte_length));
    }
    std::vector<rtx::AsyncValue> results = ctx.invoke_sync(name, args);
    for (std::size_t k = 0; k < results.size() && k < expected.size(); ++k) {
      const rtx::BufferView view = results[k].get<rtx::BufferView>();
      const std::vector<std::int64_t> shape = view.shape();
      const bool same = npy_close(&expected[k], static_cast<std::uint32_t>(view.element_type()), shape.data(),
                                  shape.size(), view.data(), 1e-4);
      std::printf("  %-10s output %zu %s onnxruntime's\n", name.c_str(), k, same ? "is" : "DIFFERS FROM");
      failures += same ? 0 : 1;
    }
    failures += results.size() == expected.size() ? 0 : 1;
    try {
      ctx.invoke_sync(name + "_missing", args);
      ++failures;
    } catch (const rtx::Error& e) {
      const bool not_found = e.code() == RTX_STATUS_CODE_NOT_FOUND;
      std::printf("  %-10s a missing function is %s\n", name.c_str(), not_found ? "NOT_FOUND" : e.what());
      failures += not_found ? 0 : 1;
    }
  } catch (const rtx::Error& e) {
    std::printf("  %-10s rtx::Error: %s\n", name.c_str(), e.what());
    ++failures;
  }
  for (npy_array& array : inputs) {
    npy_free(&array);
  }
  for (npy_array& array : expected) {
    npy_free(&array);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <folder> <name>...\n", argv[0]);
    return 2;
  }
  int failures = 0;
  for (int i = 2; i < argc; ++i) {
    failures += check_model(argv[1], argv[i]);
  }
  std::printf("onnx_model_cpp: %s\n", failures == 0 ? "every model gives onnxruntime's outputs" : "FAILED");
  return failures == 0 ? 0 : 1;
}
