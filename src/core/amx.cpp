#include "core/amx.h"

#include <cstdint>
#include <cstdlib>

#include "core/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hearth {

#if defined(__x86_64__)
namespace {

constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: ask for an XSAVE feature
constexpr long kXfeatureXtiledata = 18;     // the tile data registers

// CPUID leaf 7 EDX: AMX-BF16 is bit 22, AMX-TILE 24, AMX-INT8 25.
bool cpu_has_amx(int bit) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ((d >> 24) & 1) && ((d >> bit) & 1);
}

// Asks Linux for the tile state once for the process; false if refused or
// switched off (the tile paths' epilogues are AVX-512, so HEARTH_SIMD below
// it switches them off too).
bool tiles_granted() {
  static const bool granted = !std::getenv("HEARTH_NO_AMX") && cpu_features().avx512bw &&
                              syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return granted;
}

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace

bool amx_bf16_available() {
  static const bool available = cpu_has_amx(22) && tiles_granted();
  return available;
}

bool amx_int8_available() {
  static const bool available = cpu_has_amx(25) && tiles_granted();
  return available;
}

__attribute__((target("amx-tile"))) void amx_configure() {
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) c.bytes_per_row[t] = 64, c.rows[t] = 16;
    return c;
  }();
  _tile_loadconfig(&config);
}

__attribute__((target("amx-tile"))) void amx_release() {
  _tile_release();
}
#else
bool amx_bf16_available() {
  return false;
}
bool amx_int8_available() {
  return false;
}
#endif

}  // namespace hearth
