// hpp_alone: <rtx.hpp> included first and on its own, built twice from this file: in the default
// mode (rtx::Error exceptions) and with -fno-exceptions -DRTX_NO_EXCEPTIONS (rtx::Result return
// values). The same checks run in both: `attempt` turns either mode's outcome into a Result.
//
//   hpp_alone <control_flow.vmfb>
#include <rtx.hpp>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#ifdef RTX_NO_EXCEPTIONS
static_assert(std::is_same_v<decltype(rtx::Module::load("")), rtx::Result<rtx::Module>>, "calls return Results");
static_assert(std::is_same_v<decltype(rtx::Context().add_device("")), rtx::Result<void>>, "calls return Results");
#else
static_assert(std::is_same_v<decltype(rtx::Module::load("")), rtx::Module>, "calls return values and throw");
static_assert(std::is_same_v<decltype(rtx::Context().add_device("")), void>, "calls return values and throw");
#endif
static_assert(!std::is_copy_constructible_v<rtx::Task> && std::is_nothrow_move_constructible_v<rtx::Task>,
              "a task is move-only");
static_assert(std::is_copy_constructible_v<rtx::AsyncValue> && std::is_nothrow_move_constructible_v<rtx::AsyncValue>,
              "an async value is reference counted");

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("  %-70s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;
}

// The outcome of `f()` as a Result: what it returns without exceptions, what it returns or throws
// with them.
template <typename F>
auto attempt(F&& f) {
#ifdef RTX_NO_EXCEPTIONS
  return f();
#else
  using T = std::invoke_result_t<F>;
  try {
    if constexpr (std::is_void_v<T>) {
      f();
      return rtx::Result<void>();
    } else {
      return rtx::Result<T>(f());
    }
  } catch (const rtx::Error& e) {
    return rtx::Result<T>(e.status());
  }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <control_flow.vmfb>\n", argv[0]);
    return 2;
  }
#ifdef RTX_NO_EXCEPTIONS
  std::printf("hpp_alone (-fno-exceptions, RTX_NO_EXCEPTIONS): rtx %s\n", rtx::version().c_str());
#else
  std::printf("hpp_alone (exceptions): rtx %s\n", rtx::version().c_str());
#endif
  rtx::Result<rtx::Context> bad = attempt([] { return rtx::Context::create(rtx::ContextOptions{"mstd:0", {}, {}}); });
  check(!bad.ok() && bad.status().code() == RTX_STATUS_CODE_INVALID_ARGUMENT &&
            bad.status().to_string().rfind("INVALID_ARGUMENT: ", 0) == 0,
        "Context::create(\"mstd:0\"): INVALID_ARGUMENT");
  rtx::Result<rtx::Context> ctx = attempt([] { return rtx::Context::create(rtx::ContextOptions{"s", {}, {}}); });
  check(ctx.ok() && ctx->parallelism() == 1, "Context::create(\"s\")");

  rtx::Result<rtx::Module> missing = attempt([] { return rtx::Module::load("/nonexistent.vmfb"); });
  check(missing.status().code() == RTX_STATUS_CODE_NOT_FOUND, "a missing module file: NOT_FOUND");
  rtx::Result<rtx::Module> module = attempt([&] { return rtx::Module::load(argv[1]); });
  check(module.ok() && attempt([&] { return ctx->add_module(*module); }).ok(), "load and add control_flow.vmfb");
  rtx::Result<std::vector<rtx::AsyncValue>> sum =
      attempt([&] { return ctx->invoke_sync("sum_to_n", {rtx::AsyncValue::of(10)}); });
  check(sum.ok() && attempt([&] { return sum->at(0).get<std::int32_t>(); }).value_or(0) == 45, "sum_to_n(10) = 45");
  check(attempt([&] { return sum->at(0).get<float>(); }).status().code() == RTX_STATUS_CODE_INVALID_ARGUMENT,
        "an i32 read as f32: INVALID_ARGUMENT");

  // A native function that fails through its Result, in either mode.
  rtx::Result<rtx::NativeModule> native = attempt([] {
    return rtx::NativeModule::Builder("checked")
        .function("sqrt_floor",
                  [](std::int32_t x) -> rtx::Result<std::int32_t> {
                    if (x < 0) {
                      return rtx::Status(RTX_STATUS_CODE_OUT_OF_RANGE, "negative");
                    }
                    std::int32_t r = 0;
                    while ((r + 1) * (r + 1) <= x) {
                      ++r;
                    }
                    return r;
                  })
        .build();
  });
  check(native.ok() && attempt([&] { return ctx->add_module(*native); }).ok(), "a native module of a lambda");
  rtx::Result<std::vector<rtx::AsyncValue>> root =
      attempt([&] { return ctx->invoke_sync("checked.sqrt_floor", {rtx::AsyncValue::of(50)}); });
  check(root.ok() && attempt([&] { return root->at(0).get<std::int32_t>(); }).value_or(0) == 7, "sqrt_floor(50) = 7");
  rtx::Result<std::vector<rtx::AsyncValue>> negative =
      attempt([&] { return ctx->invoke_sync("checked.sqrt_floor", {rtx::AsyncValue::of(-1)}); });
  check(negative.status().code() == RTX_STATUS_CODE_OUT_OF_RANGE && negative.status().message().find("negative") != std::string::npos,
        "sqrt_floor(-1): the Result's OUT_OF_RANGE");

  check(attempt([&] { return ctx->register_kernel("cpp.twice", [](std::int32_t x) { return 2 * x; }); }).ok() &&
            attempt([&] { return ctx->register_kernel("cpp.twice", [](rtx::KernelFrame&) {}); }).status().code() ==
                RTX_STATUS_CODE_ALREADY_EXISTS,
        "kernels from lambdas, a name registered once");

  const std::vector<double> data{0.5, 1.5, 2.5};
  rtx::Result<rtx::BufferView> view = attempt([&] { return rtx::BufferView::from(data, {3}); });
  check(view.ok() && view->element_type() == rtx::ElementType::f64 &&
            attempt([&] { return view->to_vector<double>(); }).value_or({}) == data,
        "a tensor of std::vector<double> reads back");
  check(attempt([&] { return rtx::BufferView::from(data, {4}); }).status().code() == RTX_STATUS_CODE_INVALID_ARGUMENT,
        "3 elements for shape {4}: INVALID_ARGUMENT");

  std::printf("hpp_alone: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
