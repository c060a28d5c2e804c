//! `audit`: the leak audit of the dropped tasks (`crate::input::audit`), which the page shows
//! as soon as the files are chosen, before anything is embedded (www/audit.js).

use super::{DroppedFile, answer, from_page};
use crate::input::{self, InputFile, audit};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct AuditRequest {
    files: Vec<DroppedFile>,
    /// How tables without a split column are split, as the run will split them.
    #[serde(default)]
    split: crate::input::split::SplitSettings,
}

/// `{files: [{name, bytes}], split?}` → `geneb audit --json`'s report: `{k, …, tasks: [...]}`.
/// Dropped embeddings have no sequences to audit and are left out.
#[wasm_bindgen]
pub fn audit(request: JsValue) -> std::result::Result<JsValue, JsError> {
    let request: AuditRequest = from_page(request)?;
    let files: Vec<InputFile> = request.files.into_iter().map(InputFile::from).collect();
    let (_, files) = crate::input::embeddings::partition(files);
    answer(
        input::tasks_from_files_split(&files, None, &request.split)
            .and_then(|tasks| audit::audit_tasks(&tasks))
            .map(audit::Report::of),
    )
}
