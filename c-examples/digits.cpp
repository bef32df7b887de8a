// digits: the digit classifier of models/digits, from C++ through the installed <rtx.hpp>.
//
//   digits <path to models/digits>
//
// Classifies digit_0.npy ... digit_9.npy on local-task: each image goes in as a tensor made from a
// std::vector<float>, a continuation picks the class once the probabilities are ready, and every
// probability is checked against predictions.txt, what iree-run-module printed for the same input
// (recorded by models/digits/build.sh). The exit status is 0 only if all ten digits are classified
// as themselves with IREE's probabilities.
#include <rtx.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The pixels of a version-1 .npy file of float32 ('<f4'), or nothing if it is not one.
std::vector<float> read_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 8, "\x93NUMPY\x01\x00", 8) != 0) {
    return {};
  }
  const std::size_t start = 10 + static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  if (start > bytes.size() || bytes.find("'<f4'") >= start) {
    return {};
  }
  std::vector<float> pixels((bytes.size() - start) / sizeof(float));
  std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(start), bytes.end(), reinterpret_cast<char*>(pixels.data()));
  return pixels;
}

// The numbers of one line iree-run-module printed: "1x10xf32=[p0 p1 ... p9]".
std::vector<float> parse_printed(const std::string& line) {
  std::istringstream numbers(line.substr(line.find('[') + 1));
  std::vector<float> values;
  for (float value = 0; numbers >> value;) {
    values.push_back(value);
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <path to models/digits>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream printed(dir + "/predictions.txt");
  int failures = 0;
  try {
    rtx::Context ctx;
    ctx.add_device("local-task");
    rtx::Module mod = rtx::Module::load(dir + "/mlp.vmfb");
    ctx.add_module(mod);
    for (int d = 0; d < 10; ++d) {
      std::vector<float> pixels = read_npy(dir + "/digit_" + std::to_string(d) + ".npy");
      rtx::BufferView x = rtx::BufferView::from(pixels, {1, 64});
      std::vector<rtx::AsyncValue> out = ctx.invoke("predict", {rtx::AsyncValue(x)});
      // The continuation runs where the result is set; it hands the class on through a promise.
      rtx::AsyncValue predicted = rtx::AsyncValue::unavailable();
      out[0].and_then([probabilities = out[0], predicted] {
        if (probabilities.is_error()) {
          predicted.set_error(probabilities.status());
          return;
        }
        std::vector<float> p = probabilities.get<rtx::BufferView>().to_vector<float>();
        predicted.set<std::int32_t>(static_cast<std::int32_t>(std::max_element(p.begin(), p.end()) - p.begin()));
      });
      rtx::await(ctx, {out[0], predicted});
      std::vector<float> probs = out[0].get<rtx::BufferView>().to_vector<float>();

      std::string line;
      std::getline(printed, line);
      const std::vector<float> iree = parse_printed(line);
      bool same = iree.size() == probs.size() && probs.size() == 10;
      for (std::size_t i = 0; same && i < probs.size(); ++i) {
        same = std::fabs(probs[i] - iree[i]) <= 1e-5f * std::fabs(iree[i]) + 1e-7f;  // printed to 6 digits
      }
      const std::int32_t label = predicted.get<std::int32_t>();
      std::printf("  digit_%d.npy: class %d (p = %.6f), %s iree-run-module\n", d, static_cast<int>(label),
                  static_cast<double>(probs.at(static_cast<std::size_t>(label))), same ? "as" : "DIFFERENT FROM");
      failures += label == d && same ? 0 : 1;
    }
  } catch (const rtx::Error& e) {
    std::printf("rtx::Error: %s\n", e.what());
    return 1;
  }
  std::printf("digits: %s\n", failures == 0 ? "10 of 10 classified as themselves, as iree-run-module" : "FAILED");
  return failures == 0 ? 0 : 1;
}
