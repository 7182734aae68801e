//! Parquet files written by the `parquet` crate, for unit tests.

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::file::properties::WriterProperties;

/// `batch` written as a whole Parquet file with `props`.
pub(super) fn written(batch: &RecordBatch, props: WriterProperties) -> Bytes {
    let mut file = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
    Bytes::from(file)
}
