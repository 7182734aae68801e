//! One schema over a dataset's files, and each file's batches put under it.
//!
//! Without `schema=`, the dataset's columns are every file's, in order of
//! first appearance, then the partition keys (or the columns asked for, in
//! that order); a column a file lacks is null there, and one column with two
//! types is an error naming both files. With `schema=`, that schema is the
//! dataset's: columns are cast to it, and those it lacks are left out.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_cast::cast;
use arrow_schema::{FieldRef, Schema, SchemaRef};

use super::Partitions;
use crate::error::{Error, Result};
use crate::pipeline::{Planned, ReadOptions};

/// Where a dataset column comes from.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// The file's batches (null where a file lacks it).
    File,
    /// Partition key `k`.
    Key(usize),
}

/// A dataset's schema, and how to put one file's batches under it.
#[derive(Debug, Clone)]
pub(crate) struct DatasetSchema {
    /// The schema of every batch returned.
    pub schema: SchemaRef,
    origins: Vec<Origin>,
    partitions: Option<Arc<Partitions>>,
}

impl DatasetSchema {
    /// The files' partition keys, if they have any.
    pub fn partitions(&self) -> Option<&Partitions> {
        self.partitions.as_deref()
    }

    /// The schema of reading `files` (in order) with `options`.
    /// `requested_order`: whether `columns` come back in the order asked
    /// (Parquet) or in file order (ORC, as pyarrow's reader), partition keys
    /// then following.
    pub fn unify(
        options: &ReadOptions,
        partitions: Option<Arc<Partitions>>,
        files: &[&dyn Planned],
        requested_order: bool,
    ) -> Result<Self> {
        let Some(first) = files.first() else {
            return Err(Error::InvalidArgument("no files to read".into()));
        };
        let first_location = first.source().location().to_string();
        let key_of = |name: &str| {
            partitions
                .as_ref()
                .and_then(|p| p.fields.iter().position(|f| f.name() == name))
        };
        let metadata = first.schema().metadata().clone();
        let fields: Vec<FieldRef> = match &options.schema {
            Some(given) => match &options.columns {
                None => given.fields().iter().cloned().collect(),
                Some(columns) => columns
                    .iter()
                    .map(|c| {
                        given
                            .field_with_name(c)
                            .map(|f| Arc::new(f.clone()))
                            .map_err(|_| Error::ColumnNotFound {
                                location: "schema".into(),
                                column: c.clone(),
                                available: names(given),
                            })
                    })
                    .collect::<Result<_>>()?,
            },
            None => {
                let held: Vec<Vec<String>> = files.iter().map(|f| f.column_names()).collect();
                check_columns_held(options, &held, partitions.as_deref(), &first_location)?;
                let in_files = union_of_files(files, &|n| key_of(n).is_some())?;
                let keys: Vec<FieldRef> = partitions
                    .iter()
                    .flat_map(|p| p.fields.iter().cloned())
                    .collect();
                match &options.columns {
                    None => in_files.into_iter().chain(keys).collect(),
                    Some(columns) => {
                        let all: Vec<FieldRef> = in_files.iter().chain(&keys).cloned().collect();
                        if requested_order {
                            let mut seen = Seen::default();
                            columns
                                .iter()
                                .filter_map(|c| find(&all, c, &mut seen))
                                .collect()
                        } else {
                            // The files' order, then the keys in the order asked.
                            let asked = |f: &FieldRef| columns.contains(f.name());
                            let keys = keys.into_iter().filter(asked).collect::<Vec<_>>();
                            let mut seen = Seen::default();
                            let keys = columns.iter().filter_map(|c| find(&keys, c, &mut seen));
                            in_files.into_iter().chain(keys).collect()
                        }
                    }
                }
            }
        };
        let origins = fields
            .iter()
            .map(|f| key_of(f.name()).map_or(Origin::File, Origin::Key))
            .collect();
        Ok(DatasetSchema {
            schema: Arc::new(Schema::new_with_metadata(fields, metadata)),
            origins,
            partitions,
        })
    }

    /// A batch of file `file` (its position in the read) under the
    /// dataset's schema: its columns by name, cast where `schema=` says,
    /// null where it lacks them, and its partition keys' values.
    pub fn conform(&self, file: usize, batch: RecordBatch, location: &str) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.origins.len());
        // The batch's columns by name, each name's first last (popped
        // first): the n-th column of a name is the batch's n-th of it (two
        // struct fields asked for by path may share one).
        let schema = batch.schema();
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (at, f) in schema.fields().iter().enumerate().rev() {
            by_name.entry(f.name().as_str()).or_default().push(at);
        }
        for (field, origin) in self.schema.fields().iter().zip(&self.origins) {
            let column = match (origin, &self.partitions) {
                (Origin::Key(k), Some(p)) => p
                    .column(file, *k, rows)
                    .map_err(|e| Error::from_arrow(location, e))?,
                _ => match by_name.get_mut(field.name().as_str()).and_then(Vec::pop) {
                    Some(at) => Arc::clone(batch.column(at)),
                    None => new_null_array(field.data_type(), rows),
                },
            };
            let column = if column.data_type() == field.data_type() {
                column
            } else {
                cast(&column, field.data_type()).map_err(|e| Error::SchemaMismatch {
                    location: location.to_string(),
                    first: "the dataset schema".into(),
                    detail: format!(
                        "column {:?} is {} and cannot be cast to {}: {e}",
                        field.name(),
                        column.data_type(),
                        field.data_type()
                    ),
                })?
            };
            columns.push(column);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)
            .map_err(|e| Error::from_arrow(location, e))
    }
}

fn names(schema: &Schema) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// A requested column among `fields`: by name, or a dotted struct path by
/// its last part (the field the format returns for it). Columns asked for
/// in turn take the fields of one name in turn (`seen`): `a.f` and `b.f`
/// are both returned as `f`, the first and the second.
fn find(fields: &[FieldRef], column: &str, seen: &mut Seen) -> Option<FieldRef> {
    let name = match fields.iter().any(|f| f.name() == column) {
        true => column,
        false => column.rsplit_once('.')?.1,
    };
    let at = nth_named(fields, name, seen.next(name))?;
    Some(Arc::clone(&fields[at]))
}

/// How many columns of each name were met so far.
#[derive(Default)]
struct Seen(Vec<(String, usize)>);

impl Seen {
    /// How many of `name` were met before this one (which now counts).
    fn next(&mut self, name: &str) -> usize {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => {
                *count += 1;
                *count - 1
            }
            None => {
                self.0.push((name.to_string(), 1));
                0
            }
        }
    }
}

/// The position of the `nth` (from 0) of `fields` named `name`.
fn nth_named(fields: &[FieldRef], name: &str, nth: usize) -> Option<usize> {
    let mut named = fields.iter().enumerate().filter(|(_, f)| f.name() == name);
    named.nth(nth).map(|(at, _)| at)
}

/// Every file's returned columns (partition keys left out), in order of
/// first appearance; a column with two types is an error naming both files.
fn union_of_files(files: &[&dyn Planned], is_key: &dyn Fn(&str) -> bool) -> Result<Vec<FieldRef>> {
    let mut fields: Vec<FieldRef> = Vec::new();
    let mut defined_in: Vec<&str> = Vec::new();
    for file in files {
        let location = file.source().location();
        // A file's n-th column of a name is the dataset's n-th of it.
        let mut seen = Seen::default();
        for field in file.schema().fields() {
            if is_key(field.name()) {
                continue;
            }
            match nth_named(&fields, field.name(), seen.next(field.name())) {
                Some(j) if !fields[j].data_type().equals_datatype(field.data_type()) => {
                    return Err(Error::SchemaMismatch {
                        location: location.to_string(),
                        first: defined_in[j].to_string(),
                        detail: format!(
                            "column {:?} is {} there and {} here",
                            field.name(),
                            fields[j].data_type(),
                            field.data_type()
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    fields.push(Arc::clone(field));
                    defined_in.push(location);
                }
            }
        }
    }
    Ok(fields)
}

/// Checks that each column `options` asks for or filters on is held by one
/// of the files (`held`: each file's top-level columns) or is a partition
/// key. Each file is planned with the columns it holds (of several files,
/// one may lack a column: null there), so a column none holds, a typo, is
/// found only once all are known; the error lists every column there is.
/// A given schema says which columns there are: a read under one is
/// checked against it instead.
pub(crate) fn check_columns_held(
    options: &ReadOptions,
    held: &[Vec<String>],
    partitions: Option<&Partitions>,
    location: &str,
) -> Result<()> {
    if options.schema.is_some() {
        return Ok(());
    }
    let is_held = |name: &str| {
        held.iter().any(|h| h.iter().any(|c| c == name)) || partitions.is_some_and(|p| p.has(name))
    };
    let filtered = options.filter.iter().flat_map(|f| f.columns());
    let asked = options.columns.iter().flatten().cloned();
    // A dotted path into a struct is held where its top-level column is.
    let asked = asked.filter(|c| !is_held(c) && !c.split('.').next().is_some_and(is_held));
    match filtered.filter(|c| !is_held(c)).chain(asked).next() {
        None => Ok(()),
        Some(column) => Err(Error::ColumnNotFound {
            location: location.to_string(),
            column,
            available: every_column(held, partitions),
        }),
    }
}

/// Every column a read could ask for: each file's (`held`), in order of
/// first appearance, then the partition keys.
fn every_column(held: &[Vec<String>], partitions: Option<&Partitions>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in held.iter().flatten() {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    let keys = partitions.iter().flat_map(|p| p.fields.iter());
    names.extend(keys.map(|k| k.name().clone()));
    names
}
