//! The split of tables without a split column: the core's defaults, and which dropped tables
//! need one (the page's split panel, www/split.js).

use super::{DroppedFile, answer, from_page, to_js};
use crate::input::{self, InputFile};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

/// The split settings the core uses where the page names none: `{testFraction, seed,
/// groupColumn, folds}`.
#[wasm_bindgen(js_name = splitDefaults)]
pub fn split_defaults() -> std::result::Result<JsValue, JsError> {
    to_js(&crate::input::split::SplitSettings::default())
}

#[derive(Deserialize)]
struct FilesRequest {
    files: Vec<DroppedFile>,
}

/// `{files: [{name, bytes}]}` → `[{file, task, columns}]`: the task tables without a split
/// column (which the core splits, see `crate::input::split`) and the columns that could group them.
#[wasm_bindgen(js_name = unsplitTables)]
pub fn unsplit_tables(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: FilesRequest = from_page(request)?;
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    answer(input::unsplit_tables(&files))
}
