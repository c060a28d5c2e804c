//! The ZIP container's directory, as the two zip files geneb reads write it: numpy's `.npz` (the
//! user's embeddings, read whole) and `torch.save`'s checkpoints (read by byte range, never
//! whole). The end record is found in the file's last 64 KiB, the central directory is read
//! whole, and each entry's local header gives where its data starts; zip64 end records and extra
//! fields are followed. Every offset and size the file states is checked against the file's size
//! before anything is read or allocated by it. What an entry's bytes become (which compression
//! methods, how much may be inflated) is the caller's.

use crate::checkpoint::ByteSource;
use std::borrow::Cow;

type Result<T> = std::result::Result<T, String>;

pub(crate) const EOCD: u32 = 0x0605_4b50;
pub(crate) const EOCD64_LOCATOR: u32 = 0x0706_4b50;
const EOCD64: u32 = 0x0606_4b50;
pub(crate) const CENTRAL_HEADER: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;
/// A 32-bit field that says "the value is in the zip64 extra field".
const SATURATED: u64 = 0xffff_ffff;

/// The largest part of an archive read whole (its central directory, a checkpoint's pickle): a
/// state dict's are tens of kB, and a claim beyond this is a corrupt or hostile file.
const MAX_READ_WHOLE: usize = 256 << 20;

/// What an archive is read from: bytes already in memory (borrowed where they lie) or a file
/// read by byte range.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Bytes(&'a [u8]),
    Ranges(&'a dyn ByteSource),
}

impl<'a> Source<'a> {
    fn size(&self) -> u64 {
        match self {
            Source::Bytes(bytes) => bytes.len() as u64,
            Source::Ranges(file) => file.size(),
        }
    }

    /// `len` bytes from `at`, refused past the file's end or beyond `MAX_READ_WHOLE`.
    pub fn read(&self, at: usize, len: usize) -> Result<Cow<'a, [u8]>> {
        if len > MAX_READ_WHOLE {
            return Err(format!(
                "a part of the zip archive claims {len} bytes, more than a zip directory or a \
                 checkpoint's pickle has: the file is corrupt"
            ));
        }
        match (at as u64).checked_add(len as u64) {
            Some(end) if end <= self.size() => {}
            _ => return Err("the zip archive is truncated".into()),
        }
        match self {
            // In range: checked above.
            Source::Bytes(bytes) => Ok(Cow::Borrowed(&bytes[at..at + len])),
            Source::Ranges(file) => file
                .read_at(at as u64, len)
                .map(Cow::Owned)
                .map_err(|e| e.to_string()),
        }
    }

    fn le(&self, at: usize, len: usize) -> Result<u64> {
        le(&self.read(at, len)?, 0, len)
    }
}

/// One file in the archive, as its central directory states it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    /// 0 = stored, 8 = deflated.
    pub method: u16,
    /// The bytes it takes in the archive.
    pub compressed: usize,
    /// The bytes it declares once inflated.
    pub size: usize,
    /// Where its local header starts.
    header: usize,
}

impl Entry {
    /// Where its data starts: after its local header, whose name and extra field may differ in
    /// length from the central directory's (torch pads it so that storages are aligned). Its
    /// `compressed` bytes from there are checked to lie inside the file.
    pub fn data_start(&self, file: Source) -> Result<usize> {
        let header = file.read(self.header, 30)?;
        if le(&header, 0, 4)? != u64::from(LOCAL_HEADER) {
            return Err(format!("zip entry {}: its header is corrupt", self.name));
        }
        // Both lengths are 16-bit: they fit.
        let names = 30 + le(&header, 26, 2)? as usize + le(&header, 28, 2)? as usize;
        let start = self.header.checked_add(names);
        match start.and_then(|start| Some((start, start.checked_add(self.compressed)?))) {
            Some((start, end)) if end as u64 <= file.size() => Ok(start),
            _ => Err(format!("zip entry {} is truncated", self.name)),
        }
    }
}

/// The archive's entries, in directory order.
pub fn entries(file: Source) -> Result<Vec<Entry>> {
    let size = usize::try_from(file.size())
        .map_err(|_| "the file is larger than this build can address".to_string())?;
    // The end record (22 bytes) is last, followed only by a comment of up to 64 KiB.
    let search_from = size.saturating_sub(22 + 0xffff);
    let tail = file.read(search_from, size - search_from)?;
    let eocd = tail[..tail.len().saturating_sub(18)]
        .windows(4)
        .rposition(|w| w == EOCD.to_le_bytes())
        .ok_or("the zip archive has no end record: the file is truncated or not a zip archive")?;
    let mut count = le(&tail, eocd + 10, 2)?;
    let mut directory_len = le(&tail, eocd + 12, 4)?;
    let mut directory = le(&tail, eocd + 16, 4)?;
    if count == 0xffff || directory == SATURATED || directory_len == SATURATED {
        // A zip64 archive: the real values sit in the zip64 end record its locator points to.
        let locator = (search_from + eocd)
            .checked_sub(20)
            .filter(|&at| file.le(at, 4) == Ok(u64::from(EOCD64_LOCATOR)))
            .ok_or("the zip64 end record locator is missing: the file is corrupt")?;
        let end = file.read(to_usize(file.le(locator + 8, 8)?)?, 56)?;
        if le(&end, 0, 4)? != u64::from(EOCD64) {
            return Err("the zip64 end record is missing: the file is corrupt".into());
        }
        count = le(&end, 32, 8)?;
        directory_len = le(&end, 40, 8)?;
        directory = le(&end, 48, 8)?;
    }
    let directory = file.read(to_usize(directory)?, to_usize(directory_len)?)?;
    let bytes = &directory[..];
    // Each entry takes at least 46 bytes of the directory: the count cannot size more, and the
    // loop ends at the directory's end whatever the count says.
    let mut entries =
        Vec::with_capacity((bytes.len() / 46).min(usize::try_from(count).unwrap_or(usize::MAX)));
    let mut at = 0;
    for _ in 0..count {
        if le(bytes, at, 4)? != u64::from(CENTRAL_HEADER) {
            return Err("the zip central directory is corrupt".into());
        }
        let method = le(bytes, at + 10, 2)? as u16;
        let mut compressed = le(bytes, at + 20, 4)?;
        let mut size = le(bytes, at + 24, 4)?;
        let name_len = le(bytes, at + 28, 2)? as usize;
        let extra_len = le(bytes, at + 30, 2)? as usize;
        let comment_len = le(bytes, at + 32, 2)? as usize;
        let mut header = le(bytes, at + 42, 4)?;
        let name_at = at + 46;
        let extra_at = name_at + name_len;
        let next = extra_at + extra_len + comment_len;
        if next > bytes.len() {
            return Err("the zip central directory is truncated".into());
        }
        let name = String::from_utf8_lossy(&bytes[name_at..extra_at]).into_owned();
        let extra = &bytes[extra_at..extra_at + extra_len];
        zip64_values(extra, &name, [&mut size, &mut compressed, &mut header])?;
        let too_big = || format!("zip entry {name} is larger than this build can address");
        entries.push(Entry {
            method,
            compressed: usize::try_from(compressed).map_err(|_| too_big())?,
            size: usize::try_from(size).map_err(|_| too_big())?,
            header: usize::try_from(header).map_err(|_| too_big())?,
            name,
        });
        at = next;
    }
    Ok(entries)
}

/// Replaces the 32-bit size, compressed size and header offset (in that order, the zip64 extra
/// field's) by their zip64 values where the directory marks them as such.
fn zip64_values(extra: &[u8], name: &str, values: [&mut u64; 3]) -> Result<()> {
    if values.iter().all(|v| **v != SATURATED) {
        return Ok(());
    }
    let lacks = || format!("zip entry {name} lacks its zip64 sizes: the file is corrupt");
    let mut at = 0;
    while at + 4 <= extra.len() {
        let id = le(extra, at, 2)?;
        let len = le(extra, at + 2, 2)? as usize;
        let field = extra.get(at + 4..at + 4 + len).ok_or_else(lacks)?;
        if id == 1 {
            // Each value is there only if its 32-bit slot overflowed.
            let mut from = 0;
            for value in values {
                if *value == SATURATED {
                    *value = le(field, from, 8).map_err(|_| lacks())?;
                    from += 8;
                }
            }
            return Ok(());
        }
        at += 4 + len;
    }
    Err(lacks())
}

/// A little-endian number of `len` bytes (at most 8) at `at`, which may be any offset a file
/// states.
pub(crate) fn le(bytes: &[u8], at: usize, len: usize) -> Result<u64> {
    let slice = at
        .checked_add(len)
        .and_then(|end| bytes.get(at..end))
        .ok_or_else(|| "the zip archive is truncated".to_string())?;
    Ok(slice
        .iter()
        .rev()
        .fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte)))
}

fn to_usize(value: u64) -> Result<usize> {
    usize::try_from(value).map_err(|_| "an offset in the zip archive does not fit in memory".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored archive of `files`; with `zip64`, every size and offset saturated in the fixed
    /// fields and given in zip64 extra fields and end record instead, as an archive over 4 GiB
    /// has them.
    fn archive(files: &[(&str, &[u8])], zip64: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut directory = Vec::new();
        for &(name, data) in files {
            let offset = out.len() as u64;
            out.extend(LOCAL_HEADER.to_le_bytes());
            out.extend([0u8; 14]); // version, flags, method 0, time, date, crc
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(3u16.to_le_bytes()); // a padded local extra field, as torch writes
            out.extend(name.as_bytes());
            out.extend([0u8; 3]);
            out.extend(data);
            let fixed = |v: u64| if zip64 { SATURATED as u32 } else { v as u32 };
            directory.extend(CENTRAL_HEADER.to_le_bytes());
            directory.extend([0u8; 16]); // versions, flags, method 0, time, date, crc
            directory.extend(fixed(data.len() as u64).to_le_bytes());
            directory.extend(fixed(data.len() as u64).to_le_bytes());
            directory.extend((name.len() as u16).to_le_bytes());
            directory.extend((if zip64 { 28u16 } else { 0 }).to_le_bytes());
            directory.extend([0u8; 10]); // comment, disk, attributes
            directory.extend(fixed(offset).to_le_bytes());
            directory.extend(name.as_bytes());
            if zip64 {
                directory.extend(1u16.to_le_bytes());
                directory.extend(24u16.to_le_bytes());
                for value in [data.len() as u64, data.len() as u64, offset] {
                    directory.extend(value.to_le_bytes());
                }
            }
        }
        let at = out.len() as u64;
        out.extend(&directory);
        let count = files.len() as u64;
        if zip64 {
            let record = out.len() as u64;
            out.extend(EOCD64.to_le_bytes());
            out.extend(44u64.to_le_bytes());
            out.extend([0u8; 12]); // versions, disks
            for value in [count, count, directory.len() as u64, at] {
                out.extend(value.to_le_bytes());
            }
            out.extend(EOCD64_LOCATOR.to_le_bytes());
            out.extend(0u32.to_le_bytes());
            out.extend(record.to_le_bytes());
            out.extend(1u32.to_le_bytes());
        }
        out.extend(EOCD.to_le_bytes());
        out.extend([0u8; 4]);
        let (count, len, at) = if zip64 {
            (0xffff, SATURATED as u32, SATURATED as u32)
        } else {
            (count as u16, directory.len() as u32, at as u32)
        };
        out.extend(count.to_le_bytes());
        out.extend(count.to_le_bytes());
        out.extend(len.to_le_bytes());
        out.extend(at.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out
    }

    /// Each entry's name and data, read back.
    fn read_back(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
        let file = Source::Bytes(bytes);
        entries(file)?
            .into_iter()
            .map(|entry| {
                let start = entry.data_start(file)?;
                Ok((entry.name, bytes[start..start + entry.compressed].to_vec()))
            })
            .collect()
    }

    const FILES: [(&str, &[u8]); 2] = [("a/data.pkl", b"pickle"), ("a/data/0", b"\x01\x02\x03")];

    #[test]
    fn reads_plain_and_zip64_archives_alike_from_bytes_or_by_range() {
        let want: Vec<(String, Vec<u8>)> = FILES
            .iter()
            .map(|(name, data)| (name.to_string(), data.to_vec()))
            .collect();
        for zip64 in [false, true] {
            let bytes = archive(&FILES, zip64);
            assert_eq!(read_back(&bytes).unwrap(), want, "zip64: {zip64}");
            let file = Source::Ranges(&bytes);
            let ranged = entries(file).unwrap();
            assert_eq!(
                ranged[1].data_start(file).unwrap(),
                30 + 10 + 3 + 6 + 30 + 8 + 3
            );
        }
    }

    /// Every truncation is an error, never a panic: the directory is read whole and its end is
    /// where the entries must end, whatever the count says.
    #[test]
    fn a_truncated_or_overcounted_directory_is_an_error() {
        for zip64 in [false, true] {
            let bytes = archive(&FILES, zip64);
            for len in 0..bytes.len() {
                assert!(
                    read_back(&bytes[..len]).is_err(),
                    "{len} of {}",
                    bytes.len()
                );
            }
        }
        let mut bytes = archive(&FILES, false);
        let eocd = bytes.len() - 22;
        bytes[eocd + 10..eocd + 12].copy_from_slice(&3u16.to_le_bytes());
        let err = read_back(&bytes).unwrap_err();
        assert!(err.contains("truncated"), "{err}");
        // A directory length past the file.
        let mut bytes = archive(&FILES, false);
        bytes[eocd + 12..eocd + 16].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = read_back(&bytes).unwrap_err();
        assert!(err.contains("zip64 end record locator is missing"), "{err}");
    }

    /// Offsets a directory states past the file's end, or data running past it, are refused
    /// before anything is read by them.
    #[test]
    fn an_entry_past_the_end_is_an_error() {
        let bytes = archive(&FILES, true);
        let directory = bytes
            .windows(4)
            .rposition(|w| w == CENTRAL_HEADER.to_le_bytes())
            .unwrap();
        // The zip64 header offset of the last entry, then its zip64 size.
        let offset = directory + 46 + FILES[1].0.len() + 4 + 16;
        let mut far = bytes.clone();
        far[offset..offset + 8].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
        let err = read_back(&far).unwrap_err();
        assert!(err.contains("truncated") || err.contains("fit"), "{err}");
        let mut long = bytes.clone();
        long[offset - 8..offset].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let err = read_back(&long).unwrap_err();
        assert!(err.contains("zip entry a/data/0 is truncated"), "{err}");
        // A zip64 extra field that lacks the values the fixed fields point to it for.
        let mut lacking = bytes;
        lacking[directory + 30..directory + 32].copy_from_slice(&0u16.to_le_bytes());
        let err = entries(Source::Bytes(&lacking)).unwrap_err();
        assert!(err.contains("lacks its zip64 sizes"), "{err}");
    }
}
