//! Run length encoding version 1 of ORC integers, as Hive 0.11 wrote them
//! (a stripe's `DIRECT` and `DICTIONARY` encodings; pyarrow writes it for
//! `file_version="0.11"`): the integer streams of every column fastingest
//! decodes in such files go through here ([`super::integers::Rle`]).
//!
//! A run is a control byte, then:
//! - `0..=127`: `control + 3` values from a base (a varint) by a fixed
//!   delta (the signed byte before the base);
//! - `-128..=-1` (as a signed byte): `-control` values as they are, each a
//!   varint.
//!
//! Values of signed columns are zigzag encoded.

use super::integers::{unzigzag, varint};

/// The most bytes a run takes: its control byte and 128 varints of 10
/// bytes.
pub(super) const LONGEST_RUN: usize = 1 + 128 * 10;

/// Decodes the run at the start of `data` (not empty) into `out` (values
/// of a `signed` column are zigzag encoded); returns its length in bytes.
/// `integers::rle_runs` walks a stream's runs.
pub(super) fn rle_v1_run(data: &[u8], signed: bool, out: &mut Vec<i64>) -> Result<usize, String> {
    let value = |bytes: &[u8]| {
        varint(bytes).map(|(v, used)| (if signed { unzigzag(v) } else { v as i64 }, used))
    };
    let control = data[0] as i8;
    if control >= 0 {
        let length = control as i64 + 3;
        let Some(&delta) = data.get(1) else {
            return Err("a run is cut short".into());
        };
        let delta = delta as i8 as i64;
        let (base, used) = value(&data[2..])?;
        // Wrapping, as the writer's 64-bit sums wrapped.
        out.extend((0..length).map(|i| base.wrapping_add(i * delta)));
        Ok(2 + used)
    } else {
        let mut at = 1;
        for _ in 0..control.unsigned_abs() {
            let (v, used) = value(&data[at..])?;
            out.push(v);
            at += used;
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use crate::orc::integers::{rle_runs, Rle};

    fn decode(bytes: &[u8], signed: bool, count: usize) -> Result<Vec<i64>, String> {
        let mut out = Vec::new();
        rle_runs(Rle::V1, bytes, "data", count, signed, |run, _| {
            out.extend_from_slice(run);
            Ok(())
        })?;
        Ok(out)
    }

    // The examples of the ORC specification's run length encoding v1
    // section.
    #[test]
    fn the_specifications_examples_decode() {
        // 100 sevens: a run of 100 (control 97), delta 0, base 7.
        assert_eq!(decode(&[0x61, 0x00, 0x07], false, 100), Ok(vec![7; 100]));
        // 100 to 1: a run of 100, delta -1, base 100.
        assert_eq!(
            decode(&[0x61, 0xff, 0x64], false, 100),
            Ok((1..=100).rev().collect())
        );
        // Literals 2, 3, 6, 7, 11.
        assert_eq!(
            decode(&[0xfb, 0x02, 0x03, 0x06, 0x07, 0x0b], false, 5),
            Ok(vec![2, 3, 6, 7, 11])
        );
    }

    #[test]
    fn signed_values_are_zigzag_and_runs_join_and_cut_to_the_count() {
        // Literals -1, 1, -2 (zigzag 1, 2, 3); a run of 3 from -3 (zigzag
        // 5) by +2; a 300-byte value (two-byte varint, zigzag 600).
        let bytes = [0xfd, 0x01, 0x02, 0x03, 0x00, 0x02, 0x05, 0xff, 0xd8, 0x04];
        assert_eq!(decode(&bytes, true, 7), Ok(vec![-1, 1, -2, -3, -1, 1, 300]));
        assert_eq!(decode(&bytes, true, 4), Ok(vec![-1, 1, -2, -3]));
    }

    #[test]
    fn a_stream_cut_short_is_refused_saying_where() {
        assert_eq!(
            decode(&[0x61, 0x00, 0x07], false, 101),
            Err("the stream ends after 100 of 101 values".into())
        );
        let cut = decode(&[0xfb, 0x02, 0x03], false, 5).unwrap_err();
        assert!(
            cut.contains("a varint is cut short") && cut.contains("byte 0 of the data"),
            "{cut}"
        );
        let no_delta = decode(&[0x05], false, 8).unwrap_err();
        assert!(no_delta.contains("a run is cut short"), "{no_delta}");
    }
}
