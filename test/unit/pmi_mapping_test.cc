// The PMI client's reading of a launcher's PMI_process_mapping (which ranks share a node).
#include <gtest/gtest.h>

#include "lib/bootstrap/bootstrap_impl.h"

using hoshmem::parse_process_mapping;
using V = std::vector<int>;

TEST(PmiMapping, OneNode) { EXPECT_EQ(parse_process_mapping("(vector,(0,1,4))", 4), V({0, 0, 0, 0})); }

TEST(PmiMapping, BlockRepeatsUntilEveryRankHasANode) {
  // Hydra's answer for 2 ranks on one host: one rank on node 0, repeated.
  EXPECT_EQ(parse_process_mapping("(vector,(0,1,1))", 2), V({0, 0}));
  // Two nodes of two (block), and round-robin over two nodes (cyclic).
  EXPECT_EQ(parse_process_mapping("(vector,(0,2,2))", 4), V({0, 0, 1, 1}));
  EXPECT_EQ(parse_process_mapping("(vector,(0,2,1))", 4), V({0, 1, 0, 1}));
}

TEST(PmiMapping, SeveralBlocks) {
  EXPECT_EQ(parse_process_mapping("(vector,(0,1,3),(1,2,1))", 5), V({0, 0, 0, 1, 2}));
}

TEST(PmiMapping, MalformedGivesNothing) {
  for (const char *bad : {"", "(vector)", "(vector,(0,1))", "(vector,(0,0,4))", "(vector,(0,1,x))",
                          "(block,(0,1,4))", "(vector,(0,1,4)"})
    EXPECT_TRUE(parse_process_mapping(bad, 4).empty()) << bad;
}
