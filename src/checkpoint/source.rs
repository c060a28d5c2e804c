//! Model files read by byte range. A checkpoint's tensors are read from their file one at a time,
//! as each is converted, so loading never holds the file's bytes and the converted weights at
//! once: a tab has 4 GiB in all, and NT-v2-250m's weights file alone is 0.94 GB.

use crate::{Error, Result};

/// A file read at any offset: bytes already in memory, a local file, a Blob in the page.
pub trait ByteSource {
    /// The file's size in bytes.
    fn size(&self) -> u64;
    /// `len` bytes from `offset`, or an error saying why they cannot be read (a dropped file
    /// moved or changed, a range past the end); the caller names the file
    /// (`Error::or_in_file`).
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>>;
}

/// The range `offset..offset + len` of a file of `size` bytes, or an error.
pub fn check_range(size: u64, offset: u64, len: usize) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::new(format!(
            "bytes {offset}..{} are past the file's end ({size} bytes): the file is \
                 truncated, download it again",
            offset.saturating_add(len as u64)
        ))),
    }
}

impl ByteSource for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        check_range(self.size(), offset, len)?;
        let start = offset as usize;
        Ok(self[start..start + len].to_vec())
    }
}

/// A file on disk, read where a tensor lies (the CLI's model folders and hub cache).
#[cfg(not(target_arch = "wasm32"))]
pub struct LocalFile {
    file: std::sync::Mutex<std::fs::File>,
    size: u64,
}

#[cfg(not(target_arch = "wasm32"))]
impl LocalFile {
    pub fn open(path: &std::path::Path) -> std::io::Result<LocalFile> {
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(LocalFile {
            file: std::sync::Mutex::new(file),
            size,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ByteSource for LocalFile {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        check_range(self.size, offset, len)?;
        let mut bytes = vec![0; len];
        // A poisoned lock only means another reader panicked; the file handle is still sound.
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|e| {
                Error::new(format!(
                    "cannot read bytes {offset}..{}: {e}",
                    offset + len as u64
                ))
            })?;
        Ok(bytes)
    }
}

/// Reads a whole source in chunks of at most `chunk` bytes, handing each to `each`.
pub fn for_each_chunk(
    source: &dyn ByteSource,
    chunk: usize,
    mut each: impl FnMut(&[u8]),
) -> Result<()> {
    let size = source.size();
    let mut offset = 0;
    while offset < size {
        let len = (size - offset).min(chunk as u64) as usize;
        each(&source.read_at(offset, len)?);
        offset += len as u64;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Bytes that record every read, to check what a reader holds at once.
    pub(crate) struct Recorded {
        bytes: Vec<u8>,
        pub reads: RefCell<Vec<(u64, usize)>>,
    }

    impl Recorded {
        pub(crate) fn new(bytes: Vec<u8>) -> Recorded {
            Recorded {
                bytes,
                reads: RefCell::new(Vec::new()),
            }
        }

        pub(crate) fn largest_read(&self) -> usize {
            self.reads.borrow().iter().map(|r| r.1).max().unwrap_or(0)
        }
    }

    impl ByteSource for std::rc::Rc<Recorded> {
        fn size(&self) -> u64 {
            self.bytes.size()
        }
        fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
            self.reads.borrow_mut().push((offset, len));
            self.bytes.read_at(offset, len)
        }
    }

    #[test]
    fn reads_in_range_and_refuses_past_the_end() {
        let bytes: Vec<u8> = (0..10).collect();
        assert_eq!(bytes.read_at(3, 4).unwrap(), vec![3, 4, 5, 6]);
        assert_eq!(bytes.read_at(10, 0).unwrap(), Vec::<u8>::new());
        let err = bytes.read_at(8, 4).unwrap_err().to_string();
        assert!(err.contains("past the file's end (10 bytes)"), "{err}");
        assert!(bytes.read_at(u64::MAX, 2).is_err());
        let mut chunks = Vec::new();
        for_each_chunk(&bytes, 4, |c| chunks.push(c.to_vec())).unwrap();
        assert_eq!(chunks, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]);
    }

    #[test]
    fn local_files_read_by_range() {
        let dir = std::env::temp_dir().join(format!("geneb-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.bin");
        std::fs::write(&path, (0u8..=255).collect::<Vec<_>>()).unwrap();
        let file = LocalFile::open(&path).unwrap();
        assert_eq!(file.size(), 256);
        assert_eq!(
            file.read_at(250, 6).unwrap(),
            vec![250, 251, 252, 253, 254, 255]
        );
        let err = file.read_at(250, 7).unwrap_err().to_string();
        assert!(err.contains("past the file's end (256 bytes)"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
