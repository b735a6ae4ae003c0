//! A deterministic pseudo-random sequence for the crate's randomized tests (xorshift64), so
//! that a failure replays from its seed.

/// xorshift64 (Marsaglia, "Xorshift RNGs", 2003: shifts 13, 7, 17). The seed must not be 0.
pub(crate) struct Xorshift(pub u64);

impl Xorshift {
    /// The next 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n` > 0; modulo bias is irrelevant to a test).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
