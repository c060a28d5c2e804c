//! Parquet task tables (the Hugging Face hub's dataset format), read as the CSV table they hold:
//! the file's rows become CSV lines (header first) that the table reader then validates exactly
//! as it validates a `.csv`, so the columns, labels, splits, groups and every error are the
//! same. An error's "line N" is the table's: the header is line 1, row `r` (1-based) line
//! `r + 1`. Recognised by its magic bytes (`PAR1` at both ends), like gzip.
//!
//! The rows stream, one row group at a time, and a line is made only when the table reader asks
//! for it. Before any page is read, every page header of every column chunk is read here and
//! checked against the file and against the memory budget (`crate::budget`): a header states
//! sizes and counts the Parquet library would allocate for without asking.
//!
//! Codecs: snappy (pyarrow's default), gzip, lz4 everywhere; zstd natively only (it is C).

use crate::budget;
use crate::{Error, Result};
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::record::reader::RowIter;
use std::io::BufRead;

const MAGIC: &[u8] = b"PAR1";

pub(crate) fn is_parquet(bytes: &[u8]) -> bool {
    bytes.len() >= 2 * MAGIC.len() && bytes.starts_with(MAGIC) && bytes.ends_with(MAGIC)
}

/// What reading one row group holds per leaf column besides its pages: the row reader's
/// batches of 1024 values, levels and cells.
const COLUMN_READER_BYTES: u64 = 1024 * 64;

/// A dictionary entry once decoded (a byte array's shared-buffer handle).
const DICTIONARY_ENTRY_BYTES: u64 = 32;

/// A page while its rows are read: the decompressed page, its decoded values, and the cells
/// and line made of them.
const PAGE_COPIES: u64 = 3;

/// The file's top-level columns and rows as CSV lines, made as they are read.
pub(crate) fn csv_lines(file: &str, bytes: &[u8]) -> Result<Box<dyn BufRead>> {
    let unreadable = |e: ParquetError| Error::in_file(file, why_unreadable(&e));
    check_footer(bytes).map_err(|why| {
        Error::in_file(
            file,
            format!("not a readable Parquet file (its footer: {why})"),
        )
    })?;
    let data = bytes::Bytes::copy_from_slice(bytes);
    let reader = without_panics(|| SerializedFileReader::new(data))
        .map_err(|why| Error::in_file(file, why))?
        .map_err(unreadable)?;
    check_pages(file, bytes, reader.metadata())?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let header: Vec<String> = schema
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name().to_string())
        .collect();
    let mut line = Vec::new();
    write_record(&mut line, &header);
    Ok(Box::new(CsvLines {
        file: file.to_string(),
        rows: RowIter::from_file_into(Box::new(reader)),
        line,
        at: 0,
    }))
}

/// Rows as CSV lines, one at a time.
struct CsvLines {
    file: String,
    rows: RowIter<'static>,
    line: Vec<u8>,
    at: usize,
}

impl std::io::Read for CsvLines {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for CsvLines {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at == self.line.len() {
            self.line.clear();
            self.at = 0;
            let next = without_panics(|| self.rows.next())
                .map_err(|why| std::io::Error::other(Error::in_file(&self.file, why)))?;
            if let Some(row) = next {
                let row = row.map_err(|e| {
                    std::io::Error::other(Error::in_file(&self.file, why_unreadable(&e)))
                })?;
                let cells: Vec<String> = row.get_column_iter().map(|(_, f)| cell(f)).collect();
                write_record(&mut self.line, &cells);
            }
        }
        Ok(&self.line[self.at..])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.line.len());
    }
}

/// Walks the footer's Thrift before the Parquet library decodes it: the library skips a list
/// of booleans at no cost per element, so a footer of nested lists claiming 2^31 booleans each
/// kept it busy for hours; here every element costs at least a byte of the footer.
fn check_footer(bytes: &[u8]) -> std::result::Result<(), String> {
    let end = bytes.len() - MAGIC.len() - 4;
    let len = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("4 bytes")) as usize;
    // A length past the file is the library's to report.
    let Some(start) = end.checked_sub(len) else {
        return Ok(());
    };
    let mut thrift = Compact {
        bytes: &bytes[start..end],
        at: 0,
    };
    thrift.skip(STRUCT, 0)
}

/// Reads every page header of every column chunk, and refuses the file when one points outside
/// it or when a row group would make the reader hold more than the budget.
fn check_pages(file: &str, bytes: &[u8], metadata: &ParquetMetaData) -> Result<()> {
    let damaged =
        |what: String| Error::in_file(file, format!("not a readable Parquet file ({what})"));
    let mut rows = 0u64;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        let group_rows = u64::try_from(group.num_rows())
            .map_err(|_| damaged(format!("row group {g} has a negative row count")))?;
        rows = rows.saturating_add(group_rows);
        let mut held = budget::size_of_items(group.num_columns() as u64, COLUMN_READER_BYTES);
        for column in group.columns() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset());
            let (Ok(start), Ok(len)) = (
                u64::try_from(start),
                u64::try_from(column.compressed_size()),
            ) else {
                return Err(damaged(format!(
                    "column {} has a negative offset or size",
                    column.column_path()
                )));
            };
            let end = start
                .checked_add(len)
                .filter(|&end| end <= bytes.len() as u64);
            let Some(end) = end else {
                return Err(damaged(format!(
                    "column {} ends past the end of the file",
                    column.column_path()
                )));
            };
            let chunk = ChunkPages::read(&bytes[start as usize..end as usize])
                .map_err(|why| damaged(format!("column {}: {why}", column.column_path())))?;
            held = held.and_then(|h| h.checked_add(chunk.held()?));
        }
        let what = format!("reading row group {g}");
        match held {
            Some(bytes) => budget::charge(file, &what, bytes, 1)?,
            None => budget::charge(file, &what, u64::MAX, 2)?,
        };
    }
    // Each row becomes a line the table keeps: at least its bookkeeping, whatever the cells.
    budget::charge(
        file,
        &format!("a table of {rows} rows"),
        rows,
        super::text::LINE_OVERHEAD,
    )?;
    Ok(())
}

/// What a column chunk's page headers say.
#[derive(Default)]
struct ChunkPages {
    largest_page: u64,
    dictionary_bytes: u64,
    dictionary_entries: u64,
}

impl ChunkPages {
    fn read(mut chunk: &[u8]) -> std::result::Result<ChunkPages, String> {
        let mut pages = ChunkPages::default();
        while !chunk.is_empty() {
            let mut thrift = Compact {
                bytes: chunk,
                at: 0,
            };
            let header = thrift.page_header()?;
            let data = thrift.at;
            let compressed = usize::try_from(header.compressed_size)
                .map_err(|_| "a page states a negative size".to_string())?;
            let uncompressed = u64::try_from(header.uncompressed_size)
                .map_err(|_| "a page states a negative size".to_string())?;
            if compressed > chunk.len() - data {
                return Err("a page runs past its column chunk".into());
            }
            if header.dictionary {
                pages.dictionary_bytes = pages.dictionary_bytes.saturating_add(uncompressed);
                pages.dictionary_entries = pages
                    .dictionary_entries
                    .saturating_add(header.num_values.max(0) as u64);
            } else {
                pages.largest_page = pages.largest_page.max(uncompressed);
            }
            chunk = &chunk[data + compressed..];
        }
        Ok(pages)
    }

    /// What reading the chunk's rows holds at once.
    fn held(&self) -> Option<u64> {
        self.largest_page
            .checked_mul(PAGE_COPIES)?
            .checked_add(self.dictionary_bytes)?
            .checked_add(
                self.dictionary_entries
                    .checked_mul(DICTIONARY_ENTRY_BYTES)?,
            )
    }
}

struct PageHeader {
    uncompressed_size: i32,
    compressed_size: i32,
    dictionary: bool,
    num_values: i32,
}

/// Thrift's compact protocol, as Parquet writes its metadata: the few fields of a page header
/// that are checked, and a skip over anything (the footer) that costs at least a byte per value.
struct Compact<'b> {
    bytes: &'b [u8],
    at: usize,
}

/// Nesting past this is not Parquet metadata (a page header nests two deep, the footer a few
/// more).
const MAX_NESTING: usize = 32;

/// Thrift's compact type of a struct.
const STRUCT: u8 = 12;

impl Compact<'_> {
    fn byte(&mut self) -> std::result::Result<u8, String> {
        let b = *self.bytes.get(self.at).ok_or("it runs past its end")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> std::result::Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a malformed number (a varint too long)".into())
    }

    fn zigzag(&mut self) -> std::result::Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> std::result::Result<i32, String> {
        i32::try_from(self.zigzag()?).map_err(|_| "a number out of range".to_string())
    }

    /// The next field's (id, type), or None at the struct's end.
    fn field(&mut self, last: &mut i16) -> std::result::Result<Option<(i16, u8)>, String> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let kind = b & 0x0f;
        let delta = i16::from(b >> 4);
        *last = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| "a malformed field id".to_string())?
        } else {
            last.wrapping_add(delta)
        };
        Ok(Some((*last, kind)))
    }

    fn skip(&mut self, kind: u8, depth: usize) -> std::result::Result<(), String> {
        if depth > MAX_NESTING {
            return Err("it nests deeper than Parquet metadata does".into());
        }
        match kind {
            1 | 2 => {}
            3 => {
                self.byte()?;
            }
            4..=6 => {
                self.varint()?;
            }
            7 => self.advance(8)?,
            8 => {
                let len = self.varint()?;
                self.advance(len)?;
            }
            9 | 10 => {
                let b = self.byte()?;
                let count = match b >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.elements(count, b & 0x0f, depth)?;
            }
            11 => {
                let count = self.varint()?;
                if count > 0 {
                    let types = self.byte()?;
                    self.elements(count, types >> 4, depth)?;
                    self.elements(count, types & 0x0f, depth)?;
                }
            }
            STRUCT => {
                let mut last = 0;
                while let Some((_, kind)) = self.field(&mut last)? {
                    self.skip(kind, depth + 1)?;
                }
            }
            _ => return Err(format!("a value of unknown type {kind}")),
        }
        Ok(())
    }

    fn elements(&mut self, count: u64, kind: u8, depth: usize) -> std::result::Result<(), String> {
        // Parquet's metadata holds no list of booleans (only the page index, which is not
        // read), and the Parquet library would read one differently (no byte per element): so
        // what is checked here is what the library reads.
        if matches!(kind, 1 | 2) {
            return Err("a list of booleans, which Parquet metadata does not hold".into());
        }
        // Every other element takes at least one byte, so a count past what is left is made
        // up: refuse it rather than loop on it.
        if count > (self.bytes.len() - self.at) as u64 {
            return Err("a list runs past the metadata it is in".into());
        }
        for _ in 0..count {
            self.skip(kind, depth + 1)?;
        }
        Ok(())
    }

    fn advance(&mut self, n: u64) -> std::result::Result<(), String> {
        let end = (self.at as u64)
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len() as u64)
            .ok_or("it runs past its end")?;
        self.at = end as usize;
        Ok(())
    }

    /// `PageHeader`: 1 type, 2 uncompressed size, 3 compressed size, 5 data page header,
    /// 7 dictionary page header, 8 data page header v2 (each with `num_values` as field 1).
    fn page_header(&mut self) -> std::result::Result<PageHeader, String> {
        const DICTIONARY_PAGE: i32 = 2;
        let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
        let mut num_values = 0;
        let mut last = 0;
        while let Some((id, field_kind)) = self.field(&mut last)? {
            match (id, field_kind) {
                (1, 5) => kind = Some(self.i32()?),
                (2, 5) => uncompressed = Some(self.i32()?),
                (3, 5) => compressed = Some(self.i32()?),
                (5 | 7 | 8, STRUCT) => num_values = self.values_of_page()?,
                (_, kind) => self.skip(kind, 1)?,
            }
        }
        match (kind, uncompressed, compressed) {
            (Some(kind), Some(uncompressed_size), Some(compressed_size)) => Ok(PageHeader {
                uncompressed_size,
                compressed_size,
                dictionary: kind == DICTIONARY_PAGE,
                num_values,
            }),
            _ => Err("a page header without its type or sizes".into()),
        }
    }

    fn values_of_page(&mut self) -> std::result::Result<i32, String> {
        let mut num_values = 0;
        let mut last = 0;
        while let Some((id, kind)) = self.field(&mut last)? {
            match (id, kind) {
                (1, 5) => num_values = self.i32()?,
                (_, kind) => self.skip(kind, 2)?,
            }
        }
        Ok(num_values)
    }
}

thread_local! {
    /// Set while the Parquet library runs here: its panics are reported as errors, not printed.
    static IN_PARQUET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the Parquet library, turning a panic into an error. The library asserts instead of
/// failing on some malformed pages (a PLAIN byte array whose length runs past its page panics
/// in `read_num_bytes`; found by the `parquet` fuzz target). Natively the panic unwinds and is
/// caught here, its message kept out of stderr; the page's WebAssembly build aborts on a panic,
/// so there it is not caught.
fn without_panics<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_PARQUET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    IN_PARQUET.with(|flag| flag.set(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    IN_PARQUET.with(|flag| flag.set(false));
    outcome.map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("not a readable Parquet file (the Parquet library failed on it: {what})")
    })
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
