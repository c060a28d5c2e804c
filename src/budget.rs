//! One memory budget for everything a file or an argument makes geneb hold.
//!
//! Every size taken from a file (a header's count, a declared length, an inflated stream) or
//! from an argument (folds, classes) is charged here *before* anything is allocated for it, with
//! overflow-checked arithmetic. Going over is one error naming the file, what it asked for and
//! the budget, never an abort: natively the budget is 2 GiB unless `--max-memory SIZE` or the
//! environment variable `GENEB_MAX_MEMORY` says otherwise; in the page it is half of what the
//! tab's 4 GiB WebAssembly memory has left (a growing buffer's old and new copies both fit).
//!
//! A charge is what one reader holds for one file at once, not a running total over the
//! process: a reader that accumulates (decompressed text, a table's rows, a pickle's stack)
//! carries a [`Meter`] that adds up what it keeps.

use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The native default: 2 GiB.
pub const DEFAULT: u64 = 2 << 30;

/// The environment variable that sets the budget when `--max-memory` does not.
pub const ENV: &str = "GENEB_MAX_MEMORY";

static LIMIT: AtomicU64 = AtomicU64::new(DEFAULT);

/// The budget in bytes.
pub fn limit() -> u64 {
    let set = LIMIT.load(Ordering::Relaxed);
    #[cfg(target_arch = "wasm32")]
    {
        // wasm32 addresses at most 4 GiB; what the module already holds is not available.
        let held = core::arch::wasm32::memory_size(0) as u64 * 65_536;
        set.min((4u64 << 30).saturating_sub(held) / 2)
    }
    #[cfg(not(target_arch = "wasm32"))]
    set
}

/// Sets the budget (the CLI's `--max-memory`, `GENEB_MAX_MEMORY`).
pub fn set_limit(bytes: u64) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// A size as people write it: `2GiB`, `512MiB`, `3G`, `1.5GB`, `100000` (bytes). Binary and
/// decimal units are both read as written (`G` and `GiB` are 2^30, `GB` is 10^9).
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = || {
        Error::new(format!(
            "memory size {text:?} is not a size: write e.g. 4GiB, 512MiB or a number of bytes"
        ))
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => (1u64 << 30) as f64,
        "gb" => 1e9,
        "t" | "tib" => (1u64 << 40) as f64,
        "tb" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = number * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Sets the budget from `GENEB_MAX_MEMORY` when it is set.
pub fn from_env() -> Result<()> {
    if let Ok(text) = std::env::var(ENV) {
        let bytes = parse_size(&text).map_err(|e| Error::new(format!("{ENV}: {}", e.message)))?;
        set_limit(bytes);
    }
    Ok(())
}

/// A size for a message: bytes up to 10 kB, then the largest binary unit.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 10_000 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64;
    let mut unit = "bytes";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// The error for `what` needing `bytes` (None: more than any machine addresses).
fn over(file: Option<&str>, what: &str, bytes: Option<u64>) -> Error {
    let needs = bytes.map_or_else(|| "more than 2^64 bytes".to_string(), human);
    let message = format!(
        "{what} needs {needs}, over geneb's memory budget of {} (raise it with --max-memory \
         or {ENV} if the machine has the memory)",
        human(limit())
    );
    match file {
        Some(file) => Error::in_file(file, message),
        None => Error::new(message),
    }
}

/// A whole file read into memory (a task table, an `.npz`, a result file), its size charged
/// first: a file larger than the budget is an error, not an allocation.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit() {
        return Err(std::io::Error::other(
            over(None, "the file", Some(size)).message,
        ));
    }
    // The size may change under us: never read more than was charged.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `count` items of `each` bytes, overflow-checked.
pub fn size_of_items(count: u64, each: u64) -> Option<u64> {
    count.checked_mul(each)
}

/// Charges `count` items of `each` bytes that `file` asks for as `what`, before they are
/// allocated; returns the count as a `usize` to allocate with.
pub fn charge(file: &str, what: &str, count: u64, each: u64) -> Result<usize> {
    charge_in(Some(file), what, count, each)
}

/// As [`charge`], for a size an argument (not a file) asks for.
pub fn charge_argument(what: &str, count: u64, each: u64) -> Result<usize> {
    charge_in(None, what, count, each)
}

fn charge_in(file: Option<&str>, what: &str, count: u64, each: u64) -> Result<usize> {
    let bytes = size_of_items(count, each);
    match bytes {
        Some(b) if b <= limit() => usize::try_from(count).map_err(|_| over(file, what, bytes)),
        _ => Err(over(file, what, bytes)),
    }
}

/// What one reader has kept of one file so far, charged as it grows.
#[derive(Debug)]
pub struct Meter {
    file: String,
    what: &'static str,
    used: u64,
}

impl Meter {
    /// A meter for `what` (e.g. "the decompressed text") of `file`.
    pub fn new(file: &str, what: &'static str) -> Meter {
        Meter {
            file: file.to_string(),
            what,
            used: 0,
        }
    }

    /// Adds `bytes` more, or says the reader would go over the budget.
    pub fn add(&mut self, bytes: u64) -> Result<()> {
        let used = self.used.checked_add(bytes);
        match used {
            Some(total) if total <= limit() => {
                self.used = total;
                Ok(())
            }
            _ => Err(self.over()),
        }
    }

    /// A meter goes over as it reads: what it would need in all is not known.
    fn over(&self) -> Error {
        Error::in_file(
            &self.file,
            format!(
                "{} needs more than geneb's memory budget of {} (raise it with --max-memory or \
                 {ENV} if the machine has the memory)",
                self.what,
                human(limit())
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["", "GiB", "-1G", "2 parsecs", "0", "1e30"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_charge_over_the_budget_or_past_u64_names_the_file_and_the_budget() {
        let e = charge("x.npy", "the array", u64::MAX, 2).unwrap_err();
        assert_eq!(e.file.as_deref(), Some("x.npy"));
        assert!(e.message.contains("more than 2^64 bytes"), "{e}");
        let e = charge("x.npy", "the array", DEFAULT + 1, 1).unwrap_err();
        assert!(e.message.contains("the array needs 2.0 GiB"), "{e}");
        assert!(e.message.contains("budget of 2.0 GiB"), "{e}");
        assert_eq!(charge("x.npy", "the array", 1000, 8).unwrap(), 1000);
    }

    #[test]
    fn a_meter_refuses_the_byte_that_goes_over() {
        let mut meter = Meter::new("t.csv.gz", "the decompressed text");
        meter.add(DEFAULT - 10).unwrap();
        meter.add(10).unwrap();
        let e = meter.add(1).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.csv.gz: the decompressed text needs")
        );
        assert!(meter.add(u64::MAX).is_err());
    }
}
