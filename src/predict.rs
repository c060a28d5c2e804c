//! Use the probe: the full-data probe of an evaluation saved with the identity of the encoder it
//! was fitted on (`geneb eval --save-probe`, made by `crate::run`), and applied to new,
//! unlabelled sequences (`geneb predict`), refusing another encoder or another format version.

use crate::encoder::Encoder;
use crate::probe::LogisticRegression;
use crate::{Error, Result};
use ndarray::{Array1, Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// What a saved probe file says it is.
pub const FORMAT: &str = "geneb probe";
/// Bumped when the file's meaning changes; a file of another version is refused.
pub const FORMAT_VERSION: u32 = 1;

/// The embeddings a probe was fitted on: another encoder's (or the same one's on other windows)
/// have other coordinates, so the probe's weights mean nothing there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncoderIdentity {
    /// The spec as given (`kmer:3`, `random-cnn:7`, `hf:…`); only informative for `hf:`.
    pub spec: String,
    /// The SHA-256 of the model's files and its windows (`hf:` models), or the spec for the
    /// built-in encoders, whose spec fixes their weights.
    pub identity: String,
    pub dim: usize,
    pub pooling: String,
}

impl EncoderIdentity {
    pub fn of(encoder: &Encoder) -> Self {
        let described = encoder.describe();
        EncoderIdentity {
            spec: encoder.spec(),
            identity: encoder.weights_identity(),
            dim: encoder.dim(),
            pooling: described.pooling.to_string(),
        }
    }
}

/// A fitted probe and what it needs to be applied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedProbe {
    pub format: String,
    pub format_version: u32,
    pub geneb: String,
    pub task: String,
    pub encoder: EncoderIdentity,
    /// Every label of the task, in the order the class indices use.
    pub labels: Vec<String>,
    /// The classes seen in training (indices into `labels`, ascending).
    pub classes: Vec<usize>,
    /// d × k weights (k = 1 for two classes: the score of `classes[1]`), row by row.
    pub coef: Vec<Vec<f64>>,
    pub intercept: Vec<f64>,
    pub n_train: usize,
    pub converged: bool,
}

impl SavedProbe {
    pub fn new(
        task: &str,
        encoder: &Encoder,
        labels: &[String],
        fit: &LogisticRegression,
        n_train: usize,
    ) -> Self {
        SavedProbe {
            format: FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            geneb: crate::VERSION.to_string(),
            task: task.to_string(),
            encoder: EncoderIdentity::of(encoder),
            labels: labels.to_vec(),
            classes: fit.classes.clone(),
            coef: fit.coef.rows().into_iter().map(|r| r.to_vec()).collect(),
            intercept: fit.intercept.to_vec(),
            n_train,
            converged: fit.converged,
        }
    }

    /// Reads a saved probe, refusing other files and other format versions.
    pub fn read(name: &str, bytes: &[u8]) -> Result<Self> {
        // Parsed as a JSON tree first: a number of two characters becomes a 32-byte value.
        crate::budget::charge(name, "reading the probe file", bytes.len() as u64, 16)?;
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::in_file(name, format!("not a geneb probe file (not JSON: {e})")))?;
        if value["format"] != FORMAT {
            return Err(Error::in_file(
                name,
                "not a geneb probe file (write one with geneb eval --save-probe)",
            ));
        }
        let version = value["format_version"].as_u64().unwrap_or(0);
        if version != u64::from(FORMAT_VERSION) {
            return Err(Error::in_file(
                name,
                format!(
                    "a probe of format version {version}; this geneb ({}) reads version \
                     {FORMAT_VERSION}: save it again with this geneb's eval --save-probe",
                    crate::VERSION
                ),
            ));
        }
        let probe: SavedProbe = serde_json::from_value(value)
            .map_err(|e| Error::in_file(name, format!("a damaged geneb probe file: {e}")))?;
        let classes = probe.classes.len();
        if classes < 2 || !probe.classes.is_sorted_by(|a, b| a < b) {
            return Err(Error::in_file(
                name,
                format!(
                    "a damaged geneb probe file: a probe has at least 2 distinct classes in \
                     ascending order, this one lists {classes}"
                ),
            ));
        }
        let k = probe.intercept.len();
        let sound = probe.coef.len() == probe.encoder.dim
            && probe.coef.iter().all(|r| r.len() == k)
            && k == if probe.classes.len() == 2 {
                1
            } else {
                probe.classes.len()
            }
            && probe.classes.iter().all(|&c| c < probe.labels.len());
        if !sound {
            return Err(Error::in_file(
                name,
                "a damaged geneb probe file: its weights do not match its classes and dimension",
            ));
        }
        Ok(probe)
    }

    /// Refuses an encoder other than the one the probe was fitted on.
    pub fn check_encoder(&self, name: &str, encoder: &Encoder) -> Result<()> {
        let given = EncoderIdentity::of(encoder);
        if given.identity != self.encoder.identity || given.dim != self.encoder.dim {
            return Err(Error::in_file(
                name,
                format!(
                    "this probe was fitted on {} ({} dimensions, identity {}), not on {} ({} \
                     dimensions, identity {}): its weights only apply to that encoder's embeddings",
                    self.encoder.spec,
                    self.encoder.dim,
                    self.encoder.identity,
                    given.spec,
                    given.dim,
                    given.identity
                ),
            ));
        }
        Ok(())
    }

    fn model(&self) -> LogisticRegression {
        let d = self.coef.len();
        let k = self.intercept.len();
        let coef = Array2::from_shape_fn((d, k), |(i, j)| self.coef[i][j]);
        LogisticRegression {
            classes: self.classes.clone(),
            coef,
            intercept: Array1::from(self.intercept.clone()),
            n_iter: 0,
            converged: self.converged,
        }
    }

    /// Each row's predicted class (an index into `labels`) and its probability per trained
    /// class, in `classes` order: scikit-learn's `predict` and `predict_proba` (the logistic
    /// function for two classes, the softmax otherwise).
    ///
    /// A score that is not finite (weights too large for these embeddings) is an error naming
    /// the row, never a NaN in the output.
    pub fn predict(&self, x: ArrayView2<f32>) -> Result<(Vec<usize>, Array2<f64>)> {
        let model = self.model();
        let predicted = model.predict(x);
        let scores = model.decision_function(x);
        if let Some(row) = scores
            .rows()
            .into_iter()
            .position(|s| s.iter().any(|v| !v.is_finite()))
        {
            return Err(Error::new(format!(
                "the probe's scores for sequence {} are not finite numbers: its weights are too \
                 large for these embeddings (a damaged probe file?)",
                row + 1
            )));
        }
        let k = self.classes.len();
        let mut proba = Array2::zeros((x.nrows(), k));
        for (mut p, s) in proba.rows_mut().into_iter().zip(scores.rows()) {
            if k == 2 {
                // scikit-learn's expit: 0 or 1 at the extremes, never NaN for a finite score.
                let p1 = 1.0 / (1.0 + (-s[0]).exp());
                p[0] = 1.0 - p1;
                p[1] = p1;
            } else {
                // Shifted by the largest score (log-sum-exp): every term is at most 1 and the
                // total at least 1, so finite scores, however far apart, give finite values.
                let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let total: f64 = s.iter().map(|v| (v - max).exp()).sum();
                for (pc, v) in p.iter_mut().zip(s) {
                    *pc = (v - max).exp() / total;
                }
            }
        }
        Ok((predicted, proba))
    }
}

/// The probe's predictions for `sequences` (`crate::input::read_sequences` of the user's file) as
/// the scores CSV, after checking that `encoder` is the one it was fitted on (`probe_name`
/// labels that error): what `geneb predict` writes and the page's predict panel downloads.
pub async fn predict_sequences(
    probe: &SavedProbe,
    probe_name: &str,
    encoder: &Encoder,
    sequences: Vec<crate::input::NamedSequence>,
) -> Result<String> {
    probe.check_encoder(probe_name, encoder)?;
    let (ids, texts): (Vec<String>, Vec<String>) =
        sequences.into_iter().map(|s| (s.id, s.sequence)).unzip();
    let x = crate::eval::embed_sequences(encoder, &texts).await?;
    let (predicted, proba) = probe
        .predict(x.view())
        .map_err(|e| e.or_in_file(probe_name))?;
    Ok(scores_csv(probe, &ids, &predicted, &proba))
}

/// The scores table `geneb predict` writes: `id,predicted,p_<label>…` (RFC 4180 quoting).
pub fn scores_csv(
    probe: &SavedProbe,
    ids: &[String],
    predicted: &[usize],
    proba: &Array2<f64>,
) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from("id,predicted");
    for &c in &probe.classes {
        out.push(',');
        out.push_str(&quote(&format!("p_{}", probe.labels[c])));
    }
    out.push('\n');
    for ((id, &class), p) in ids.iter().zip(predicted).zip(proba.rows()) {
        out.push_str(&quote(id));
        out.push(',');
        out.push_str(&quote(&probe.labels[class]));
        for v in p {
            out.push_str(&format!(",{v}"));
        }
        out.push('\n');
    }
    out
}
