// Entry points of the hearth subcommands; main.cpp dispatches on argv[1].
#pragma once

namespace hearth::cli {

// Each takes the arguments after the subcommand name and returns the exit code.
int cmd_generate(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_mkmodel(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_fit(int argc, char** argv);
int cmd_models(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_mel(int argc, char** argv);
int cmd_transcribe(int argc, char** argv);
int cmd_vad(int argc, char** argv);

}  // namespace hearth::cli
