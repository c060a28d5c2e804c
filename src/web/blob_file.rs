//! Model files the page holds as Blobs (a dropped file, the hub cache's), read by range through
//! FileReaderSync, so a checkpoint enters the tab's memory one tensor at a time.

use super::js_message;
use crate::{Error, Result};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// The part of the Blob API the core reads model files through.
    #[wasm_bindgen(js_name = Blob)]
    type JsBlob;
    #[wasm_bindgen(method, getter)]
    fn size(this: &JsBlob) -> f64;
    #[wasm_bindgen(method)]
    fn slice(this: &JsBlob, start: f64, end: f64) -> JsBlob;

    /// Synchronous reads, which a worker has: the checkpoint readers are synchronous, and the
    /// core runs in the page's worker.
    type FileReaderSync;
    #[wasm_bindgen(constructor, catch)]
    fn new() -> std::result::Result<FileReaderSync, JsValue>;
    #[wasm_bindgen(method, catch, js_name = readAsArrayBuffer)]
    fn read_as_array_buffer(
        this: &FileReaderSync,
        blob: &JsBlob,
    ) -> std::result::Result<js_sys::ArrayBuffer, JsValue>;
}

/// A model file the page holds as a Blob, read by range.
pub(super) struct BlobFile {
    blob: JsBlob,
    reader: FileReaderSync,
    size: u64,
}

impl BlobFile {
    pub(super) fn new(blob: JsValue) -> Result<BlobFile> {
        let blob: JsBlob = blob
            .dyn_into()
            .map_err(|_| Error::new("the page sent neither the file's bytes nor a Blob"))?;
        let reader = FileReaderSync::new().map_err(|e| {
            Error::new(format!(
                "model files are read in the page's worker, which has no FileReaderSync here ({})",
                js_message(&e)
            ))
        })?;
        let size = blob.size() as u64;
        Ok(BlobFile { blob, reader, size })
    }
}

impl crate::checkpoint::ByteSource for BlobFile {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        crate::checkpoint::source::check_range(self.size, offset, len)?;
        let part = self.blob.slice(offset as f64, (offset + len as u64) as f64);
        let cannot = |why: String| {
            Error::new(format!(
                "cannot read it (was it moved or changed since it was dropped?): {why}"
            ))
        };
        let buffer = self
            .reader
            .read_as_array_buffer(&part)
            .map_err(|e| cannot(js_message(&e)))?;
        let array = js_sys::Uint8Array::new(&buffer);
        if array.length() as usize != len {
            return Err(cannot(format!(
                "{} bytes came back where {len} were asked for",
                array.length()
            )));
        }
        let mut bytes = vec![0; len];
        array.copy_to(&mut bytes);
        Ok(bytes)
    }
}
