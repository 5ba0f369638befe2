// KvCache's int8 entries: what store() writes, read back through the layout
// core/ops.h documents (decoded here on its own, not by the kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/kv_cache.h"

namespace hearth {
namespace {

// The layout of one layer's keys or values of a block, as ops.h states it.
struct Int8Layout {
  int kv_heads, bt, hd, group;
  size_t codes() const { return size_t(kv_heads) * bt * hd; }
  // (code index, scale index) of head h, position slot, dimension d.
  std::pair<size_t, size_t> key(int h, int slot, int d) const {
    return {(size_t(h) * hd + d) * bt + slot, (size_t(h) * (hd / group) + d / group) * bt + slot};
  }
  std::pair<size_t, size_t> value(int h, int slot, int d) const {
    return {(size_t(h) * bt + slot) * hd + d, (size_t(h) * bt + slot) * (hd / group) + d / group};
  }
};

float decode(const uint8_t* part, const Int8Layout& l, std::pair<size_t, size_t> at) {
  float scale;
  std::memcpy(&scale, part + l.codes() + at.second * sizeof(float), sizeof scale);
  return float(int8_t(part[at.first])) * scale;
}

TEST(KvCacheInt8, StoredEntriesDecodeThroughTheDocumentedLayout) {
  for (int hd : {128, 64, 8}) {  // four, two and one scale groups a head
    const KvCacheShape shape{.layers = 2, .kv_heads = 2, .head_dim = hd, .block_tokens = 32, .dtype = DType::I8};
    const Int8Layout l{2, 32, hd, hd % 32 == 0 ? 32 : hd};
    KvCache kv(shape, 4);
    const int seq = kv.create_sequence();
    ASSERT_TRUE(kv.reserve(seq, 40));
    std::mt19937 rng(hd);
    std::normal_distribution<float> normal;
    std::vector<std::vector<float>> keys, values;  // per (layer, position)
    const int positions[] = {0, 5, 31, 32, 39};
    for (int layer = 0; layer < 2; ++layer)
      for (int pos : positions) {
        std::vector<float> k(size_t(2 * hd)), v(size_t(2 * hd));
        // Each dimension its own magnitude, so every group has its own scale.
        for (int i = 0; i < 2 * hd; ++i) {
          k[size_t(i)] = normal(rng) * float(1 + i / 8 % 7);
          v[size_t(i)] = normal(rng) * float(1 + i / 8 % 5);
        }
        kv.store(layer, seq, pos, k.data(), v.data());
        keys.push_back(k);
        values.push_back(v);
      }
    const size_t part = KvCache::layer_block_bytes(shape);
    size_t n = 0;
    for (int layer = 0; layer < 2; ++layer)
      for (int pos : positions) {
        const uint8_t* block = kv.block_data(kv.blocks(seq)[size_t(pos / 32)]).data();
        const uint8_t* kp = block + size_t(2 * layer) * part;
        const uint8_t* vp = kp + part;
        for (int h = 0; h < 2; ++h)
          for (int d = 0; d < hd; ++d) {
            const int g0 = d / l.group * l.group;
            float kmax = 0, vmax = 0;
            for (int i = g0; i < g0 + l.group; ++i) {
              kmax = std::max(kmax, std::fabs(keys[n][size_t(h * hd + i)]));
              vmax = std::max(vmax, std::fabs(values[n][size_t(h * hd + i)]));
            }
            const float kx = keys[n][size_t(h * hd + d)], vx = values[n][size_t(h * hd + d)];
            // Within half a step of max|x| / 127 (and a float's rounding).
            EXPECT_NEAR(decode(kp, l, l.key(h, pos % 32, d)), kx, kmax / 254 * 1.0001f)
                << "hd " << hd << " layer " << layer << " pos " << pos << " head " << h << " dim " << d;
            EXPECT_NEAR(decode(vp, l, l.value(h, pos % 32, d)), vx, vmax / 254 * 1.0001f)
                << "hd " << hd << " layer " << layer << " pos " << pos << " head " << h << " dim " << d;
          }
        ++n;
      }
  }
}

TEST(KvCacheInt8, ANonFiniteEntryReadsBackAsNaNAndTheOtherGroupsStay) {
  const KvCacheShape shape{.layers = 1, .kv_heads = 1, .head_dim = 64, .block_tokens = 32, .dtype = DType::I8};
  const Int8Layout l{1, 32, 64, 32};
  KvCache kv(shape, 1);
  const int seq = kv.create_sequence();
  ASSERT_TRUE(kv.reserve(seq, 1));
  std::vector<float> k(64, 1.0f), v(64, 2.0f);
  k[3] = NAN;
  v[40] = INFINITY;
  kv.store(0, seq, 0, k.data(), v.data());
  const uint8_t* kp = kv.block_data(kv.blocks(seq)[0]).data();
  const uint8_t* vp = kp + KvCache::layer_block_bytes(shape);
  EXPECT_TRUE(std::isnan(decode(kp, l, l.key(0, 0, 0))));    // the NaN's group
  EXPECT_EQ(decode(kp, l, l.key(0, 0, 40)), 1.0f);            // the other group
  EXPECT_TRUE(std::isnan(decode(vp, l, l.value(0, 0, 33))));  // the infinity's group
  EXPECT_EQ(decode(vp, l, l.value(0, 0, 0)), 2.0f);
}

TEST(KvCacheInt8, AShapeWhoseScalesWouldBeMisalignedIsRefused) {
  EXPECT_THROW(KvCache(KvCacheShape{.layers = 1, .kv_heads = 1, .head_dim = 6, .block_tokens = 3, .dtype = DType::I8}, 1),
               std::invalid_argument);
  EXPECT_NO_THROW(KvCache(KvCacheShape{.layers = 1, .kv_heads = 1, .head_dim = 6, .block_tokens = 3, .dtype = DType::BF16}, 1));
}

}  // namespace
}  // namespace hearth
