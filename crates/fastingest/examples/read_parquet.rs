//! Reads Parquet from a path, glob or URL and prints what the read did.
//!
//! ```text
//! cargo run --release --example read_parquet -- 'data/*.parquet' [column ...]
//! ```
//! Storage options come from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).

use std::time::Instant;

use fastingest::{read_parquet, ReadOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let source = args
        .next()
        .ok_or("usage: read_parquet SOURCE [COLUMN ...]")?;
    let columns: Vec<String> = args.collect();
    let options = ReadOptions {
        columns: (!columns.is_empty()).then_some(columns),
        ..Default::default()
    };
    let started = Instant::now();
    let table = read_parquet(&[source], &options).await?;
    let secs = started.elapsed().as_secs_f64();
    let s = options.stats.snapshot();
    println!(
        "{} rows x {} columns in {:.3}s; {} requests, {:.1} MB fetched ({:.1} MB/s)",
        table.num_rows(),
        table.schema.fields().len(),
        secs,
        s.requests,
        s.bytes_fetched as f64 / 1e6,
        s.bytes_fetched as f64 / 1e6 / secs
    );
    Ok(())
}
