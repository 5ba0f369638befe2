// The table of one target's tile kernels and the run_tile that picks from it,
// shared by the per-target kernel bodies (int8_matmul_avx512.cpp,
// int8_matmul_avx2-inl.h, int8_matmul_neon-inl.h): each includes this inside
// its own namespace, after its tile_kernel template, kMaxTokens and
// tile_codes (no include guard, on purpose).

using TileKernel = void (*)(const Int8Packed&, const uint8_t*, int64_t, const QuantizedActivations&,
                            int64_t, float*);
using ByTokens = std::array<TileKernel, kMaxTokens>;

// tile_kernel for 1..kMaxTokens tokens, indexed by token count - 1.
template <int Bits, int GS, size_t... I>
constexpr ByTokens token_kernels(std::index_sequence<I...>) {
  return {&tile_kernel<Bits, int(I) + 1, GS>...};
}

// Indexed by group size / 64 (32, 64, 128 -> 0, 1, 2), then token count - 1.
template <int Bits>
constexpr std::array<ByTokens, 3> group_kernels() {
  constexpr auto tokens = std::make_index_sequence<kMaxTokens>();
  return {token_kernels<Bits, 32>(tokens), token_kernels<Bits, 64>(tokens),
          token_kernels<Bits, 128>(tokens)};
}

// Indexed by the layout's bits / 2 - 2 (4, 6, 8 -> 0, 1, 2).
constexpr std::array<std::array<ByTokens, 3>, 3> kKernels{group_kernels<4>(), group_kernels<6>(),
                                                          group_kernels<8>()};

void run_tile(const Int8Packed& w, int64_t tile, const QuantizedActivations& a, int64_t n_tokens,
              float* y) {
  const TileCodes codes = tile_codes(w, tile, n_tokens);
  const ByTokens& kernels = kKernels[size_t(codes.bits / 2 - 2)][size_t(w.group_size / 64)];
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens)
    kernels[size_t(std::min<int64_t>(kMaxTokens, n_tokens - t0) - 1)](w, codes.data, tile, a, t0,
                                                                      y);
}
