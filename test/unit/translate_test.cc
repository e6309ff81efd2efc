// Address translation: symmetric address -> peer's copy as mapped here.
#include "lib/heap/symmetric_space.h"

#include <gtest/gtest.h>

namespace hoshmem {
namespace {

struct Fixture : ::testing::Test {
  alignas(64) char heap0[4096], heap1[4096], data0[256], data1[256];
  char *heaps[2] = {heap0, heap1};
  char *datas[2] = {data0, data1};
  SymmetricSpace space;
  void SetUp() override {
    space.heap = {reinterpret_cast<uintptr_t>(heap0), sizeof heap0, heaps};
    space.data = {reinterpret_cast<uintptr_t>(data0), sizeof data0, datas};
  }
};

TEST_F(Fixture, HeapAndDataMapToPeerByOffset) {
  EXPECT_EQ(space.translate(heap0 + 100, 1), heap1 + 100);
  EXPECT_EQ(space.translate(heap0 + 100, 0), heap0 + 100);
  EXPECT_EQ(space.translate(data0 + 8, 1), data1 + 8);
}

TEST_F(Fixture, RoomIsWhatIsLeftInTheSegment) {
  size_t room = 0;
  space.translate(heap0 + 4000, 1, &room);
  EXPECT_EQ(room, 96u);
  space.translate(data0, 0, &room);
  EXPECT_EQ(room, 256u);
}

TEST_F(Fixture, NonSymmetricAddressesAreRejected) {
  char local;
  EXPECT_EQ(space.translate(&local, 1), nullptr);
  EXPECT_EQ(space.translate(heap0 + sizeof heap0, 1), nullptr);  // one past the end
  EXPECT_EQ(space.translate(heap0 - 1, 1), nullptr);
  EXPECT_FALSE(space.is_symmetric(nullptr));
  EXPECT_TRUE(space.is_symmetric(data0 + 255));
}

}  // namespace
}  // namespace hoshmem
