//! Copying short strings as fixed-size blocks, shared by the Parquet and
//! ORC string decoders: with a [`BLOCK`] of slack past the last entry of a
//! dictionary (and past the room of a values buffer), every value up to a
//! block long is copied as one block of 16, 32 or 64 bytes, whatever its
//! own length, with no branch on it.

/// The most bytes copied as one fixed-size block.
pub(crate) const BLOCK: usize = 64;

/// Pads a dictionary's entries (`bytes`, end to end; `ends`: `0`, then each
/// entry's end) with a [`BLOCK`] of zeros, so that each can be copied as a
/// whole block, and returns the longest entry's length (which block size
/// the copies can use).
pub(crate) fn pad_entries(bytes: &mut Vec<u8>, ends: &[i32]) -> usize {
    bytes.resize(bytes.len() + BLOCK, 0);
    ends.windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_padded_and_the_longest_is_found() {
        let mut bytes = b"abcdefghij".to_vec();
        assert_eq!(pad_entries(&mut bytes, &[0, 3, 3, 10]), 7);
        assert_eq!(bytes.len(), 10 + BLOCK);
        assert!(bytes[10..].iter().all(|&b| b == 0));
        let mut none = Vec::new();
        assert_eq!(pad_entries(&mut none, &[0]), 0);
    }
}
