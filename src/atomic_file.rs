//! Files written whole or not at all, safe when several processes (shards on a cluster's shared
//! file system) write the same path at once: each writer fills its own uniquely named temporary
//! file beside the target and renames it over the target. A rename within one folder is atomic
//! on local file systems and on NFS, Lustre and GPFS, so a reader sees the old file or a new
//! complete one, never a mix of two writers or a truncated file.

use crate::{Error, Result};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically (see the module doc); the folder must exist.
pub fn write_whole(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    write_whole_with(path, |out| out.write_all(bytes.as_ref()))
}

/// Like [`write_whole`], for content streamed by `fill` (large embeddings need no second copy).
pub fn write_whole_with(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let fail = |e: std::io::Error| {
        Error::in_file(path.display().to_string(), format!("cannot write: {e}"))
    };
    let tmp = temporary_beside(path);
    let written = (|| {
        let mut out = BufWriter::new(std::fs::File::create(&tmp)?);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        // On disk before the rename, so a crash cannot leave an empty file under the real name.
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// A name no other writer uses: host, process, a per-process counter (threads) and the clock
/// (a recycled process id on another boot).
fn temporary_beside(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(
        ".{name}.{host}-{}-{}-{nanos}.partial",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writers racing on one path (as shards on one cache entry) while a reader reads it:
    /// every read is one writer's whole content, and no temporary file is left behind.
    #[test]
    fn concurrent_writers_never_mix_or_truncate() {
        let dir = std::env::temp_dir().join(format!("geneb-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("entry.npy");
        const SIZE: usize = 1 << 18;
        write_whole(&path, vec![0u8; SIZE]).unwrap();
        std::thread::scope(|scope| {
            for writer in 1..=4u8 {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..50 {
                        write_whole(path, vec![writer; SIZE]).unwrap();
                    }
                });
            }
            for _ in 0..200 {
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(bytes.len(), SIZE);
                assert!(bytes.iter().all(|&b| b == bytes[0]), "a mix of two writers");
            }
        });
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "only the entry itself remains");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
