//! Progress a person can plan with: for each stage of a run (embedding, probing), how much is
//! done of how much, at what rate, for how long, and how long is left. One implementation for
//! the CLI's bar and the page's line, so both say the same.
//!
//! Embedding and probing alternate task by task, so each stage's clock runs only while that
//! stage works: its rate is its own units per second of its own time.

use web_time::Instant;

/// A stage's figures at one moment (serialised into the page's progress messages).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Rate {
    /// Units done in this stage over the whole run (sequences embedded; training rows fitted).
    pub done: u64,
    pub total: u64,
    /// Units per second of this stage's own time; none before anything was measured.
    #[serde(rename = "perSecond")]
    pub per_second: Option<f64>,
    /// Seconds this stage has run so far.
    #[serde(rename = "elapsedSeconds")]
    pub elapsed_s: f64,
    /// Seconds left at the current rate; none while the rate is unknown.
    #[serde(rename = "leftSeconds")]
    pub left_s: Option<f64>,
}

impl Rate {
    /// `61.2 seq/s · 32 s elapsed · about 29 s left`: the rate in `unit`s when given (the
    /// probe's units, training rows, mean little to a reader, so its line has no rate).
    pub fn pace(&self, unit: Option<&str>) -> String {
        let mut parts = Vec::new();
        if let (Some(unit), Some(r)) = (unit, self.per_second) {
            parts.push(format!("{} {unit}/s", format_rate(r)));
        }
        parts.push(format!("{} elapsed", format_duration(self.elapsed_s)));
        if let Some(left) = self.left_s.filter(|_| self.done < self.total) {
            // "about 0 s left" reads as a promise broken when the last fits take a moment.
            parts.push(if left < 1.0 {
                "under a second left".to_string()
            } else {
                format!("about {} left", format_duration(left))
            });
        }
        parts.join(" · ")
    }
}

/// One stage's clock and counts.
#[derive(Debug)]
pub struct Meter {
    done: u64,
    total: u64,
    /// Units that took no work (embeddings reused from the cache): done, but not in the rate.
    free: u64,
    /// Seconds of earlier runs of this stage.
    busy_s: f64,
    running_since: Option<Instant>,
}

impl Meter {
    pub fn new(total: u64) -> Self {
        Meter {
            done: 0,
            total,
            free: 0,
            busy_s: 0.0,
            running_since: None,
        }
    }

    /// The stage starts (or resumes) working.
    pub fn resume(&mut self) {
        self.running_since.get_or_insert_with(Instant::now);
    }

    /// The stage stops working until the next [`Meter::resume`].
    pub fn pause(&mut self) {
        if let Some(t) = self.running_since.take() {
            self.busy_s += t.elapsed().as_secs_f64();
        }
    }

    /// `units` more done; `free` when they cost no work (a cache hit).
    pub fn advance(&mut self, units: u64, free: bool) {
        self.done = (self.done + units).min(self.total);
        if free {
            self.free += units;
        }
    }

    pub fn rate(&self) -> Rate {
        let elapsed_s = self.busy_s
            + self
                .running_since
                .map_or(0.0, |t| t.elapsed().as_secs_f64());
        Self::figures(self.done, self.total, self.free, elapsed_s)
    }

    fn figures(done: u64, total: u64, free: u64, elapsed_s: f64) -> Rate {
        let worked = done.saturating_sub(free);
        // Under 50 ms or before a unit of work the rate is noise.
        let per_second = (worked > 0 && elapsed_s >= 0.05).then(|| worked as f64 / elapsed_s);
        let left = total.saturating_sub(done);
        let left_s = if left == 0 {
            Some(0.0)
        } else {
            per_second.map(|r| left as f64 / r)
        };
        Rate {
            done,
            total,
            per_second,
            elapsed_s,
            left_s,
        }
    }
}

/// `[#####-----]`: `done` of `total` in `width` cells, for a terminal.
pub fn bar(done: u64, total: u64, width: usize) -> String {
    let filled = if total == 0 {
        width
    } else {
        ((done.min(total) as f64 / total as f64) * width as f64).round() as usize
    };
    format!("[{}{}]", "#".repeat(filled), "-".repeat(width - filled))
}

/// `123`, `12.3`, `0.41`: three significant digits at most.
fn format_rate(per_second: f64) -> String {
    if per_second >= 100.0 {
        format!("{per_second:.0}")
    } else if per_second >= 10.0 {
        format!("{per_second:.1}")
    } else {
        format!("{per_second:.2}")
    }
}

/// `42 s`, `3 min 05 s`, `2 h 10 min`.
fn format_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{} h {:02} min", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counts_work_not_cache_hits() {
        // 100 of 400 done in 2 s, 60 of them from the cache: 20/s, 300 left → 15 s.
        let r = Meter::figures(100, 400, 60, 2.0);
        assert_eq!(r.per_second, Some(20.0));
        assert_eq!(r.left_s, Some(15.0));
        // Everything from the cache: no rate, nothing left.
        let r = Meter::figures(400, 400, 400, 0.01);
        assert_eq!((r.per_second, r.left_s), (None, Some(0.0)));
        // Nothing measured yet: no promise.
        assert_eq!(Meter::figures(0, 10, 0, 0.0).left_s, None);
    }

    #[test]
    fn clock_runs_only_while_resumed() {
        let mut m = Meter::new(10);
        m.resume();
        m.advance(4, false);
        m.pause();
        let paused = m.rate().elapsed_s;
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(m.rate().elapsed_s, paused);
        m.advance(100, false);
        assert_eq!(m.rate().done, 10, "done never passes total");
    }

    #[test]
    fn formats() {
        assert_eq!(bar(1, 4, 8), "[##------]");
        assert_eq!(bar(9, 4, 4), "[####]");
        assert_eq!(bar(0, 0, 3), "[###]");
        assert_eq!(format_duration(42.4), "42 s");
        assert_eq!(format_duration(185.0), "3 min 05 s");
        assert_eq!(format_duration(7800.0), "2 h 10 min");
        let r = Meter::figures(100, 400, 60, 2.0);
        assert_eq!(
            r.pace(Some("seq")),
            "20.0 seq/s · 2 s elapsed · about 15 s left"
        );
        assert_eq!(r.pace(None), "2 s elapsed · about 15 s left");
        assert_eq!(
            Meter::figures(400, 400, 0, 2.0).pace(Some("seq")),
            "200 seq/s · 2 s elapsed"
        );
        assert_eq!(
            Meter::figures(399, 400, 0, 2.0).pace(None),
            "2 s elapsed · under a second left"
        );
        assert_eq!(
            Meter::figures(1, 400, 0, 2.5).pace(Some("seq")),
            "0.40 seq/s · 3 s elapsed · about 16 min 38 s left"
        );
    }
}
