//! Builders for files made to exhaust a reader (issue 29): containers written by hand so that
//! their headers can say what a hostile file says, and compressed streams that inflate to
//! gigabytes from a few megabytes without ever being held whole. Shared by the CLI's hostile-file
//! test (`tests/hostile_files.rs`) and the library-level regressions.

#![allow(dead_code)] // Each test file uses some of the builders.

use std::io::Write;

/// A zip archive of stored (uncompressed) or deflated entries, as numpy's `savez` writes them:
/// `(name, method, declared uncompressed size, crc, data)`.
pub fn zip(entries: &[(&str, u16, u32, u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut directory = Vec::new();
    for &(name, method, size, crc, data) in entries {
        let offset = out.len() as u32;
        let header = |signature: u32, central: bool| {
            let mut h = Vec::new();
            h.extend(signature.to_le_bytes());
            if central {
                h.extend(20u16.to_le_bytes()); // made by
            }
            h.extend(20u16.to_le_bytes()); // version needed
            h.extend(0u16.to_le_bytes()); // flags
            h.extend(method.to_le_bytes());
            h.extend([0u8; 4]); // time, date
            h.extend(crc.to_le_bytes());
            h.extend((data.len() as u32).to_le_bytes());
            h.extend(size.to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes()); // extra
            if central {
                h.extend([0u8; 6]); // comment length, disk, internal attributes
                h.extend([0u8; 4]); // external attributes
                h.extend(offset.to_le_bytes());
            }
            h.extend(name.as_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend(data);
        directory.extend(header(0x0201_4b50, true));
    }
    let at = out.len() as u32;
    out.extend(&directory);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((entries.len() as u16).to_le_bytes());
    out.extend((entries.len() as u16).to_le_bytes());
    out.extend((directory.len() as u32).to_le_bytes());
    out.extend(at.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// A `.npy` (format 1.0) with the given header dictionary and data.
pub fn npy(header: &str, data: &[u8]) -> Vec<u8> {
    let mut text = header.to_string();
    while !(10 + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.as_bytes());
    out.extend(data);
    out
}

/// A raw deflate stream of `copies` repetitions of `chunk`: the chunk is compressed once, ended
/// with a sync flush (so it stands alone at a byte boundary and refers to nothing before it),
/// and its bytes are repeated, then the final empty block. 1 MB chunks shrink about 1000-fold.
pub fn deflate_repeated(chunk: &[u8], copies: usize) -> Vec<u8> {
    let mut once = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    once.write_all(chunk).unwrap();
    once.flush().unwrap();
    let once = once.get_ref().clone();
    let mut out = Vec::with_capacity(once.len() * copies + 2);
    for _ in 0..copies {
        out.extend(&once);
    }
    out.extend([0x03, 0x00]); // a final, empty, fixed-Huffman block
    out
}

/// A gzip file of `head` then `copies` repetitions of `chunk`, honest to its trailer.
pub fn gzip_repeated(head: &[u8], chunk: &[u8], copies: usize) -> Vec<u8> {
    let mut crc = flate2::Crc::new();
    crc.update(head);
    for _ in 0..copies {
        crc.update(chunk);
    }
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let mut first = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    first.write_all(head).unwrap();
    first.flush().unwrap();
    out.extend(first.get_ref());
    out.extend(deflate_repeated(chunk, copies));
    out.extend(crc.sum().to_le_bytes());
    out.extend((crc.amount()).to_le_bytes());
    out
}

/// Thrift's compact protocol, as Parquet writes its page headers and footer.
#[derive(Default)]
pub struct Compact {
    pub bytes: Vec<u8>,
    last: Vec<i16>,
}

pub const I32: u8 = 5;
pub const I64: u8 = 6;
pub const BINARY: u8 = 8;
pub const LIST: u8 = 9;
pub const STRUCT: u8 = 12;

impl Compact {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }
    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
    pub fn field(&mut self, id: i16, kind: u8) -> &mut Self {
        let last = self.last.last_mut().expect("inside a struct");
        let delta = id - *last;
        if (1..=15).contains(&delta) {
            self.bytes.push((delta as u8) << 4 | kind);
        } else {
            self.bytes.push(kind);
            self.zigzag(i64::from(id));
        }
        *self.last.last_mut().unwrap() = id;
        self
    }
    pub fn int(&mut self, id: i16, kind: u8, v: i64) -> &mut Self {
        self.field(id, kind);
        self.zigzag(v);
        self
    }
    pub fn string(&mut self, id: i16, s: &str) -> &mut Self {
        self.field(id, BINARY);
        self.varint(s.len() as u64);
        self.bytes.extend(s.as_bytes());
        self
    }
    /// A list field's header; its elements follow.
    pub fn list(&mut self, id: i16, kind: u8, len: usize) -> &mut Self {
        self.field(id, LIST);
        if len < 15 {
            self.bytes.push((len as u8) << 4 | kind);
        } else {
            self.bytes.push(0xf0 | kind);
            self.varint(len as u64);
        }
        self
    }
    pub fn list_element_int(&mut self, v: i64) -> &mut Self {
        self.zigzag(v);
        self
    }
    pub fn list_element_string(&mut self, s: &str) -> &mut Self {
        self.varint(s.len() as u64);
        self.bytes.extend(s.as_bytes());
        self
    }
    /// Opens a struct (as a field when `id` is given, else as a list element or the top).
    pub fn begin(&mut self, id: Option<i16>) -> &mut Self {
        if let Some(id) = id {
            self.field(id, STRUCT);
        }
        self.last.push(0);
        self
    }
    pub fn end(&mut self) -> &mut Self {
        self.bytes.push(0);
        self.last.pop();
        self
    }
}

/// One page of a column chunk: its header's claims and its bytes.
pub struct Page {
    pub dictionary: bool,
    pub num_values: i64,
    pub uncompressed_size: i64,
    /// 0 plain, 8 RLE_DICTIONARY (data pages).
    pub encoding: i64,
    pub data: Vec<u8>,
}

/// A Parquet file of required UTF-8 columns `names`, one row group of `num_rows`, each
/// column's chunk made of `pages` in `codec` (0 uncompressed, 2 gzip). Headers say exactly what
/// the caller says, true or not.
pub fn parquet(names: &[&str], num_rows: i64, codec: i64, pages: &[Vec<Page>]) -> Vec<u8> {
    const BYTE_ARRAY: i64 = 6;
    let mut out = b"PAR1".to_vec();
    let mut chunks = Vec::new();
    for column in pages {
        let start = out.len() as i64;
        let mut dictionary_offset = None;
        let mut data_offset = None;
        let mut uncompressed = 0;
        let mut values = 0;
        for page in column {
            let at = out.len() as i64;
            let mut h = Compact::default();
            h.begin(None)
                .int(1, I32, if page.dictionary { 2 } else { 0 })
                .int(2, I32, page.uncompressed_size)
                .int(3, I32, page.data.len() as i64);
            if page.dictionary {
                dictionary_offset = Some(at);
                h.begin(Some(7))
                    .int(1, I32, page.num_values)
                    .int(2, I32, 0)
                    .end();
            } else {
                data_offset.get_or_insert(at);
                values += page.num_values;
                h.begin(Some(5))
                    .int(1, I32, page.num_values)
                    .int(2, I32, page.encoding)
                    .int(3, I32, 3)
                    .int(4, I32, 3)
                    .end();
            }
            h.end();
            uncompressed += h.bytes.len() as i64 + page.uncompressed_size;
            out.extend(&h.bytes);
            out.extend(&page.data);
        }
        chunks.push((
            start,
            out.len() as i64 - start,
            uncompressed,
            values,
            data_offset.unwrap_or(start),
            dictionary_offset,
        ));
    }
    let mut f = Compact::default();
    f.begin(None).int(1, I32, 1);
    f.list(2, STRUCT, names.len() + 1);
    f.begin(None)
        .string(4, "schema")
        .int(5, I32, names.len() as i64)
        .end();
    for name in names {
        f.begin(None)
            .int(1, I32, BYTE_ARRAY)
            .int(3, I32, 0)
            .string(4, name)
            .int(6, I32, 0)
            .end();
    }
    f.int(3, I64, num_rows);
    f.list(4, STRUCT, 1);
    f.begin(None);
    f.list(1, STRUCT, chunks.len());
    for (name, &(start, len, uncompressed, values, data, dictionary)) in names.iter().zip(&chunks) {
        f.begin(None).int(2, I64, start);
        f.begin(Some(3)).int(1, I32, BYTE_ARRAY);
        f.list(2, I32, 2).list_element_int(0).list_element_int(8);
        f.list(3, BINARY, 1).list_element_string(name);
        f.int(4, I32, codec)
            .int(5, I64, values)
            .int(6, I64, uncompressed)
            .int(7, I64, len)
            .int(9, I64, data);
        if let Some(dictionary) = dictionary {
            f.int(11, I64, dictionary);
        }
        f.end().end();
    }
    let total: i64 = chunks.iter().map(|c| c.2).sum();
    f.int(2, I64, total).int(3, I64, num_rows).end();
    f.end();
    out.extend(&f.bytes);
    out.extend((f.bytes.len() as u32).to_le_bytes());
    out.extend(b"PAR1");
    out
}

/// PLAIN-encoded byte arrays.
pub fn plain(values: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend((v.len() as u32).to_le_bytes());
        out.extend(v.as_bytes());
    }
    out
}

/// A data page of PLAIN values, uncompressed.
pub fn plain_page(values: &[&str]) -> Page {
    let data = plain(values);
    Page {
        dictionary: false,
        num_values: values.len() as i64,
        uncompressed_size: data.len() as i64,
        encoding: 0,
        data,
    }
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}
