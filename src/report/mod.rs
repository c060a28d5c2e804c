//! What a person reads from result files: the comparison tables (CSV/HTML), the SVG plots and the
//! HTML report, rendered from `profile::analysis`. The result schema itself is `submission`.

pub mod html;
pub mod svg;
pub mod tables;
