// eager_ops_cpp: eager ops from C++ through the installed <rtx.hpp>.
//
//   eager_ops_cpp
//
// rtx::Context::execute_op with rtx::OpAttrs: a sum (`tfrt_test.add`) chained into a transpose
// (`onnx.Transpose`, its `perm` set) before either is there, a mean along an axis
// (`onnx.ReduceMean`: the axes a tensor, `keepdims` an attribute), then the failures: an unknown op as an rtx::Error
// saying UNIMPLEMENTED, a result whose error names the op. The exit status is 0 only if every
// value matches what is computed here by hand.
#include <rtx.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void report(bool ok, const char* what) {
  std::printf("  %-64s %s\n", what, ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;
}

bool holds(const rtx::AsyncValue& value, const std::vector<std::int64_t>& shape, const std::vector<float>& expected) {
  rtx::BufferView view = value.get<rtx::BufferView>();
  return view.shape() == shape && view.to_vector<float>() == expected;
}

}  // namespace

int main() {
  std::printf("eager_ops_cpp: ops by name from C++\n");
  try {
    rtx::Context ctx(rtx::ContextOptions{"mstd:2", nullptr, nullptr});
    const std::vector<float> a_data{1, 2, 3, 4, 5, 6};
    const std::vector<float> b_data{10, 20, 30, 40, 50, 60};
    rtx::AsyncValue a(rtx::BufferView::from(a_data, {2, 3}));
    rtx::AsyncValue b(rtx::BufferView::from(b_data, {2, 3}));
    std::vector<rtx::AsyncValue> sum = ctx.execute_op("tfrt_test.add", {a, b});
    rtx::OpAttrs perm;
    perm.set("perm", std::vector<std::int64_t>{1, 0});
    std::vector<rtx::AsyncValue> transposed = ctx.execute_op("onnx.Transpose", sum, perm);
    rtx::OpAttrs mean;
    mean.set("keepdims", 0);
    rtx::AsyncValue axes(rtx::BufferView::from(std::vector<std::int64_t>{1}, {1}));
    std::vector<rtx::AsyncValue> means = ctx.execute_op("onnx.ReduceMean", {a, axes}, mean);
    rtx::await(ctx, {sum[0], transposed[0], means[0]});
    report(holds(sum[0], {2, 3}, {11, 22, 33, 44, 55, 66}), "tfrt_test.add of two 2x3 tensors");
    report(holds(transposed[0], {3, 2}, {11, 44, 22, 55, 33, 66}), "onnx.Transpose {perm = [1, 0]} of the sum");
    report(holds(means[0], {2}, {2, 5}), "onnx.ReduceMean over axis 1 {keepdims = 0}");

    bool refused = false;
    try {
      ctx.execute_op("my.nothing", {a});
    } catch (const rtx::Error& error) {
      refused = error.status().code() == RTX_STATUS_CODE_UNIMPLEMENTED &&
                error.status().message().find("my.nothing") != std::string::npos;
    }
    report(refused, "an unknown op is an rtx::Error naming it");
    rtx::AsyncValue short_row(rtx::BufferView::from(std::vector<float>{1, 2}, {2}));
    std::vector<rtx::AsyncValue> mismatched = ctx.execute_op("tfrt_test.add", {a, short_row});
    rtx::await(ctx, mismatched);
    const rtx::Status status = mismatched[0].status();
    report(!status.ok() && status.message().find("tfrt_test.add") != std::string::npos,
           "shapes that differ: an error result naming the op");
  } catch (const rtx::Error& error) {
    std::printf("  unexpected error: %s\n", error.what());
    ++failures;
  }
  std::printf("eager_ops_cpp: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
