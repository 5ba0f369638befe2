// hearth: the command-line front door. Each subcommand lives in its own file.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"serve", hearth::cli::cmd_serve, "serve the model over HTTP (OpenAI API) with a chat page"},
    {"generate", hearth::cli::cmd_generate, "generate text from a prompt"},
    {"embed", hearth::cli::cmd_embed, "embed texts: pooled, normalized final hidden states, as JSON lines"},
    {"transcribe", hearth::cli::cmd_transcribe, "speech to text with a Whisper checkpoint"},
    {"chat", hearth::cli::cmd_chat, "chat with the model in the terminal"},
    {"bench", hearth::cli::cmd_bench, "measure prefill/decode speed and memory bandwidth"},
    {"models", hearth::cli::cmd_models, "the checkpoints on this machine and whether hearth can serve them"},
    {"fit", hearth::cli::cmd_fit, "whether a model fits in memory, and the context and streams serve would give it"},
    {"mkmodel", hearth::cli::cmd_mkmodel, "write a random-weight checkpoint in a published layout"},
    {"tokenize", hearth::cli::cmd_tokenize, "encode text to token ids (or --decode ids) with a tokenizer"},
    {"template", hearth::cli::cmd_template, "render a model's chat template for a conversation"},
    {"mel", hearth::cli::cmd_mel, "decode audio to 16 kHz and write its Whisper log-mel spectrogram (.npy)"},
    {"vad", hearth::cli::cmd_vad, "find the speech in audio with Silero VAD (spans as JSON)"},
};

void usage() {
  std::fprintf(stderr, "usage: hearth <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(stderr, "  %-10s %s\n", c.name, c.help);
  std::fprintf(stderr, "\nRun 'hearth <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) {
      try {
        return c.run(argc - 2, argv + 2);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "hearth %s: error: %s\n", c.name, e.what());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "hearth: unknown command '%s'\n\n", argv[1]);
  usage();
  return 2;
}
