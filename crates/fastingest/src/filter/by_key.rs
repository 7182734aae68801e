//! A dictionary column's answers row by row: each distinct value is
//! compared once, and each row takes the answer of the value its key
//! indexes.
//!
//! What `arrow_select::take` gives, faster. `take` looks each answer up as
//! a bit (a shift, a test and a set per row: 18 % of a filter on a string
//! column of 5,000 symbols read as keys). Where few values match (or few
//! miss), the keys are compared with theirs instead, many keys at once;
//! otherwise each value's answer is a byte, looked up per row.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, BooleanArray, PrimitiveArray};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::{ArrowError, DataType};

/// Each row's answer: that of the value its key (of `keys`) indexes in
/// `per_value`, null where the key or that answer is null.
pub(super) fn answers_by_key(
    per_value: &BooleanArray,
    keys: &dyn Array,
) -> Result<BooleanArray, ArrowError> {
    Ok(match keys.data_type() {
        DataType::Int8 => by_key::<Int8Type>(per_value, keys.as_primitive()),
        DataType::Int16 => by_key::<Int16Type>(per_value, keys.as_primitive()),
        DataType::Int32 => by_key::<Int32Type>(per_value, keys.as_primitive()),
        DataType::Int64 => by_key::<Int64Type>(per_value, keys.as_primitive()),
        DataType::UInt8 => by_key::<UInt8Type>(per_value, keys.as_primitive()),
        DataType::UInt16 => by_key::<UInt16Type>(per_value, keys.as_primitive()),
        DataType::UInt32 => by_key::<UInt32Type>(per_value, keys.as_primitive()),
        DataType::UInt64 => by_key::<UInt64Type>(per_value, keys.as_primitive()),
        _ => arrow_select::take::take(per_value, keys, None)?
            .as_boolean()
            .clone(),
    })
}

fn by_key<K: ArrowDictionaryKeyType>(
    per_value: &BooleanArray,
    keys: &PrimitiveArray<K>,
) -> BooleanArray {
    let entries = per_value.len();
    // A byte per value, and a last 0 that a null row's key (any number,
    // negative or past the values) is clamped to: no branch per row.
    let table = |bit: &dyn Fn(usize) -> bool| -> Vec<u8> {
        (0..entries).map(|i| u8::from(bit(i))).chain([0]).collect()
    };
    // 64 rows at a time: their answers' bytes looked up (independent
    // loads), then packed 8 to a byte by a multiply (a shift and an `or`
    // per row made one chain of dependent steps).
    let gather = |table: &[u8]| -> BooleanBuffer {
        let keys = keys.values();
        let mut words = Vec::with_capacity(keys.len().div_ceil(64));
        let mut bytes = [0u8; 64];
        for chunk in keys.chunks(64) {
            for (byte, key) in bytes.iter_mut().zip(chunk) {
                *byte = table[key.to_usize().unwrap_or(entries).min(entries)];
            }
            bytes[chunk.len()..].fill(0);
            let mut word = 0u64;
            for (i, eight) in bytes.chunks_exact(8).enumerate() {
                word |= packed_byte(eight) << (8 * i);
            }
            words.push(word);
        }
        BooleanBuffer::new(Buffer::from_vec(words), 0, keys.len())
    };
    let answers = per_value.values();
    let trues = answers.count_set_bits();
    let no_null_value = per_value.null_count() == 0;
    let values = if no_null_value && trues <= COMPARED {
        // A few values match (`==`, a short `in`): each key is compared
        // with their keys, many at once.
        compared(keys, answers.set_indices(), false)
    } else if no_null_value && entries - trues <= COMPARED {
        // All but a few (`!=`, `not in`).
        let falses = (0..entries).filter(|&i| !answers.value(i));
        compared(keys, falses, true)
    } else {
        gather(&table(&|i| per_value.value(i)))
    };
    let valid = match per_value.nulls() {
        Some(nulls) if nulls.null_count() > 0 => {
            let valid = gather(&table(&|i| nulls.is_valid(i)));
            Some(match keys.nulls() {
                Some(keyed) => &valid & keyed.inner(),
                None => valid,
            })
        }
        _ => keys.nulls().map(|n| n.inner().clone()),
    };
    BooleanArray::new(values, valid.map(NullBuffer::new))
}

/// The most values whose keys [`compared`] takes: past that, a lookup per
/// row costs less than the comparisons.
const COMPARED: usize = 16;

/// A bit per key of `keys`: set where it is one of `wanted` (positions in
/// the dictionary), or, `negated`, where it is none of them. Written so that
/// the compiler compares a vector of keys at a time.
fn compared<K: ArrowDictionaryKeyType>(
    keys: &PrimitiveArray<K>,
    wanted: impl Iterator<Item = usize>,
    negated: bool,
) -> BooleanBuffer {
    let wanted: Vec<K::Native> = wanted.map(K::Native::usize_as).collect();
    let keys = keys.values();
    let mut words = Vec::with_capacity(keys.len().div_ceil(64));
    let mut bytes = [0u8; 64];
    for chunk in keys.chunks(64) {
        bytes.fill(0);
        for &key in &wanted {
            for (byte, k) in bytes.iter_mut().zip(chunk) {
                *byte |= u8::from(*k == key);
            }
        }
        let mut word = 0u64;
        for (i, eight) in bytes.chunks_exact(8).enumerate() {
            word |= packed_byte(eight) << (8 * i);
        }
        if negated {
            word = !word;
        }
        words.push(word);
    }
    BooleanBuffer::new(Buffer::from_vec(words), 0, keys.len())
}

/// Eight bytes of 0 or 1 as the low 8 bits of a word (the first byte the
/// lowest bit): each byte's bit is moved to the top byte by one multiply.
fn packed_byte(eight: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(eight);
    u64::from_le_bytes(word).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{DictionaryArray, Int32Array, Int8Array, StringArray, UInt16Array};

    use super::*;

    /// `answers_by_key` and `take` on the same keys give the same array.
    fn check(per_value: BooleanArray, keys: &dyn Array) {
        let want = arrow_select::take::take(&per_value, keys, None).unwrap();
        let got = answers_by_key(&per_value, keys).unwrap();
        assert_eq!(got.to_data(), want.as_boolean().to_data());
    }

    #[test]
    fn each_row_takes_its_values_answer_as_take_would() {
        let answers = BooleanArray::from(vec![Some(true), Some(false), None, Some(true)]);
        // Lengths about a word, null keys, null answers, every key type
        // width.
        for n in [0usize, 1, 63, 64, 65, 200] {
            let keys: Int32Array = (0..n)
                .map(|i| (i % 7 != 3).then_some((i * 5 % 4) as i32))
                .collect();
            check(answers.clone(), &keys);
            let narrow: Int8Array = (0..n).map(|i| Some((i % 4) as i8)).collect();
            check(answers.clone(), &narrow);
            let unsigned: UInt16Array = (0..n)
                .map(|i| (i % 5 != 0).then_some((i % 4) as u16))
                .collect();
            check(answers.clone(), &unsigned);
            let all_valid = BooleanArray::from(vec![true, false, false, true]);
            check(all_valid, &keys);
            // One, none, all but one and all of a dictionary of 20 values:
            // compared with the keys, not looked up.
            let wide: Int32Array = (0..n)
                .map(|i| (i % 9 != 4).then_some((i * 7 % 20) as i32))
                .collect();
            for trues in [
                vec![5],
                vec![],
                (0..20).filter(|&i| i != 3).collect(),
                (0..20).collect(),
            ] {
                let answers: BooleanArray = (0..20).map(|i| Some(trues.contains(&i))).collect();
                check(answers, &wide);
            }
        }
    }

    #[test]
    fn eight_bytes_pack_to_their_bits_in_order() {
        for bits in 0u16..256 {
            let bytes: Vec<u8> = (0..8).map(|i| ((bits >> i) & 1) as u8).collect();
            assert_eq!(packed_byte(&bytes), u64::from(bits));
        }
    }

    #[test]
    fn a_null_rows_key_may_point_anywhere() {
        // Decoders leave any number under a null key; it must not be read.
        let keys = Int32Array::new(
            vec![0, 99, -5, 1].into(),
            Some(NullBuffer::from(vec![true, false, false, true])),
        );
        let answers = BooleanArray::from(vec![true, false]);
        let got = answers_by_key(&answers, &keys).unwrap();
        let want = BooleanArray::from(vec![Some(true), None, None, Some(false)]);
        assert_eq!(got, want);
        // A dictionary built over such keys is what a filter column is.
        let values = Arc::new(StringArray::from(vec!["a", "b"]));
        let dictionary = DictionaryArray::<Int32Type>::try_new(keys, values).unwrap();
        assert_eq!(dictionary.len(), 4);
    }
}
