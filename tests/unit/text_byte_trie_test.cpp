// ByteTrie: longest-prefix matching and the node walk, including keys that
// are prefixes of one another and bytes above 0x7f.
#include "text/tokenizer/byte_trie.h"

#include <gtest/gtest.h>

namespace hearth::text {
namespace {

TEST(ByteTrie, LongestPrefixPrefersTheLongestKey) {
  ByteTrie t;
  EXPECT_TRUE(t.empty());
  t.insert("<s>", 1);
  t.insert("<s>x", 2);
  t.insert("\xe2\x96\x81", 3);  // U+2581, as SentencePiece pieces start
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.longest_prefix("a<s>xy", 1), 4u);
  EXPECT_EQ(t.longest_prefix("<s>y", 0), 3u);
  EXPECT_EQ(t.longest_prefix("<s", 0), 0u);  // a path, not a key
  EXPECT_EQ(t.longest_prefix("\xe2\x96\x81hi", 0), 3u);
  EXPECT_EQ(t.longest_prefix("abc", 3), 0u);  // past the end
}

TEST(ByteTrie, WalkFindsIdsAlongThePath) {
  ByteTrie t;
  t.insert("ab", 7);
  t.insert("abc", 9);
  t.insert("ab", 8);  // a later id for the same key wins
  int32_t node = ByteTrie::kRoot;
  node = t.child(node, 'a');
  ASSERT_GE(node, 0);
  EXPECT_EQ(t.id(node), -1);
  node = t.child(node, 'b');
  EXPECT_EQ(t.id(node), 8);
  node = t.child(node, 'c');
  EXPECT_EQ(t.id(node), 9);
  EXPECT_EQ(t.child(node, 'd'), -1);
}

}  // namespace
}  // namespace hearth::text
