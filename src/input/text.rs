//! Bytes → physical lines of text: gzip by magic bytes, UTF-8 BOM, LF or CRLF, and an error that
//! names the line for binary or non-UTF-8 content. Streaming: one line in memory at a time.

use crate::budget::Meter;
use crate::{Error, Result};
use flate2::read::MultiGzDecoder;
use std::io::{BufRead, BufReader};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How much of a user's text an error message quotes.
const QUOTE_LIMIT: usize = 40;

/// `text` for an error message: at most `QUOTE_LIMIT` characters, so a huge line can't flood it.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

/// Other compressions users meet, recognised to say so instead of "not UTF-8 text".
fn foreign_compression(bytes: &[u8]) -> Option<&'static str> {
    const KNOWN: [(&[u8], &str); 5] = [
        (b"PK\x03\x04", "a zip archive"),
        (b"BZh", "bzip2-compressed"),
        (b"\xfd7zXZ\x00", "xz-compressed"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    ];
    KNOWN
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map(|&(_, what)| what)
}

/// One physical line, without its line ending.
pub(crate) struct Line<'l> {
    /// 1-based.
    pub(crate) number: usize,
    pub(crate) text: &'l str,
}

/// The longest line read: a whole human chromosome on one line (chr1, 249 Mbp) fits natively;
/// a tab (4 GiB of wasm memory in all) gets less. Reading one to the limit holds one and a half
/// times it while the buffer grows, well within the memory budget.
#[cfg(not(target_arch = "wasm32"))]
const MAX_LINE_BYTES: usize = 512 << 20;
#[cfg(target_arch = "wasm32")]
const MAX_LINE_BYTES: usize = 256 << 20;

/// What a line costs the reader that keeps it besides its text (a row's strings, label index
/// and vector slots): every line read is charged its length plus this to the memory budget, so
/// a file of short lines cannot make millions of rows out of a small gzip or Parquet file.
pub(crate) const LINE_OVERHEAD: u64 = 64;

/// A file's text, line by line. Line numbers are 1-based physical lines of the (decompressed)
/// file, as an editor shows them.
pub(crate) struct Lines<'a> {
    file: &'a str,
    reader: Box<dyn BufRead + 'a>,
    gzip: bool,
    buffer: Vec<u8>,
    number: usize,
    /// The text read so far and what keeping it costs, against the memory budget.
    meter: Meter,
}

impl<'a> Lines<'a> {
    /// Errors for an empty file or an archive format geneb doesn't read.
    pub(crate) fn new(file: &'a str, bytes: &'a [u8]) -> Result<Lines<'a>> {
        if bytes.is_empty() {
            return Err(Error::in_file(file, "the file is empty"));
        }
        if let Some(what) = foreign_compression(bytes) {
            return Err(Error::in_file(
                file,
                format!(
                    "the file is {what}; geneb reads plain text or gzip (.gz) files: decompress it first"
                ),
            ));
        }
        if bytes.starts_with(b"\xff\xfe") || bytes.starts_with(b"\xfe\xff") {
            return Err(Error::in_file(
                file,
                "the file is UTF-16 text (as Excel's \"Unicode Text\" saves it); save it as UTF-8 CSV",
            ));
        }
        let gzip = bytes.starts_with(&GZIP_MAGIC);
        let reader: Box<dyn BufRead + 'a> = if gzip {
            Box::new(BufReader::new(MultiGzDecoder::new(bytes)))
        } else if super::parquet::is_parquet(bytes) {
            super::parquet::csv_lines(file, bytes)?
        } else {
            Box::new(bytes)
        };
        Ok(Lines {
            file,
            reader,
            gzip,
            buffer: Vec::new(),
            number: 0,
            meter: Meter::new(file, "reading the text and keeping its rows"),
        })
    }

    /// Reads up to and including the next `\n` into `buffer`, charging what it reads; stops
    /// past `MAX_LINE_BYTES`. The buffer grows to at most the limit (plus one byte), so
    /// enforcing the limit never costs twice the limit.
    fn read_line(&mut self) -> std::io::Result<usize> {
        let cap = MAX_LINE_BYTES + 1;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok(self.buffer.len());
            }
            let (take, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            let take = take.min(cap - self.buffer.len());
            self.meter.add(take as u64).map_err(std::io::Error::other)?;
            let needed = self.buffer.len() + take;
            if needed > self.buffer.capacity() {
                let grown = (self.buffer.capacity() * 2).clamp(needed, cap.max(needed));
                self.buffer.reserve_exact(grown - self.buffer.len());
            }
            self.buffer.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if done || self.buffer.len() == cap {
                return Ok(self.buffer.len());
            }
        }
    }

    /// Charges `bytes` more that the caller keeps of this file (its own copies of the text)
    /// to the same meter as the text read, before the caller allocates them.
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<()> {
        self.meter.add(bytes)
    }

    /// The next line without its line ending, or `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line<'_>>> {
        self.buffer.clear();
        // Bounded, so a gzip bomb or a newline-free blob is an error rather than an abort.
        match self.read_line() {
            Ok(0) => return Ok(None),
            Ok(_) => self
                .meter
                .add(LINE_OVERHEAD)
                .map_err(|e| Error::at_line(self.file, self.number + 1, e.message))?,
            // The budget, or a Parquet row the library could not read: already said well.
            Err(err) if err.get_ref().is_some_and(|e| e.is::<Error>()) => {
                let inner = err.into_inner().expect("checked above");
                return Err(*inner.downcast::<Error>().expect("checked above"));
            }
            Err(err) if self.gzip => {
                return Err(Error::in_file(
                    self.file,
                    format!(
                        "the gzip data is truncated or corrupt after line {} ({err}); \
                         download or compress the file again",
                        self.number
                    ),
                ));
            }
            Err(err) => {
                return Err(Error::in_file(
                    self.file,
                    format!("cannot read the file: {err}"),
                ));
            }
        }
        self.number += 1;
        if self.buffer.len() > MAX_LINE_BYTES {
            return Err(Error::at_line(
                self.file,
                self.number,
                format!(
                    "the line is longer than {} MB; split long FASTA sequences over several lines",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        let mut end = self.buffer.len();
        if self.buffer[..end].ends_with(b"\n") {
            end -= 1;
        }
        if self.buffer[..end].ends_with(b"\r") {
            end -= 1;
        }
        let mut start = 0;
        if self.number == 1 && self.buffer[..end].starts_with(b"\xef\xbb\xbf") {
            start = 3; // UTF-8 byte-order mark
        }
        let (file, number) = (self.file, self.number);
        let bytes = &self.buffer[start..end];
        if let Some(column) = bytes.iter().position(|&b| b == 0) {
            return Err(Error::at_line(
                file,
                number,
                format!(
                    "binary data (a zero byte at column {}): this is not a text file; \
                     expected CSV, TSV or FASTA text, optionally gzip-compressed",
                    column + 1
                ),
            ));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Some(Line { number, text })),
            Err(err) => {
                let valid = std::str::from_utf8(&bytes[..err.valid_up_to()]).unwrap_or_default();
                Err(Error::at_line(
                    file,
                    number,
                    format!(
                        "not UTF-8 text (byte 0x{:02x} at column {}); save the file as UTF-8 \
                         (or it is a binary or compressed file that isn't gzip)",
                        bytes[err.valid_up_to()],
                        valid.chars().count() + 1
                    ),
                ))
            }
        }
    }
}

/// A whole small file as text (tasks.json): gzip, BOM and UTF-8 handled as for data files.
pub(crate) fn read_to_string(file: &str, bytes: &[u8]) -> Result<String> {
    let mut lines = Lines::new(file, bytes)?;
    let mut text = String::new();
    while let Some(line) = lines.next_line()? {
        text.push_str(line.text);
        text.push('\n');
    }
    Ok(text)
}
