// Where checkpoints live on disk and what to call them: plain directories
// holding config.json, and the Hugging Face hub cache's layout
// (models--ORG--NAME/snapshots/REVISION/), as `huggingface-cli download`
// leaves it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace hearth::io {

// A checkpoint's name: "ORG/NAME" for a hub cache snapshot, else the
// directory's own name.
std::string model_name(const std::filesystem::path& dir);

// The checkpoints in root: root itself if it holds config.json, else each
// entry that does, and each hub cache repository's current snapshot (the
// one refs/main names, else the newest), sorted by name.
std::vector<std::filesystem::path> find_models(const std::filesystem::path& root);

// Where models are looked for by default: $HEARTH_MODELS (':'-separated),
// else ~/models; and the hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub).
std::vector<std::filesystem::path> default_model_roots();

}  // namespace hearth::io
