// hearth models: the checkpoints on this machine and whether hearth can
// serve them, read from their config.json and safetensors headers (nothing
// is loaded). Each row's path is what --model takes.
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "io/model_dirs.h"
#include "io/safetensors.h"
#include "io/model_config.h"
#include "model/whisper.h"

namespace hearth::cli {

namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: hearth models [DIR ...] [--json]\n"
    "  Lists the checkpoints in each DIR (a checkpoint itself, a folder of them, or a\n"
    "  Hugging Face hub cache), and whether hearth can serve each. With no DIR:\n"
    "  $HEARTH_MODELS (':'-separated) or ~/models, and the hub cache ($HF_HUB_CACHE,\n"
    "  $HF_HOME/hub or ~/.cache/huggingface/hub).\n"
    "  --json  one JSON array of objects\n";

struct Listed {
  std::string name, kind, architecture, format, problem;
  fs::path path;
  size_t weight_bytes = 0;
  int64_t context = 0;
};

// MLX quantization as "MLX 4-bit g64" ("mixed" when modules differ), else
// the dtype that holds most of the weights.
std::string format_of(const io::Safetensors& w, const std::optional<io::QuantSpec>& quant, bool mixed) {
  if (quant && quant->bits)
    return "MLX " + std::to_string(quant->bits) + "-bit g" + std::to_string(quant->group_size) + (mixed ? " mixed" : "");
  std::map<DType, size_t> bytes;
  for (const auto& [_, t] : w.tensors()) bytes[t.dtype] += t.nbytes;
  DType most = DType::F32;
  size_t most_bytes = 0;
  for (const auto& [d, n] : bytes)
    if (n > most_bytes) most = d, most_bytes = n;
  return std::string(dtype_name(most));
}

Listed describe(const fs::path& dir) {
  Listed m;
  m.path = dir;
  m.name = io::model_name(dir);
  try {
    if (is_whisper_checkpoint(dir)) {
      m.kind = "speech";
      m.architecture = "whisper";
      const WhisperConfig c = WhisperConfig::load(dir);
      const io::Safetensors w = io::Safetensors::open_dir(dir, io::Safetensors::Use::Metadata);
      m.weight_bytes = w.total_bytes();
      m.format = format_of(w, c.quantization, !c.quant_overrides.empty());
      m.context = c.text_ctx;
      return m;
    }
    m.kind = fs::exists(dir / "modules.json") ? "embedding" : "text";
    const nlohmann::json raw = io::read_json_file(dir / "config.json");
    if (auto a = raw.find("architectures"); a != raw.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
      m.architecture = (*a)[0].get<std::string>();
    const io::ModelConfig c = io::ModelConfig::load(dir);
    const io::Safetensors w = io::Safetensors::open_dir(dir, io::Safetensors::Use::Metadata);
    m.weight_bytes = w.total_bytes();
    m.context = c.max_position_embeddings;
    m.format = format_of(w, c.quantization, !c.quant_overrides.empty());
  } catch (const std::exception& e) {
    m.problem = e.what();
  }
  return m;
}

}  // namespace

int cmd_models(int argc, char** argv) {
  Args args(argc, argv, {"json", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"json", "help"});
  std::vector<fs::path> roots;
  for (const std::string& p : args.positional()) {
    if (!fs::is_directory(p)) throw std::runtime_error("no directory " + p);
    roots.emplace_back(p);
  }
  if (roots.empty()) roots = io::default_model_roots();  // missing ones are skipped

  std::vector<Listed> listed;
  for (const fs::path& root : roots)
    for (const fs::path& dir : io::find_models(root)) listed.push_back(describe(dir));

  if (args.has("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const Listed& m : listed) {
      nlohmann::json j = {{"name", m.name}, {"path", m.path.string()}, {"kind", m.kind},
                          {"architecture", m.architecture}, {"servable", m.problem.empty()}};
      if (m.problem.empty())
        j.update({{"format", m.format}, {"weights_bytes", m.weight_bytes}, {"context", m.context}});
      else
        j["problem"] = m.problem;
      out.push_back(j);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (listed.empty()) {
    std::fprintf(stderr, "hearth models: no checkpoints (a folder with config.json) in");
    for (const fs::path& r : roots) std::fprintf(stderr, " %s", r.c_str());
    std::fprintf(stderr, "\n");
    return 0;
  }
  std::printf("%-32s %-9s %-24s %-18s %9s %8s  %s\n", "NAME", "KIND", "ARCHITECTURE", "FORMAT", "WEIGHTS", "CONTEXT",
              "PATH");
  for (const Listed& m : listed) {
    if (!m.problem.empty()) {
      std::printf("%-32s %-9s %-24s cannot serve: %s\n%34s%s\n", m.name.c_str(), m.kind.c_str(),
                  m.architecture.c_str(), m.problem.c_str(), "", m.path.c_str());
      continue;
    }
    std::printf("%-32s %-9s %-24s %-18s %9s %8lld  %s\n", m.name.c_str(), m.kind.c_str(), m.architecture.c_str(),
                m.format.c_str(), size_text(double(m.weight_bytes)).c_str(), (long long)m.context, m.path.c_str());
  }
  return 0;
}

}  // namespace hearth::cli
