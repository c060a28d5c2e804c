//! Parquet task tables (the Hugging Face hub's dataset format), read as the CSV table they hold:
//! the file's rows become CSV text (header first) that the table reader then validates exactly
//! as it validates a `.csv`, so the columns, labels, splits, groups and every error are the
//! same. An error's "line N" is the table's: the header is line 1, row `r` (1-based) line
//! `r + 1`. Recognised by its magic bytes (`PAR1` at both ends), like gzip.
//!
//! Codecs: snappy (pyarrow's default), gzip, lz4 everywhere; zstd natively only (it is C).

use crate::{Error, Result};
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

const MAGIC: &[u8] = b"PAR1";

pub(crate) fn is_parquet(bytes: &[u8]) -> bool {
    bytes.len() >= 2 * MAGIC.len() && bytes.starts_with(MAGIC) && bytes.ends_with(MAGIC)
}

/// The file's top-level columns and rows as CSV text.
pub(crate) fn to_csv(file: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    let unreadable = |e: ParquetError| Error::in_file(file, why_unreadable(&e));
    let reader =
        SerializedFileReader::new(bytes::Bytes::copy_from_slice(bytes)).map_err(unreadable)?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let mut out = Vec::with_capacity(bytes.len());
    let header: Vec<&str> = schema
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name())
        .collect();
    write_record(&mut out, &header);
    for row in reader.get_row_iter(None).map_err(unreadable)? {
        let row = row.map_err(unreadable)?;
        let cells: Vec<String> = row.get_column_iter().map(|(_, f)| cell(f)).collect();
        write_record(&mut out, &cells);
    }
    Ok(out)
}

fn why_unreadable(e: &ParquetError) -> String {
    let text = e.to_string();
    match text.split_once("Disabled feature at compile time: ") {
        Some((_, codec)) => format!(
            "the Parquet data is {codec}-compressed, which geneb cannot decompress here (it reads \
             snappy, gzip and lz4, and zstd natively): use the CLI for zstd, or write the file \
             again with pyarrow's default (snappy)"
        ),
        None => format!("not a readable Parquet file ({text})"),
    }
}

/// A value as its CSV cell: text as it is, numbers and booleans as written, null as empty.
fn cell(field: &Field) -> String {
    match field {
        Field::Null => String::new(),
        Field::Str(s) => s.clone(),
        Field::Bytes(b) => String::from_utf8_lossy(b.data()).into_owned(),
        // Display quotes strings only; everything else prints as its value.
        other => other.to_string(),
    }
}

/// One CSV record (RFC 4180: a cell with a comma, quote or line break is quoted).
fn write_record<S: AsRef<str>>(out: &mut Vec<u8>, cells: &[S]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let cell = cell.as_ref();
        if cell.contains([',', '"', '\n', '\r']) {
            out.push(b'"');
            out.extend_from_slice(cell.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(cell.as_bytes());
        }
    }
    out.push(b'\n');
}
