// cpp_api: every handle family of rtx.hpp against compiled programs, in the default (exception)
// mode.
//
//   cpp_api <control_flow.vmfb> <bef_kernel.bef> <programs_embedded.vmfb> <elementwise.vmfb (Vulkan)>
//           <native_calls.vmfb>
//
// Modules loaded from a file and from memory, their functions' signatures, bytecode calls with an
// argument set after the call; a native module whose functions are C++ lambdas (scalars, several
// results, a Result error, a thrown rtx::Error) and which is freed with its last context; a
// bytecode module whose imports are lambdas with a per-context state; a BEF
// program running a kernel registered from a lambda; tensor programs called with BufferViews made
// from std::array and std::vector (an i32 add, traced with rtx::Tracing, a matmul, a rank-0 sum,
// a dynamic shape); the
// Vulkan devices listed, opened by index and UUID and running an add. Every result is compared
// with the value computed here; every error with the code the C API documents. Exit status 0 only
// if all hold.
#include <rtx.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("  %-78s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;
}

// Runs `f`, which must throw rtx::Error with `code` (and `needle` in its message).
template <typename F>
void check_throws(rtx::StatusCode code, const char* needle, const std::string& what, F&& f) {
  try {
    f();
    check(false, what + " (no error)");
  } catch (const rtx::Error& e) {
    const bool ok = e.code() == code && e.message().find(needle) != std::string::npos;
    check(ok, what);
    if (!ok) {
      std::printf("    got %s\n", e.what());
    }
  }
}

void modules(const std::string& path) {
  std::printf("bytecode module %s\n", path.c_str());
  rtx::Module module = rtx::Module::load(path);
  for (const rtx::FunctionSignature& f : module.functions()) {
    std::printf("    %s  cconv %s  %s\n", f.name.c_str(), f.calling_convention.c_str(),
                f.declaration ? f.declaration->c_str() : "(no declaration)");
  }
  const std::optional<std::size_t> sum = module.find_function("sum_to_n");
  const rtx::FunctionSignature signature = module.signature(sum.value_or(0));
  check(sum && signature.name == "sum_to_n" && signature.arguments == std::vector<rtx::ValueKind>{RTX_VALUE_KIND_I32} &&
            signature.results == std::vector<rtx::ValueKind>{RTX_VALUE_KIND_I32},
        "sum_to_n: (i32) -> i32");
  check(module.function_name(module.function_count()).empty(), "no function name past the end");
  check_throws(RTX_STATUS_CODE_OUT_OF_RANGE, "", "signature past the end: OUT_OF_RANGE",
               [&] { (void)module.signature(module.function_count()); });
  const std::array<std::uint8_t, 64> zeros{};
  check_throws(RTX_STATUS_CODE_DATA_LOSS, "offset", "64 zero bytes: DATA_LOSS, the message naming the offset",
               [&] { (void)rtx::Module::from_memory(zeros.data(), zeros.size()); });
  check_throws(RTX_STATUS_CODE_NOT_FOUND, "", "a missing file: NOT_FOUND",
               [] { (void)rtx::Module::load("/nonexistent/module.vmfb"); });

  for (const char* queue : {"s", "mstd:2,2"}) {
    rtx::Context ctx(rtx::ContextOptions{queue, nullptr, nullptr});
    ctx.add_module(module);
    std::vector<rtx::AsyncValue> sum_out = ctx.invoke_sync("sum_to_n", {rtx::AsyncValue::of(10)});
    check(sum_out.size() == 1 && sum_out[0].get<std::int32_t>() == 45, std::string(queue) + ": sum_to_n(10) = 45");

    rtx::AsyncValue start = rtx::AsyncValue::unavailable();
    std::vector<rtx::AsyncValue> steps = ctx.invoke("module.collatz_steps", {start});
    ctx.quiesce();
    const bool waited = !steps[0].is_available();
    start.set<std::int64_t>(27);
    steps[0].await(ctx);
    check(waited && steps[0].get<std::int32_t>() == 111, std::string(queue) + ": collatz_steps(27 set later) = 111");

    check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "", "two arguments to sum_to_n: INVALID_ARGUMENT",
                 [&] { (void)ctx.invoke("sum_to_n", {rtx::AsyncValue::of(1), rtx::AsyncValue::of(2)}); });
    check_throws(RTX_STATUS_CODE_NOT_FOUND, "", "an unknown function: NOT_FOUND",
                 [&] { (void)ctx.invoke("no_such_function", {}); });
    check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "", "reading an i32 result as f32: INVALID_ARGUMENT",
                 [&] { (void)sum_out[0].get<float>(); });

    // A function without results: invoke_sync still reports its failure.
    rtx::Context failing(rtx::ContextOptions{queue, nullptr, nullptr});
    failing.add_module(rtx::Module::load(path.substr(0, path.find_last_of('/') + 1) + "failures.vmfb"));
    check(failing.invoke_sync("require_positive", {rtx::AsyncValue::of(3)}).empty(),
          std::string(queue) + ": require_positive(3) returns nothing");
    check_throws(RTX_STATUS_CODE_FAILED_PRECONDITION, "x must be positive",
                 std::string(queue) + ": require_positive(-2) throws the program's failure",
                 [&] { (void)failing.invoke_sync("require_positive", {rtx::AsyncValue::of(-2)}); });
  }
}

// Counts how many copies of a native module's lambdas are alive.
struct Token {};

void native_module() {
  std::printf("native module of C++ lambdas\n");
  auto token = std::make_shared<Token>();
  {
    const double factor = 2.5;
    rtx::NativeModule host =
        rtx::NativeModule::Builder("host", 1)
            .function("mix", [factor, token](std::int64_t n, double x) { return static_cast<double>(n) * factor + x; })
            .function("divmod",
                      [](std::int32_t a, std::int32_t b) -> std::tuple<std::int32_t, std::int32_t> {
                        return {a / b, a % b};
                      })
            .function("fail",
                      [](std::int32_t code) -> rtx::Result<std::int32_t> {
                        return rtx::Status(static_cast<rtx::StatusCode>(code), "host.fail failed as asked");
                      })
            .function("checked_div",
                      [](std::int32_t a, std::int32_t b) -> std::int32_t {
                        if (b == 0) {
                          throw rtx::Error(RTX_STATUS_CODE_OUT_OF_RANGE, "division by zero");
                        }
                        return a / b;
                      })
            .build();
    check(host.name() == "host" && host.functions().size() == 4, "the module has its name and 4 functions");
    rtx::Context ctx;
    ctx.add_module(host);
    host = rtx::NativeModule();  // the context keeps the module alive
    check(token.use_count() == 2, "the context keeps the lambdas alive");

    auto mixed = ctx.invoke_sync("host.mix", {rtx::AsyncValue::of<std::int64_t>(4), rtx::AsyncValue::of(0.25)});
    check(mixed[0].get<double>() == 10.25, "host.mix(4, 0.25) = 10.25 (factor 2.5, captured)");
    auto quotient = ctx.invoke_sync("host.divmod", {rtx::AsyncValue::of(17), rtx::AsyncValue::of(5)});
    check(quotient.size() == 2 && quotient[0].get<std::int32_t>() == 3 && quotient[1].get<std::int32_t>() == 2,
          "host.divmod(17, 5) = (3, 2): a tuple is two results");
    auto failed = ctx.invoke("host.fail", {rtx::AsyncValue::of<std::int32_t>(RTX_STATUS_CODE_OUT_OF_RANGE)});
    rtx::await(ctx, failed);
    const rtx::Status status = failed[0].status();
    check(status.code() == RTX_STATUS_CODE_OUT_OF_RANGE &&
              status.message().find("host.fail failed as asked") != std::string::npos,
          "host.fail: a Result's status is the call's error");
    check_throws(RTX_STATUS_CODE_OUT_OF_RANGE, "division by zero", "a thrown rtx::Error fails the call with its code",
                 [&] { (void)ctx.invoke_sync("host.checked_div", {rtx::AsyncValue::of(1), rtx::AsyncValue::of(0)}); });
    auto divided = ctx.invoke_sync("host.checked_div", {rtx::AsyncValue::of(12), rtx::AsyncValue::of(4)});
    check(divided[0].get<std::int32_t>() == 3, "host.checked_div(12, 4) = 3");
  }
  check(token.use_count() == 1, "the lambdas are freed with the last context");
  check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "`dup.f`", "a duplicate function name: INVALID_ARGUMENT naming it", [] {
    (void)rtx::NativeModule::Builder("dup").function("f", [] {}).function("f", [] {}).build();
  });
}

// Calls of the host module in one context: its per-context state.
struct HostCalls {
  std::int32_t count = 0;
};

void imports(const std::string& path) {
  std::printf("a bytecode module importing C++ lambdas: %s\n", path.c_str());
  rtx::NativeModule host =
      rtx::NativeModule::Builder("host")
          .state<HostCalls>()
          .function("add",
                    [](HostCalls& calls, std::int32_t a, std::int32_t b) -> rtx::Result<std::int32_t> {
                      ++calls.count;
                      if ((b > 0 && a > std::numeric_limits<std::int32_t>::max() - b) ||
                          (b < 0 && a < std::numeric_limits<std::int32_t>::min() - b)) {
                        return rtx::Status(RTX_STATUS_CODE_OUT_OF_RANGE, "host.add overflowed");
                      }
                      return a + b;
                    })
          .function("scale",
                    [](HostCalls& calls, std::int64_t a, float f) {
                      ++calls.count;
                      return std::make_tuple(a * 3, f * 0.5f);
                    })
          .function("later",
                    [](HostCalls& calls, std::int32_t a) {
                      ++calls.count;
                      return a * 2;
                    })
          .function("calls", [](HostCalls& calls) { return calls.count; })
          .build();
  check(host.functions().size() == 4, "the module lists its 4 functions");
  rtx::Module module = rtx::Module::load(path);
  rtx::Context first(rtx::ContextOptions{"mstd:2,2", nullptr, nullptr});
  rtx::Context second(rtx::ContextOptions{"s", nullptr, nullptr});
  check_throws(RTX_STATUS_CODE_NOT_FOUND, "`host`", "the bytecode module needs the host module first",
               [&] { first.add_module(module); });
  for (const rtx::Context& ctx : {first, second}) {
    ctx.add_module(host);
    ctx.add_module(module);
  }
  auto ten = first.invoke_sync("add_then_later", {rtx::AsyncValue::of(2), rtx::AsyncValue::of(3)});
  check(ten[0].get<std::int32_t>() == 10, "add_then_later(2, 3) = (2 + 3) * 2 through two imported lambdas");
  auto scaled = first.invoke_sync("native_calls.scale", {rtx::AsyncValue::of<std::int64_t>(7), rtx::AsyncValue::of(3.0f)});
  check(scaled[0].get<std::int64_t>() == 21 && scaled[1].get<float>() == 1.5f, "scale(7, 3.0) = (21, 1.5): a tuple result");
  check(first.invoke_sync("call_missing", {rtx::AsyncValue::of(1)})[0].get<std::int32_t>() == -1,
        "an optional import the module lacks stays unresolved");
  check_throws(RTX_STATUS_CODE_OUT_OF_RANGE, "host.add overflowed", "an imported lambda's error fails the caller", [&] {
    (void)first.invoke_sync("add_then_later", {rtx::AsyncValue::of(std::numeric_limits<std::int32_t>::max()),
                                               rtx::AsyncValue::of(1)});
  });
  auto twelve = second.invoke_sync("add_then_later", {rtx::AsyncValue::of(1), rtx::AsyncValue::of(5)});
  check(twelve[0].get<std::int32_t>() == 12, "the same module in a second context");
  check(first.invoke_sync("host.calls", {})[0].get<std::int32_t>() == 4 &&
            second.invoke_sync("host.calls", {})[0].get<std::int32_t>() == 2,
        "each context has its own state: 4 calls in the first, 2 in the second");
  check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "takes a state", "a function of another state type is refused", [] {
    (void)rtx::NativeModule::Builder("other").state<HostCalls>().function("f", [](Token&) {}).build();
  });
}

void bef_kernel(const std::string& path) {
  std::printf("BEF program with a kernel written as a lambda: %s\n", path.c_str());
  rtx::Context ctx(rtx::ContextOptions{"mstd:2,2", nullptr, nullptr});
  rtx::Module module = rtx::Module::load(path);
  check_throws(RTX_STATUS_CODE_NOT_FOUND, "my.scale.i32", "before the kernel is registered: NOT_FOUND naming it",
               [&] { ctx.add_module(module); });
  // x * factor, checking the string attribute; an overflow fails the kernel by throwing.
  ctx.register_kernel("my.scale.i32", [](rtx::KernelFrame& frame) {
    const std::int64_t factor = frame.attr_i64("factor");
    if (frame.attr_string("label") != "triple") {
      frame.report_error("my.scale.i32: unexpected label");
      return;
    }
    const std::int64_t scaled = frame.arg(0).get<std::int32_t>() * factor;
    if (scaled > std::numeric_limits<std::int32_t>::max() || scaled < std::numeric_limits<std::int32_t>::min()) {
      throw rtx::Error(RTX_STATUS_CODE_OUT_OF_RANGE, "my.scale.i32: the product overflows i32");
    }
    frame.set_result(0, rtx::AsyncValue::of(static_cast<std::int32_t>(scaled)));
  });
  check_throws(RTX_STATUS_CODE_ALREADY_EXISTS, "", "a kernel name is registered once",
               [&] { ctx.register_kernel("my.scale.i32", [](rtx::KernelFrame&) {}); });
  ctx.add_module(module);
  check(ctx.invoke_sync("bef_kernel.scale_plus_two", {rtx::AsyncValue::of(14)})[0].get<std::int32_t>() == 44,
        "scale_plus_two(14) = 14 * 3 + 2 = 44");
  rtx::AsyncValue later = rtx::AsyncValue::unavailable();
  std::vector<rtx::AsyncValue> out = ctx.invoke("scale_plus_two", {later});
  later.set<std::int32_t>(5);
  rtx::await(ctx, out);
  check(out[0].get<std::int32_t>() == 17, "scale_plus_two(5 set later) = 17");
  check_throws(RTX_STATUS_CODE_INTERNAL, "the product overflows i32", "the lambda's exception reaches the result",
               [&] { (void)ctx.invoke_sync("scale_plus_two", {rtx::AsyncValue::of(std::numeric_limits<std::int32_t>::max())}); });

  // The same kernel as a function of its argument, returning its result (or a Result's error).
  rtx::Context typed;
  typed.register_kernel("my.scale.i32", [](std::int32_t x) -> rtx::Result<std::int32_t> {
    if (x > std::numeric_limits<std::int32_t>::max() / 3) {
      return rtx::Status(RTX_STATUS_CODE_OUT_OF_RANGE, "x * 3 overflows");
    }
    return x * 3;
  });
  typed.add_module(module);
  check(typed.invoke_sync("scale_plus_two", {rtx::AsyncValue::of(14)})[0].get<std::int32_t>() == 44,
        "a kernel written as int32_t(int32_t): scale_plus_two(14) = 44");
  check_throws(RTX_STATUS_CODE_INTERNAL, "OUT_OF_RANGE: x * 3 overflows", "its Result's error reaches the result",
               [&] { (void)typed.invoke_sync("scale_plus_two", {rtx::AsyncValue::of(1 << 30)}); });
  rtx::Context wrong;
  wrong.register_kernel("my.scale.i32", [](std::int32_t a, std::int32_t b) { return a * b; });
  wrong.add_module(module);
  check_throws(RTX_STATUS_CODE_INTERNAL, "takes 2 arguments", "a kernel of the wrong arity fails, saying so",
               [&] { (void)wrong.invoke_sync("scale_plus_two", {rtx::AsyncValue::of(1)}); });
}

void tensors(const std::string& path) {
  std::printf("tensor programs %s on local-sync\n", path.c_str());
  const std::array<std::int32_t, 6> a{1, 2, 3, 4, 5, 6};
  const std::vector<std::int32_t> b{10, 20, 30, 40, 50, 60};
  rtx::BufferView va = rtx::BufferView::from(a, {2, 3});
  check(va.element_type() == rtx::ElementType::i32 && va.shape() == std::vector<std::int64_t>{2, 3} &&
            va.byte_length() == 24 && va.element_count() == 6 && va.dim(2) == -1,
        "BufferView::from(std::array<int32_t, 6>, {2, 3}): i32, 2x3, 24 bytes");
  check(va.to_vector<std::uint32_t>().at(5) == 6u, "i32 elements read as uint32_t (same width)");
  check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "0x10000020", "i32 elements read as float: INVALID_ARGUMENT",
               [&] { (void)va.to_vector<float>(); });
  check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "", "6 elements for a 2x2 shape: INVALID_ARGUMENT",
               [&] { (void)rtx::BufferView::from(b, {2, 2}); });
  check(rtx::AsyncValue(va).get<rtx::BufferView>() == va, "an async value holds the view itself");

  rtx::Context ctx(rtx::ContextOptions{"s", nullptr, nullptr});
  rtx::Module module = rtx::Module::load(path);
  check_throws(RTX_STATUS_CODE_FAILED_PRECONDITION, "", "a tensor module needs a device first",
               [&] { ctx.add_module(module); });
  ctx.add_device("local-sync");
  ctx.add_module(module);

  std::vector<rtx::AsyncValue> sum;
  {
    // The call traced: the file holds its dispatch as a complete event of category "dispatch".
    rtx::Tracing tracing{"cpp_api_trace.json"};
    check_throws(RTX_STATUS_CODE_FAILED_PRECONDITION, "already active", "a second tracing session: FAILED_PRECONDITION",
                 [] { rtx::Tracing again{"cpp_api_trace_2.json"}; });
    sum = ctx.invoke_sync("add", {rtx::AsyncValue(va), rtx::AsyncValue(rtx::BufferView::from(b, {2, 3}))});
    tracing.end();
  }
  std::ifstream trace("cpp_api_trace.json");
  const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  check(text.find("\"traceEvents\"") != std::string::npos && text.find("\"cat\":\"dispatch\"") != std::string::npos,
        "rtx::Tracing wrote the call's dispatch to cpp_api_trace.json");
  check(sum[0].get<rtx::BufferView>().to_vector<std::int32_t>() == std::vector<std::int32_t>{11, 22, 33, 44, 55, 66},
        "add(2x3 i32, 2x3 i32) element by element");

  std::vector<float> lhs(32), rhs(32);
  for (std::size_t i = 0; i < 32; ++i) {
    lhs[i] = static_cast<float>(i % 7) - 3.0f;
    rhs[i] = static_cast<float>(i % 5) * 0.5f;
  }
  auto product = ctx.invoke_sync(
      "matmul", {rtx::AsyncValue(rtx::BufferView::from(lhs, {4, 8})), rtx::AsyncValue(rtx::BufferView::from(rhs.data(), {8, 4}))});
  const rtx::BufferView c = product[0].get<rtx::BufferView>();
  std::vector<float> got = c.to_vector<float>();
  bool same = c.shape() == std::vector<std::int64_t>{4, 4} && got.size() == 16;
  for (std::size_t i = 0; same && i < 4; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      float expected = 0;
      for (std::size_t k = 0; k < 8; ++k) {
        expected += lhs[i * 8 + k] * rhs[k * 4 + j];
      }
      same = same && got[i * 4 + j] == expected;  // small integers and halves: exact
    }
  }
  check(same, "matmul(4x8, 8x4) as computed here");

  std::vector<std::int32_t> m(15);
  for (std::size_t i = 0; i < m.size(); ++i) {
    m[i] = static_cast<std::int32_t>(i * i);
  }
  const rtx::BufferView total = ctx.invoke_sync("sum", {rtx::AsyncValue(rtx::BufferView::from(m, {3, 5}))})[0]
                                    .get<rtx::BufferView>();
  check(total.rank() == 0 && total.to_vector<std::int32_t>() == std::vector<std::int32_t>{1015},
        "sum(3x5 of i*i) = 1015, a rank-0 tensor");

  const std::vector<float> v{1.0f, -2.0f, 0.5f};
  auto scaled = ctx.invoke_sync("scale_dynamic", {rtx::AsyncValue(rtx::BufferView::from(v, {3})), rtx::AsyncValue::of(4.0f)});
  check(scaled[0].get<rtx::BufferView>().to_vector<float>() == std::vector<float>{4.0f, -8.0f, 2.0f},
        "scale_dynamic(tensor<?xf32> of 3, 4.0)");
  check_throws(RTX_STATUS_CODE_INVALID_ARGUMENT, "", "a 3x2 tensor for add's 2x3: the program's INVALID_ARGUMENT",
               [&] { (void)ctx.invoke_sync("add", {rtx::AsyncValue(rtx::BufferView::from(a, {3, 2})), rtx::AsyncValue(va)}); });
}

void vulkan(const std::string& path) {
  const std::vector<rtx::VulkanDeviceInfo> devices = rtx::VulkanDevice::enumerate();
  std::printf("%zu Vulkan device(s)\n", devices.size());
  for (const rtx::VulkanDeviceInfo& d : devices) {
    std::printf("    [%zu] %s (driver %s, API %u.%u, %llu MiB device-local)\n", d.index, d.name.c_str(), d.driver.c_str(),
                (d.api_version >> 22) & 0x7Fu, (d.api_version >> 12) & 0x3FFu,
                static_cast<unsigned long long>(d.device_local_bytes >> 20));
  }
  check(devices.size() == rtx::VulkanDevice::count(), "enumerate() lists count() devices");
  check_throws(RTX_STATUS_CODE_OUT_OF_RANGE, "", "info past the last device: OUT_OF_RANGE",
               [&] { (void)rtx::VulkanDevice::info(devices.size()); });
  if (devices.empty()) {
    // A skip line, which the test command collects (and under CI=true fails).
    std::printf("SKIP [vulkan-device] c-examples cpp_api: no Vulkan device, the Vulkan part not run\n");
    return;
  }
  rtx::VulkanDevice by_index = rtx::VulkanDevice::create(0);
  rtx::VulkanDevice by_uuid = rtx::VulkanDevice::create(devices[0].uuid);
  rtx::Context ctx;
  ctx.add_device(by_index);
  check_throws(RTX_STATUS_CODE_ALREADY_EXISTS, "", "a second device: ALREADY_EXISTS", [&] { ctx.add_device(by_uuid); });
  ctx.add_module(rtx::Module::load(path));
  const std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> y{0.5f, 0.25f, -1.0f, 8.0f};
  auto sum = ctx.invoke_sync("add", {rtx::AsyncValue(rtx::BufferView::from(x, {4})), rtx::AsyncValue(rtx::BufferView::from(y, {4}))});
  check(sum[0].get<rtx::BufferView>().to_vector<float>() == std::vector<float>{1.5f, 2.25f, 2.0f, 12.0f},
        "add on " + devices[0].name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: %s <control_flow.vmfb> <bef_kernel.bef> <programs_embedded.vmfb> <elementwise.vmfb> "
                 "<native_calls.vmfb>\n",
                 argv[0]);
    return 2;
  }
  std::printf("cpp_api: rtx %s, header %s\n", rtx::version().c_str(), RTX_VERSION);
  try {
    check(rtx::abi_matches(), "the library's ABI is the header's");
    modules(argv[1]);
    native_module();
    imports(argv[5]);
    bef_kernel(argv[2]);
    tensors(argv[3]);
    vulkan(argv[4]);
  } catch (const rtx::Error& e) {
    std::printf("unexpected rtx::Error: %s\n", e.what());
    return 1;
  }
  std::printf("cpp_api: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
