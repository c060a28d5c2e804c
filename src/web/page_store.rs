//! The page's embedding cache (IndexedDB, www/embedding-cache.js) as the eval's EmbeddingStore.

use super::js_message;
use crate::eval;
use crate::{Error, Result};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// The page's embedding cache (IndexedDB, `www/embedding-cache.js`), reached through two
/// functions: `get(key, rows, dim)` → `Promise<Float32Array | null>` and
/// `put(key, dim, Float32Array)` → `Promise`. An entry of the wrong size is a miss.
pub(super) struct PageStore {
    get: js_sys::Function,
    put: js_sys::Function,
}

impl PageStore {
    pub(super) fn from_js(value: &JsValue) -> Result<Option<PageStore>> {
        if value.is_null() || value.is_undefined() {
            return Ok(None);
        }
        let method = |name: &str| {
            js_sys::Reflect::get(value, &JsValue::from_str(name))
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
                .ok_or_else(|| {
                    Error::new(format!("the page's embedding cache has no {name} function"))
                })
        };
        Ok(Some(PageStore {
            get: method("get")?,
            put: method("put")?,
        }))
    }
}

/// A JS promise (or plain value) settled.
async fn settled(
    value: std::result::Result<JsValue, JsValue>,
) -> std::result::Result<JsValue, JsValue> {
    wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&value?)).await
}

impl eval::EmbeddingStore for PageStore {
    fn get<'a>(
        &'a self,
        key: &'a str,
        rows: usize,
        dim: usize,
    ) -> eval::StoreFuture<'a, Option<ndarray::Array2<f32>>> {
        Box::pin(async move {
            let found = self.get.call3(
                &JsValue::NULL,
                &JsValue::from_str(key),
                &JsValue::from(rows as f64),
                &JsValue::from(dim as f64),
            );
            let values = settled(found)
                .await
                .ok()?
                .dyn_into::<js_sys::Float32Array>()
                .ok()?;
            ndarray::Array2::from_shape_vec((rows, dim), values.to_vec()).ok()
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        embeddings: &'a ndarray::Array2<f32>,
    ) -> eval::StoreFuture<'a, Result<()>> {
        Box::pin(async move {
            let values: Vec<f32> = embeddings.iter().copied().collect();
            let stored = self.put.call3(
                &JsValue::NULL,
                &JsValue::from_str(key),
                &JsValue::from(embeddings.ncols() as f64),
                &js_sys::Float32Array::from(values.as_slice()),
            );
            settled(stored).await.map(|_| ()).map_err(|e| {
                Error::new(format!(
                    "cannot keep the embeddings in this browser: {}",
                    js_message(&e)
                ))
            })
        })
    }
}
