#include "io/model_dirs.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>
#include <utility>

namespace hearth::io {

namespace fs = std::filesystem;

namespace {

// "models--Qwen--Qwen3-0.6B" -> "Qwen/Qwen3-0.6B" ("" if not a hub repository folder).
std::string hub_repo_name(const std::string& folder) {
  if (!folder.starts_with("models--")) return "";
  std::string name;
  for (size_t i = 8; i < folder.size(); ++i) {
    const bool separator = folder.compare(i, 2, "--") == 0;
    name += separator ? '/' : folder[i];
    i += separator;
  }
  return name;
}

fs::path current_snapshot(const fs::path& repo) {
  std::error_code ec;
  std::string revision;
  std::ifstream(repo / "refs" / "main") >> revision;
  if (!revision.empty() && fs::is_directory(repo / "snapshots" / revision, ec)) return repo / "snapshots" / revision;
  fs::path newest;
  fs::file_time_type newest_time;
  for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) {
    const auto t = e.last_write_time(ec);
    if (!ec && e.is_directory(ec) && (newest.empty() || t > newest_time)) newest = e.path(), newest_time = t;
  }
  return newest;
}

bool holds_config(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.json", ec);
}

}  // namespace

std::string model_name(const fs::path& dir) {
  const fs::path canonical = fs::weakly_canonical(dir);
  const fs::path snapshots = canonical.parent_path();
  if (snapshots.filename() == "snapshots")
    if (std::string repo = hub_repo_name(snapshots.parent_path().filename().string()); !repo.empty()) return repo;
  std::string name = canonical.filename().string();
  if (name.empty()) name = canonical.parent_path().filename().string();
  return name.empty() ? "model" : name;
}

std::vector<fs::path> find_models(const fs::path& root) {
  if (holds_config(root)) return {root};
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec)) continue;
    if (holds_config(e.path())) {
      found.push_back(e.path());
    } else if (!hub_repo_name(e.path().filename().string()).empty()) {
      const fs::path snapshot = current_snapshot(e.path());
      if (!snapshot.empty() && holds_config(snapshot)) found.push_back(snapshot);
    }
  }
  // By name, each worked out once (model_name resolves the path on disk).
  std::vector<std::pair<std::string, fs::path>> named;
  for (fs::path& p : found) named.emplace_back(model_name(p), std::move(p));
  std::sort(named.begin(), named.end());
  found.clear();
  for (auto& [name, p] : named) found.push_back(std::move(p));
  return found;
}

std::vector<fs::path> default_model_roots() {
  std::vector<fs::path> roots;
  const char* home = std::getenv("HOME");
  if (const char* list = std::getenv("HEARTH_MODELS"); list && *list) {
    std::string s = list;
    for (size_t start = 0; start <= s.size();) {
      const size_t end = std::min(s.find(':', start), s.size());
      if (end > start) roots.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  } else if (home) {
    roots.push_back(fs::path(home) / "models");
  }
  if (const char* hub = std::getenv("HF_HUB_CACHE"); hub && *hub)
    roots.emplace_back(hub);
  else if (const char* hf = std::getenv("HF_HOME"); hf && *hf)
    roots.push_back(fs::path(hf) / "hub");
  else if (home)
    roots.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
  return roots;
}

}  // namespace hearth::io
