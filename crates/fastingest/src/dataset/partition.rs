//! Hive partitioning: `key=value` directories in a file's path become
//! columns holding one value throughout the file.
//!
//! Values are URL-decoded and `__HIVE_DEFAULT_PARTITION__` is null. Unless a
//! key's type is given, it is inferred as pyarrow's `pq.read_table` does:
//! `int32` when every value is one, else `string`, as a dictionary (int32
//! indices) whose values are the key's values in order of first appearance.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    new_null_array, Array, ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray,
    UInt32Array,
};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema};

use crate::error::{Error, Result};
use crate::filter::cast_literal;
use crate::source::SourceFile;

/// The value Hive writes for a null key.
const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// How partition keys are read from file paths.
#[derive(Debug, Clone, Default)]
pub enum Partitioning {
    /// Hive `key=value` directories below a directory or prefix the read
    /// names; none for files named directly or by a glob (pyarrow's and
    /// polars' default).
    #[default]
    Auto,
    /// No partition columns.
    Off,
    /// Hive `key=value` directories of every file (below its directory or
    /// prefix, else its whole path). Keys named here take these types (the
    /// values are cast from their text); the others are inferred.
    Hive(Vec<(String, DataType)>),
}

/// The partition keys of a read's files: one column per key, in order of
/// first appearance, and each file's value of each.
#[derive(Debug)]
pub(crate) struct Partitions {
    /// One field per key (nullable).
    pub fields: Vec<FieldRef>,
    /// Per key, its distinct values (typed), in order of first appearance.
    values: Vec<ArrayRef>,
    /// Whether a key's column is a dictionary over `values` (inferred type).
    dictionary: Vec<bool>,
    /// Per file, per key: its value's index in `values` (`None`: null).
    of_file: Vec<Vec<Option<usize>>>,
}

impl Partitions {
    /// Reads the keys of `files` as `partitioning` says; `None` when no
    /// file has any.
    pub fn discover(files: &[SourceFile], partitioning: &Partitioning) -> Result<Option<Self>> {
        let parsed: Vec<Vec<(String, String)>> = files
            .iter()
            .map(|f| match partitioning {
                Partitioning::Off => Vec::new(),
                Partitioning::Auto if !f.in_directory => Vec::new(),
                _ => hive_segments(&f.path),
            })
            .collect();
        let mut keys: Vec<String> = Vec::new();
        for (k, _) in parsed.iter().flatten() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        if keys.is_empty() {
            return Ok(None);
        }
        let given: HashMap<&str, &DataType> = match partitioning {
            Partitioning::Hive(types) => types.iter().map(|(k, t)| (k.as_str(), t)).collect(),
            _ => HashMap::new(),
        };
        let mut out = Partitions {
            fields: Vec::new(),
            values: Vec::new(),
            dictionary: Vec::new(),
            of_file: vec![vec![None; keys.len()]; files.len()],
        };
        for (k, key) in keys.iter().enumerate() {
            // Distinct non-null texts in order of first appearance.
            let mut texts: Vec<&str> = Vec::new();
            let mut index: HashMap<&str, usize> = HashMap::new();
            for (f, segments) in parsed.iter().enumerate() {
                let Some((_, text)) = segments.iter().find(|(name, _)| name == key) else {
                    continue;
                };
                if text == HIVE_NULL {
                    continue;
                }
                let next = texts.len();
                let i = *index.entry(text.as_str()).or_insert(next);
                if i == next {
                    texts.push(text);
                }
                out.of_file[f][k] = Some(i);
            }
            let text_array: ArrayRef = Arc::new(StringArray::from(texts.clone()));
            let (values, dictionary) = match given.get(key.as_str()) {
                Some(&target) => {
                    let typed = cast_literal(&text_array, target).map_err(|_| {
                        let bad = texts
                            .iter()
                            .find(|t| {
                                let one: ArrayRef = Arc::new(StringArray::from(vec![**t]));
                                cast_literal(&one, target).is_err()
                            })
                            .copied()
                            .unwrap_or_default();
                        Error::InvalidArgument(format!(
                            "partition key {key:?}: the value {bad:?} is not a {target}"
                        ))
                    })?;
                    (typed, false)
                }
                None => match cast_literal(&text_array, &DataType::Int32) {
                    Ok(ints) if !texts.is_empty() => (ints, true),
                    _ => (text_array, true),
                },
            };
            let data_type = if dictionary {
                DataType::Dictionary(
                    Box::new(DataType::Int32),
                    Box::new(values.data_type().clone()),
                )
            } else {
                values.data_type().clone()
            };
            out.fields.push(Arc::new(Field::new(key, data_type, true)));
            out.values.push(values);
            out.dictionary.push(dictionary);
        }
        Ok(Some(out))
    }

    /// Whether `name` is a partition key.
    pub fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name() == name)
    }

    /// Keeps the files `keep` says, in order (the others are pruned).
    pub fn retain_files(&mut self, keep: &[bool]) {
        let mut i = 0;
        self.of_file.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }

    /// Key `k`'s column for file `file`: its value on `rows` rows.
    pub fn column(&self, file: usize, k: usize, rows: usize) -> Result<ArrayRef, ArrowError> {
        let data_type = self.fields[k].data_type();
        let index = self.of_file[file][k];
        if self.dictionary[k] {
            // A null is a null index over the same values, as pyarrow has it.
            let keys = match index {
                Some(i) => Int32Array::from(vec![i as i32; rows]),
                None => Int32Array::new_null(rows),
            };
            let values = Arc::clone(&self.values[k]);
            let dict = DictionaryArray::<arrow_array::types::Int32Type>::try_new(keys, values)?;
            return Ok(Arc::new(dict));
        }
        match index {
            Some(i) => {
                let indices = UInt32Array::from(vec![i as u32; rows]);
                arrow_select::take::take(self.values[k].as_ref(), &indices, None)
            }
            None => Ok(new_null_array(data_type, rows)),
        }
    }

    /// Every file's keys, one row per file, typed as the batches have them
    /// (an inferred key's dictionary holds all its values).
    pub fn per_file(&self) -> Result<RecordBatch, ArrowError> {
        let schema = Arc::new(Schema::new(self.fields.clone()));
        let columns = (0..self.fields.len())
            .map(|k| {
                let index = self.of_file.iter().map(|keys| keys[k]);
                if self.dictionary[k] {
                    let keys: Int32Array = index.map(|i| i.map(|i| i as i32)).collect();
                    let values = Arc::clone(&self.values[k]);
                    let dict =
                        DictionaryArray::<arrow_array::types::Int32Type>::try_new(keys, values)?;
                    Ok(Arc::new(dict) as ArrayRef)
                } else {
                    let indices: UInt32Array = index.map(|i| i.map(|i| i as u32)).collect();
                    arrow_select::take::take(self.values[k].as_ref(), &indices, None)
                }
            })
            .collect::<Result<_, ArrowError>>()?;
        RecordBatch::try_new(schema, columns)
    }

    /// File `file`'s keys as a one-row batch (for deciding filters).
    pub fn known(&self, file: usize) -> Result<RecordBatch, ArrowError> {
        let schema = Arc::new(Schema::new(self.fields.clone()));
        let columns = (0..self.fields.len())
            .map(|k| self.column(file, k, 1))
            .collect::<Result<_, _>>()?;
        RecordBatch::try_new(schema, columns)
    }
}

/// The `key=value` directories of `path` (its last segment is the file
/// name), values URL-decoded.
fn hive_segments(path: &str) -> Vec<(String, String)> {
    let mut segments: Vec<&str> = path.split('/').collect();
    segments.pop();
    segments
        .into_iter()
        .filter_map(|segment| {
            let (key, value) = segment.split_once('=')?;
            if key.is_empty() {
                return None;
            }
            let value = percent_encoding::percent_decode_str(value)
                .decode_utf8()
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| value.to_string());
            Some((key.to_string(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::LocalSource;

    fn file(path: &str, in_directory: bool) -> SourceFile {
        let tmp = std::env::temp_dir().join("fastingest-partition-test");
        std::fs::write(&tmp, b"x").unwrap();
        SourceFile {
            source: Arc::new(LocalSource::open(tmp.clone(), path.to_string()).unwrap()),
            path: path.to_string(),
            in_directory,
            summary: None,
        }
    }

    #[test]
    fn hive_keys_are_decoded_inferred_and_null() {
        let files = [
            file("year=2024/city=New%20York/a.parquet", true),
            file("year=2024/city=2A001/b.parquet", true),
            file("year=__HIVE_DEFAULT_PARTITION__/c.parquet", true),
        ];
        let p = Partitions::discover(&files, &Partitioning::Auto)
            .unwrap()
            .unwrap();
        let types: Vec<String> = p.fields.iter().map(|f| f.data_type().to_string()).collect();
        assert_eq!(
            types,
            ["Dictionary(Int32, Int32)", "Dictionary(Int32, Utf8)"]
        );
        let known = p.known(0).unwrap();
        let city = arrow_cast::cast(known.column(1), &DataType::Utf8).unwrap();
        let city = city.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(city.value(0), "New York");
        assert!(p.known(2).unwrap().column(0).is_null(0));
        assert!(p.known(2).unwrap().column(1).is_null(0));
    }

    #[test]
    fn given_types_are_cast_and_bad_values_named() {
        let files = [file("d=2025-01-02/x=7/a.parquet", false)];
        let given = Partitioning::Hive(vec![("d".into(), DataType::Date32)]);
        let p = Partitions::discover(&files, &given).unwrap().unwrap();
        assert_eq!(p.fields[0].data_type(), &DataType::Date32);
        assert_eq!(p.column(0, 0, 3).unwrap().len(), 3);
        let bad = Partitioning::Hive(vec![("x".into(), DataType::Date32)]);
        let err = Partitions::discover(&files, &bad).unwrap_err().to_string();
        assert!(err.contains("\"x\"") && err.contains("\"7\""), "{err}");
        // Files named directly have no keys unless partitioning is asked for.
        assert!(Partitions::discover(&files, &Partitioning::Auto)
            .unwrap()
            .is_none());
    }
}
