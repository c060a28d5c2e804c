//! Every GENEB protocol constant, once, each with where it comes from. The reference is the
//! GENEB harness (github.com/darlednik/GENEB, `pipeline/classification.py`) as summarised in
//! PROTOCOL.md; changing any of these makes results incomparable with the published leaderboard.

/// Version of the submission schema geneb writes (the reference's `schema_version`).
pub const SCHEMA_VERSION: &str = "1.0";

/// Probe: scikit-learn `LogisticRegression(max_iter=1000)` defaults.
pub const PROBE_C: f64 = 1.0; // `C=1.0`: L2 penalty ||w||^2 / (2 C n) on the mean log-loss
pub const PROBE_TOL: f64 = 1e-4; // `tol=1e-4`, passed to scipy L-BFGS-B as `gtol`
pub const PROBE_MAX_ITER: usize = 1000; // `max_iter=1000`, set explicitly by the harness
/// scipy L-BFGS-B settings scikit-learn uses (`sklearn/linear_model/_logistic.py`).
pub const LBFGS_HISTORY: usize = 10; // scipy `maxcor` default
pub const LBFGS_MAX_LINE_SEARCH: usize = 50; // sklearn passes `maxls=50`
/// sklearn passes `ftol = 64 * np.finfo(float).eps` to L-BFGS-B.
pub const LBFGS_FTOL: f64 = 64.0 * f64::EPSILON;

/// Few-shot regimes: k examples per class, these five seeds, scored on the full test split.
pub const FEWSHOT_SEEDS: [u32; 5] = [13, 17, 42, 123, 997];

/// The three regimes of the leaderboard, with their result-file keys.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Regime {
    #[serde(rename = "full")]
    Full,
    #[serde(rename = "10shot")]
    TenShot,
    #[serde(rename = "1shot")]
    OneShot,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Full, Regime::TenShot, Regime::OneShot];

    pub fn key(self) -> &'static str {
        match self {
            Regime::Full => "full",
            Regime::TenShot => "10shot",
            Regime::OneShot => "1shot",
        }
    }

    /// How the regime reads in a title (the report's, the page's).
    pub fn label(self) -> &'static str {
        match self {
            Regime::Full => "full data",
            Regime::TenShot => "10-shot",
            Regime::OneShot => "1-shot",
        }
    }

    /// Examples per class, or `None` for the whole train split.
    pub fn shots(self) -> Option<usize> {
        match self {
            Regime::Full => None,
            Regime::TenShot => Some(10),
            Regime::OneShot => Some(1),
        }
    }

    pub fn parse(s: &str) -> Option<Regime> {
        Regime::ALL.into_iter().find(|r| r.key() == s.trim())
    }

    /// The regimes a user listed, each once, in the leaderboard's order.
    pub fn parse_list<S: AsRef<str>>(keys: &[S]) -> crate::Result<Vec<Regime>> {
        let mut regimes = keys
            .iter()
            .map(|k| {
                let k = k.as_ref();
                Regime::parse(k).ok_or_else(|| {
                    crate::Error::new(format!("unknown regime '{k}': use full, 10shot, 1shot"))
                })
            })
            .collect::<crate::Result<Vec<_>>>()?;
        regimes.sort();
        regimes.dedup();
        if regimes.is_empty() {
            return Err(crate::Error::new(
                "choose at least one regime: full, 10shot, 1shot",
            ));
        }
        Ok(regimes)
    }
}

/// The 13 categories in the leaderboard's published order (`reference/geneb-leaderboard.json`).
pub const CATEGORIES: [&str; 13] = [
    "Histone Mod.",
    "Promoters",
    "Enhancers",
    "DNA Methyl.",
    "Splice Sites",
    "lncRNA",
    "Mouse Enh.",
    "TF Binding",
    "Species Clf.",
    "Regulatory",
    "Virus/Phage",
    "Coding/NC",
    "Chromatin Acc.",
];

/// Category of a task whose id the catalogue does not know and the user did not name.
pub const UNCATEGORIZED: &str = "Uncategorized";
