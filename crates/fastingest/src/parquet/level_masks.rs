//! Repetition or definition levels compared 64 at a time: a bit per level
//! entry, for the list builders ([`super::lists`]) to take a block of
//! entries with a few word operations instead of a branch per entry.
//!
//! Why: building a list column's offsets and validity entry by entry was
//! half the CPU of a steady read of `list<struct<a: int32, b:
//! list<int32>>>` (`lists::assemble`, 50 % of the samples). Most entries
//! are one more item of a list that is there; a block's masks find the few
//! that start a list or leave a hole, and the rest is counted.
//!
//! The comparisons work on eight levels a word (SIMD within a register):
//! portable, and levels are bytes below 128 (a column's levels are checked
//! against its most level as they are read, and the builders take no
//! column whose most level is 128 or more), so adding to a byte never
//! carries into the next.

/// Up to 64 level entries, eight to a word, the first lowest; entries past
/// the block's length are zero.
pub(super) struct LevelBlock {
    words: [u64; 8],
}

/// The most level these masks compare (levels are bytes below 128).
pub(super) const MOST_LEVEL: u8 = 127;

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
const LOW_BITS: u64 = 0x0101_0101_0101_0101;

impl LevelBlock {
    /// The entries of `levels` (at most 64, each at most [`MOST_LEVEL`]).
    #[inline(always)]
    pub(super) fn new(levels: &[u8]) -> Self {
        // A whole block as a copy of known length (vector moves): left to
        // a length known only at run time, the copy became a call to
        // `memcpy` per block, 7 % of a `list<int64>` read.
        let bytes = match <[u8; 64]>::try_from(levels) {
            Ok(whole) => whole,
            Err(_) => {
                let mut bytes = [0u8; 64];
                bytes[..levels.len()].copy_from_slice(levels);
                bytes
            }
        };
        let mut words = [0u64; 8];
        for (word, eight) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(eight);
            *word = u64::from_le_bytes(le);
        }
        LevelBlock { words }
    }

    /// A bit for each entry above `level` (entries past the block's length
    /// are zero: never above).
    #[inline(always)]
    pub(super) fn above(&self, level: u8) -> u64 {
        debug_assert!(level <= MOST_LEVEL);
        // A byte x plus (127 - level) reaches 128 exactly when x > level,
        // and stays below 256: no carry into the next byte.
        let add = LOW_BITS * u64::from(MOST_LEVEL - level);
        let mut mask = 0u64;
        for (i, &word) in self.words.iter().enumerate() {
            mask |= u64::from(byte_signs(word.wrapping_add(add))) << (8 * i);
        }
        mask
    }

    /// A bit for each entry at `level` or above (at zero, every bit: callers
    /// keep the block's own).
    #[inline(always)]
    pub(super) fn at_least(&self, level: u8) -> u64 {
        match level.checked_sub(1) {
            Some(below) => self.above(below),
            None => u64::MAX,
        }
    }

    /// A bit for each entry at `level` exactly.
    #[inline(always)]
    pub(super) fn equal(&self, level: u8) -> u64 {
        self.at_least(level) & !self.above(level)
    }
}

/// The high bit of each byte of `word`, as eight bits (byte 0's lowest).
#[inline(always)]
fn byte_signs(word: u64) -> u8 {
    // Each high bit moved to its byte's lowest, then gathered into the top
    // byte by one multiply (every product bit lands in its own place, so
    // nothing carries).
    (((word & HIGH_BITS) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// The bits of `bits` where `keep` is set, moved down in order (the
/// `pext` of BMI2, here by closing up the gaps: a loop per clear bit of
/// `keep`, which most blocks have few or none of).
#[inline(always)]
pub(super) fn kept_bits(bits: u64, keep: u64, len: usize) -> u64 {
    let mut gaps = !keep & super::flat::low_bits(len);
    if gaps == 0 {
        return bits;
    }
    let mut out = bits;
    // From the highest gap down, so that the positions of the lower gaps
    // still hold.
    while gaps != 0 {
        let at = 63 - gaps.leading_zeros() as usize;
        let below = super::flat::low_bits(at);
        out = (out & below) | ((out >> 1) & !below);
        gaps &= below;
    }
    out
}

/// The set bits of `mask`, lowest first.
#[inline(always)]
pub(super) fn set_bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let at = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            at
        })
    })
}

/// Set bits of `mask` below bit `at`.
#[inline(always)]
pub(super) fn ones_below(mask: u64, at: usize) -> usize {
    (mask & super::flat::low_bits(at)).count_ones() as usize
}

/// A small deterministic generator of test inputs (xorshift).
#[cfg(test)]
pub(super) fn test_numbers(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_entry(levels: &[u8], keep: impl Fn(u8) -> bool) -> u64 {
        levels
            .iter()
            .enumerate()
            .fold(0, |mask, (i, &l)| mask | (u64::from(keep(l)) << i))
    }

    #[test]
    fn masks_are_the_comparisons_entry_by_entry() {
        let mut next = test_numbers(7);
        for _ in 0..2_000 {
            let len = (next() % 65) as usize;
            let most = [1u8, 2, 3, 7, 63, 127][(next() % 6) as usize];
            let levels: Vec<u8> = (0..len)
                .map(|_| (next() % (u64::from(most) + 1)) as u8)
                .collect();
            let block = LevelBlock::new(&levels);
            let live = super::super::flat::low_bits(len);
            for level in [0, 1, most / 2, most.saturating_sub(1), most] {
                assert_eq!(block.above(level) & live, by_entry(&levels, |l| l > level));
                assert_eq!(
                    block.at_least(level) & live,
                    by_entry(&levels, |l| l >= level)
                );
                assert_eq!(block.equal(level) & live, by_entry(&levels, |l| l == level));
            }
        }
    }

    #[test]
    fn kept_bits_close_up_the_bits_left_out() {
        let mut next = test_numbers(11);
        for _ in 0..2_000 {
            let len = (next() % 65) as usize;
            let live = super::super::flat::low_bits(len);
            let (bits, keep) = (next() & live, next() & live);
            let mut want = 0u64;
            let mut n = 0;
            for i in set_bits(keep) {
                want |= ((bits >> i) & 1) << n;
                n += 1;
            }
            assert_eq!(
                kept_bits(bits, keep, len) & super::super::flat::low_bits(n),
                want
            );
        }
        assert_eq!(kept_bits(0b1011, u64::MAX, 64), 0b1011);
    }

    #[test]
    fn ones_below_count_the_lower_bits() {
        assert_eq!(ones_below(0b1011_0110, 0), 0);
        assert_eq!(ones_below(0b1011_0110, 3), 2);
        assert_eq!(ones_below(u64::MAX, 64), 64);
    }
}
