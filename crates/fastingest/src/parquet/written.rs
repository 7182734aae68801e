//! Parquet files written by the `parquet` crate, for unit tests.

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
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

/// The metadata of `file` and the bytes of its first row group's first
/// column chunk (what the decoders are handed).
pub(super) fn first_chunk(file: &Bytes) -> (ParquetMetaData, Bytes) {
    let meta = ParquetMetaDataReader::new().parse_and_finish(file).unwrap();
    let (start, len) = meta.row_group(0).column(0).byte_range();
    let bytes = file.slice(start as usize..(start + len) as usize);
    (meta, bytes)
}

/// The first `rows` rows of `file` as the `parquet` crate reads them, in one
/// batch (what a decoder's output is compared with).
pub(super) fn read_by_crate(file: Bytes, rows: usize) -> RecordBatch {
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .with_batch_size(rows)
        .build()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
}

/// `batch` written with `props`, with its parsed metadata and the file's
/// Parquet schema (what a decoder's leaves are looked up in).
pub(super) fn written_and_parsed(
    batch: &RecordBatch,
    props: WriterProperties,
) -> (
    Bytes,
    ParquetMetaData,
    parquet::schema::types::SchemaDescriptor,
) {
    let file = written(batch, props);
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .unwrap();
    let descr = parquet::arrow::ArrowSchemaConverter::new()
        .convert(&batch.schema())
        .unwrap();
    (file, meta, descr)
}
