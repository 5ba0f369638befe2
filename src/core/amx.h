// Intel AMX: eight tile registers (16 rows of 64 bytes each) and a matrix
// unit that multiplies whole tiles, 16x more multiply-adds per instruction
// than AVX-512. Prefill uses it where the CPU has it; Linux hands the tile
// state to a process only on request (arch_prctl), asked once here.
#pragma once

#include <cstdint>

namespace hearth {

// Tokens per tile: the rows of an activation or accumulator tile. Calls with
// fewer tokens than this stay on the AVX-512 kernels.
constexpr int kAmxTokens = 16;
// n tokens rounded up to whole tiles: the tile paths read activations so.
constexpr int64_t amx_padded_tokens(int64_t n) {
  return (n + kAmxTokens - 1) / kAmxTokens * kAmxTokens;
}

// Whether this CPU has AMX with BF16 multiplies and the OS granted the tile
// state. HEARTH_NO_AMX=1 says no, so the AVX-512 paths can be compared.
bool amx_bf16_available();
// The same for INT8 multiplies (signed activations x unsigned codes).
bool amx_int8_available();

#if defined(__x86_64__)
// Configures all eight tiles as 16 rows x 64 bytes, the one shape the
// kernels use. Tile state is per thread: call before a thread's tile
// instructions, and amx_release() when it is done with them.
void amx_configure();
void amx_release();
#endif

}  // namespace hearth
