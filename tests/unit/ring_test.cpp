#include "core/ring.hpp"

#include <gtest/gtest.h>

#include <deque>

using respool::core::ring;

TEST(ring, starts_at_capacity_eight_or_min_rounded_up_to_a_power_of_two) {
    EXPECT_EQ(ring<int>().capacity(), 8u);
    EXPECT_EQ(ring<int>(3).capacity(), 8u);
    EXPECT_EQ(ring<int>(9).capacity(), 16u);
    EXPECT_EQ(ring<int>(64).capacity(), 64u);
}

TEST(ring, push_back_pop_front_is_fifo_across_wraparound_and_growth) {
    ring<int> r;
    std::deque<int> ref;
    int next = 0;
    // Interleave so head wraps many times, then grow while wrapped.
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < round % 7 + 1; ++i) {
            r.push_back(next);
            ref.push_back(next++);
        }
        for (int i = 0; i < round % 5 && !ref.empty(); ++i) {
            ASSERT_EQ(r.pop_front(), ref.front());
            ref.pop_front();
        }
        ASSERT_EQ(r.size(), ref.size());
        for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(r.at(i), ref[i]);
    }
    EXPECT_GT(r.capacity(), 8u);
    EXPECT_EQ(r.capacity() & (r.capacity() - 1), 0u) << "capacity stays a power of two";
}

TEST(ring, both_ends_behave_like_a_deque) {
    ring<int> r;
    std::deque<int> ref;
    unsigned x = 12345;
    for (int i = 0; i < 10000; ++i) {
        x = x * 1103515245u + 12345u;
        switch ((x >> 16) % 4) {
        case 0:
            r.push_back(i);
            ref.push_back(i);
            break;
        case 1:
            r.push_front(i);
            ref.push_front(i);
            break;
        case 2:
            if (!ref.empty()) {
                ASSERT_EQ(r.pop_front(), ref.front());
                ref.pop_front();
            }
            break;
        case 3:
            if (!ref.empty()) {
                ASSERT_EQ(r.pop_back(), ref.back());
                ref.pop_back();
            }
            break;
        }
        ASSERT_EQ(r.size(), ref.size());
        if (!ref.empty()) {
            ASSERT_EQ(r.front(), ref.front());
        }
    }
}
