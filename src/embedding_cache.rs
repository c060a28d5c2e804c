//! The native embedding cache: one float32 `.npy` per (encoder identity, sequence list) under
//! the cache folder, written atomically by each writer under its own temporary name
//! (`atomic_file`), so an interrupted run never leaves a half file that a later run would trust
//! and concurrent shards on a shared file system never corrupt each other's entries.

use crate::eval::{EmbeddingStore, StoreFuture};
use crate::{Error, Result};
use ndarray::Array2;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use std::path::PathBuf;

pub struct FolderStore {
    root: PathBuf,
}

impl FolderStore {
    pub fn new(root: PathBuf) -> FolderStore {
        FolderStore { root }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(format!("{key}.npy"))
    }
}

impl FolderStore {
    fn read(&self, key: &str, rows: usize, dim: usize) -> Option<Array2<f32>> {
        let file = std::fs::File::open(self.path(key)).ok()?;
        let x = Array2::<f32>::read_npy(std::io::BufReader::new(file)).ok()?;
        (x.dim() == (rows, dim)).then_some(x)
    }

    fn write(&self, key: &str, embeddings: &Array2<f32>) -> Result<()> {
        let path = self.path(key);
        let fail = |e: String| {
            Error::in_file(
                path.display().to_string(),
                format!("cannot write the embedding cache: {e} (run with --no-cache to skip it)"),
            )
        };
        let folder = path.parent().ok_or_else(|| fail("no folder".into()))?;
        std::fs::create_dir_all(folder).map_err(|e| fail(e.to_string()))?;
        crate::atomic_file::write_whole_with(&path, |out| {
            embeddings.write_npy(out).map_err(std::io::Error::other)
        })
        .map_err(|e| fail(e.message))
    }
}

impl EmbeddingStore for FolderStore {
    fn get<'a>(
        &'a self,
        key: &'a str,
        rows: usize,
        dim: usize,
    ) -> StoreFuture<'a, Option<Array2<f32>>> {
        Box::pin(std::future::ready(self.read(key, rows, dim)))
    }

    fn put<'a>(&'a self, key: &'a str, embeddings: &'a Array2<f32>) -> StoreFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.write(key, embeddings)))
    }
}
