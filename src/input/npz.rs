//! numpy's `.npz` and `.npy` files, read in every build (the page too) without numpy: the
//! embeddings users bring (`X_train, y_train, X_test, y_test`, optional `task` and `category`),
//! for `geneb probe`, `geneb eval --embeddings` and the page.
use std::collections::BTreeMap;
use std::io::Read;
#[cfg(not(target_arch = "wasm32"))]
use std::path::Path;

use ndarray::Array2;

use crate::{Error, Result, zip};

/// The four arrays of a probe `.npz`, labels as indices into `labels`.
#[derive(Debug, Clone)]
pub struct ProbeArrays {
    pub x: ProbeX,
    pub y_train: Vec<usize>,
    pub y_test: Vec<usize>,
    /// The distinct label values of train and test together, ascending (`np.unique`).
    pub labels: Vec<String>,
    /// The optional `task` (id) and `category` strings.
    pub task: Option<String>,
    pub category: Option<String>,
}

/// X_train and X_test in the precision they were stored in (the probe reads either); f64 for
/// both when either is f64.
#[derive(Debug, Clone)]
pub enum ProbeX {
    F32 {
        train: Array2<f32>,
        test: Array2<f32>,
    },
    F64 {
        train: Array2<f64>,
        test: Array2<f64>,
    },
}

impl ProbeX {
    /// (rows, columns) of X_train and of X_test.
    pub fn dims(&self) -> ((usize, usize), (usize, usize)) {
        match self {
            ProbeX::F32 { train, test } => (train.dim(), test.dim()),
            ProbeX::F64 { train, test } => (train.dim(), test.dim()),
        }
    }
}

enum Matrix {
    F32(Array2<f32>),
    F64(Array2<f64>),
}

impl Matrix {
    fn into_f64(self) -> Array2<f64> {
        match self {
            Matrix::F32(x) => x.mapv(f64::from),
            Matrix::F64(x) => x,
        }
    }
}

/// Read and check a probe `.npz` on disk (see [`probe_arrays`]).
#[cfg(not(target_arch = "wasm32"))]
pub fn read_probe_npz(path: &Path) -> Result<ProbeArrays> {
    let name = path.display().to_string();
    let bytes = crate::budget::read_file(path)
        .map_err(|e| Error::in_file(&name, format!("cannot open: {e}")))?;
    probe_arrays(&name, &bytes)
}

/// Check a probe `.npz`: X as float32/float64 (rows = examples), y as integers, and the optional
/// `task` and `category` strings.
pub fn probe_arrays(name: &str, bytes: &[u8]) -> Result<ProbeArrays> {
    let err = |m: String| Error::in_file(name, m);
    let mut arrays = read_npz(name, bytes)?;
    let missing: Vec<&str> = ["X_train", "y_train", "X_test", "y_test"]
        .into_iter()
        .filter(|a| !arrays.contains_key(*a))
        .collect();
    if !missing.is_empty() {
        let has: Vec<&str> = arrays.keys().map(String::as_str).collect();
        return Err(err(format!(
            "missing array(s) {}; a probe .npz needs X_train, y_train, X_test, y_test \
             (it has: {})",
            missing.join(", "),
            has.join(", ")
        )));
    }
    let mut take = |key: &str| arrays.remove(key).unwrap_or_default();
    let x = match (
        matrix(take("X_train"), "X_train").map_err(err)?,
        matrix(take("X_test"), "X_test").map_err(err)?,
    ) {
        (Matrix::F32(train), Matrix::F32(test)) => ProbeX::F32 { train, test },
        (train, test) => ProbeX::F64 {
            train: train.into_f64(),
            test: test.into_f64(),
        },
    };
    let y_train = labels(take("y_train"), "y_train").map_err(err)?;
    let y_test = labels(take("y_test"), "y_test").map_err(err)?;
    let task = text(arrays.remove("task"), "task").map_err(err)?;
    let category = text(arrays.remove("category"), "category").map_err(err)?;
    let ((train_rows, train_cols), (test_rows, test_cols)) = x.dims();
    for (rows, y, split) in [
        (train_rows, &y_train, "train"),
        (test_rows, &y_test, "test"),
    ] {
        if rows != y.len() {
            return Err(err(format!(
                "X_{split} has {rows} rows but y_{split} has {} labels",
                y.len()
            )));
        }
    }
    if test_rows == 0 {
        return Err(err("X_test has no rows: there is nothing to score".into()));
    }
    if train_cols != test_cols {
        return Err(err(format!(
            "X_train has {train_cols} columns but X_test has {test_cols}"
        )));
    }
    let mut values: Vec<i128> = y_train.iter().chain(&y_test).copied().collect();
    values.sort_unstable();
    values.dedup();
    let index = |y: &[i128]| -> Vec<usize> {
        y.iter()
            .map(|v| values.binary_search(v).unwrap_or_default())
            .collect()
    };
    Ok(ProbeArrays {
        y_train: index(&y_train),
        y_test: index(&y_test),
        labels: values.iter().map(|v| v.to_string()).collect(),
        x,
        task,
        category,
    })
}

/// One array of a `.npy`: its shape and values in C (row-major) order.
#[derive(Debug, Clone, Default)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub values: NpyValues,
}

#[derive(Debug, Clone)]
pub enum NpyValues {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Every integer and boolean dtype, widened.
    Int(Vec<i128>),
    /// numpy unicode strings (`<U…`).
    Text(Vec<String>),
}

impl Default for NpyValues {
    fn default() -> Self {
        NpyValues::F32(Vec::new())
    }
}

fn matrix(a: NpyArray, name: &str) -> std::result::Result<Matrix, String> {
    let &[rows, cols] = a.shape.as_slice() else {
        return Err(format!(
            "{name} has {} dimension(s), expected 2",
            a.shape.len()
        ));
    };
    fn finite<T: Copy + Into<f64>>(
        v: &[T],
        cols: usize,
        name: &str,
    ) -> std::result::Result<(), String> {
        match v.iter().position(|x| !(*x).into().is_finite()) {
            Some(at) => Err(format!(
                "{name}[{}, {}] is not a finite number (NaN or infinity)",
                at / cols.max(1),
                at % cols.max(1)
            )),
            None => Ok(()),
        }
    }
    let shape_error = |e: ndarray::ShapeError| format!("{name}: {e}");
    match a.values {
        NpyValues::F32(v) => {
            finite(&v, cols, name)?;
            Array2::from_shape_vec((rows, cols), v)
                .map(Matrix::F32)
                .map_err(shape_error)
        }
        NpyValues::F64(v) => {
            finite(&v, cols, name)?;
            Array2::from_shape_vec((rows, cols), v)
                .map(Matrix::F64)
                .map_err(shape_error)
        }
        _ => Err(format!("{name} must be a float32 or float64 array")),
    }
}

fn labels(a: NpyArray, name: &str) -> std::result::Result<Vec<i128>, String> {
    match (a.shape.len(), a.values) {
        (1, NpyValues::Int(v)) => Ok(v),
        (n, NpyValues::Int(_)) => Err(format!("{name} has {n} dimension(s), expected 1")),
        _ => Err(format!(
            "{name} must hold integer class labels; string or float labels are not read — \
             convert them first, e.g. `np.unique(y, return_inverse=True)[1]`"
        )),
    }
}

/// An optional string array (`np.savez(..., task="my_task")`), one value.
fn text(a: Option<NpyArray>, name: &str) -> std::result::Result<Option<String>, String> {
    match a.map(|a| a.values) {
        None => Ok(None),
        Some(NpyValues::Text(v)) if v.len() == 1 => {
            Ok(Some(v[0].trim().to_string()).filter(|t| !t.is_empty()))
        }
        Some(_) => Err(format!(
            "{name} must be one string, e.g. np.savez(..., {name}=\"…\")"
        )),
    }
}

/// The arrays of a `.npz` (what `numpy.savez` and `numpy.savez_compressed` write: a zip of
/// `.npy` files, stored or deflated), by name without `.npy`.
pub fn read_npz(name: &str, bytes: &[u8]) -> Result<BTreeMap<String, NpyArray>> {
    let err = |m: String| Error::in_file(name, format!("not a readable .npz file: {m}"));
    let mut out = BTreeMap::new();
    // Every inflated entry is held until the arrays are read.
    let mut inflated_total = 0u64;
    let archive = zip::Source::Bytes(bytes);
    for entry in zip::entries(archive).map_err(err)? {
        let start = entry.data_start(archive).map_err(err)?;
        // In the file: `data_start` checked.
        let data = &bytes[start..start + entry.compressed];
        let inflated;
        let raw = match entry.method {
            0 => data,
            8 => {
                // What the archive inflates to is held at once, entry by entry.
                inflated_total = inflated_total.saturating_add(entry.size as u64);
                let what = format!("{}: inflating the archive", entry.name);
                crate::budget::charge(name, &what, inflated_total, 1)?;
                // Deflate expands at most 1032-fold: a declared size past that is made up and
                // must not size the buffer. What inflates must be what the zip declares.
                let mut buf =
                    Vec::with_capacity(entry.size.min(entry.compressed.saturating_mul(1032)));
                flate2::read::DeflateDecoder::new(data)
                    .take((entry.size as u64).saturating_add(1))
                    .read_to_end(&mut buf)
                    .map_err(|e| err(format!("{}: {e}", entry.name)))?;
                if buf.len() != entry.size {
                    let got = if buf.len() > entry.size {
                        "more"
                    } else {
                        "fewer"
                    };
                    return Err(err(format!(
                        "{} inflates to {got} bytes than the {} its zip directory declares",
                        entry.name, entry.size
                    )));
                }
                inflated = buf;
                &inflated[..]
            }
            m => {
                return Err(err(format!(
                    "{} uses zip compression method {m}; numpy writes stored or deflated entries",
                    entry.name
                )));
            }
        };
        let key = entry
            .name
            .strip_suffix(".npy")
            .unwrap_or(&entry.name)
            .to_string();
        let array =
            parse_npy(raw).map_err(|m| Error::in_file(name, format!("{}: {m}", entry.name)))?;
        out.insert(key, array);
    }
    Ok(out)
}

/// One `.npy` file.
pub fn read_npy(name: &str, bytes: &[u8]) -> Result<NpyArray> {
    parse_npy(bytes).map_err(|m| Error::in_file(name, m))
}

/// A little-endian number read from a `.npy` header, at any offset the file states.
fn le(bytes: &[u8], at: usize, n: usize) -> std::result::Result<u64, String> {
    crate::zip::le(bytes, at, n).map_err(|_| "the file is truncated".to_string())
}

/// A `.npy` (format 1.0–3.0): little- or big-endian floats, integers, booleans and unicode
/// strings, C or Fortran order (returned in C order).
fn parse_npy(bytes: &[u8]) -> std::result::Result<NpyArray, String> {
    if bytes.get(..6) != Some(b"\x93NUMPY") {
        return Err("not a .npy array (no \\x93NUMPY magic)".into());
    }
    let major = *bytes.get(6).ok_or("truncated .npy header")?;
    let (len, start) = match major {
        1 => (le(bytes, 8, 2)? as usize, 10),
        2 | 3 => (le(bytes, 8, 4)? as usize, 12),
        v => return Err(format!(".npy format version {v} is not read")),
    };
    let header = std::str::from_utf8(
        bytes
            .get(start..start + len)
            .ok_or("truncated .npy header")?,
    )
    .map_err(|_| "the .npy header is not text")?;
    let field = |key: &str| -> std::result::Result<&str, String> {
        let at = header
            .find(&format!("'{key}'"))
            .ok_or_else(|| format!("the .npy header has no '{key}'"))?;
        Ok(header[at + key.len() + 2..]
            .trim_start()
            .trim_start_matches(':')
            .trim_start())
    };
    let descr = field("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or("only simple dtypes are read (no structured arrays)")?;
    let fortran = field("fortran_order")?.starts_with("True");
    let shape_text = field("shape")?;
    let shape_text = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("a malformed shape")?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse()
                .map_err(|_| format!("a malformed shape ({shape_text})"))
        })
        .collect::<std::result::Result<_, String>>()?;
    // Every number here is the file's: the products are checked, and what the values will take
    // once read is charged to the memory budget before they are.
    let too_large = || format!("the shape {shape:?} has more values than any machine holds");
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(too_large)?;
    let data = &bytes[start + len..];
    let (order, kind, width) = {
        let mut chars = descr.chars();
        let order = chars.next().ok_or("an empty dtype")?;
        let kind = chars.next().ok_or("an empty dtype")?;
        // u64, not usize: the page's wasm32 usize would call a huge width unreadable where a
        // native build says it is too wide.
        let width: u64 = chars
            .as_str()
            .parse()
            .map_err(|_| format!("dtype {descr} is not read"))?;
        (order, kind, width)
    };
    let big = order == '>';
    let item = if kind == 'U' {
        width.checked_mul(4)
    } else {
        Some(width)
    }
    .and_then(|item| usize::try_from(item).ok())
    .ok_or_else(|| format!("dtype {descr} is wider than any machine holds"))?;
    // No wider than `item`, which fits.
    let width = width as usize;
    if count.checked_mul(item).is_none_or(|need| data.len() < need) {
        return Err(format!(
            "the data is truncated ({} bytes for {count} values of {descr})",
            data.len()
        ));
    }
    // What one value takes once read (a string: its handle and up to `width` characters).
    let each = match kind {
        'f' => width,
        'U' => std::mem::size_of::<String>().saturating_add(item),
        _ => std::mem::size_of::<i128>(),
    };
    crate::budget::charge_argument("the array's values", count as u64, each as u64)
        .map_err(|e| e.message)?;
    let word = |i: usize, w: usize| -> u64 {
        let b = &data[i * w..i * w + w];
        let fold = |v: u64, &x: &u8| v << 8 | u64::from(x);
        if big {
            b.iter().fold(0, fold)
        } else {
            b.iter().rev().fold(0, fold)
        }
    };
    let values = match (kind, width) {
        ('f', 4) => NpyValues::F32(
            (0..count)
                .map(|i| f32::from_bits(word(i, 4) as u32))
                .collect(),
        ),
        ('f', 8) => NpyValues::F64((0..count).map(|i| f64::from_bits(word(i, 8))).collect()),
        ('i', 1 | 2 | 4 | 8) => NpyValues::Int(
            (0..count)
                .map(|i| {
                    let shift = 64 - 8 * width as u32;
                    i128::from(((word(i, width) << shift) as i64) >> shift)
                })
                .collect(),
        ),
        ('u' | 'b', 1 | 2 | 4 | 8) => {
            NpyValues::Int((0..count).map(|i| i128::from(word(i, width))).collect())
        }
        ('U', _) => NpyValues::Text(
            (0..count)
                .map(|i| {
                    (0..width)
                        .map(|c| word(i * width + c, 4) as u32)
                        .take_while(|&c| c != 0)
                        .filter_map(char::from_u32)
                        .collect()
                })
                .collect(),
        ),
        _ => {
            return Err(format!(
                "dtype {descr} is not read (float32/64, integers, bool, unicode)"
            ));
        }
    };
    let values = if fortran && shape.len() == 2 {
        c_order(values, shape[0], shape[1])
    } else if fortran && shape.len() > 2 {
        return Err("Fortran-ordered arrays of more than 2 dimensions are not read".into());
    } else {
        values
    };
    Ok(NpyArray { shape, values })
}

/// A Fortran-ordered rows × cols matrix's values in C order.
fn c_order(values: NpyValues, rows: usize, cols: usize) -> NpyValues {
    fn transpose<T: Clone>(v: Vec<T>, rows: usize, cols: usize) -> Vec<T> {
        (0..rows * cols)
            .map(|i| v[(i % cols) * rows + i / cols].clone())
            .collect()
    }
    match values {
        NpyValues::F32(v) => NpyValues::F32(transpose(v, rows, cols)),
        NpyValues::F64(v) => NpyValues::F64(transpose(v, rows, cols)),
        NpyValues::Int(v) => NpyValues::Int(transpose(v, rows, cols)),
        NpyValues::Text(v) => NpyValues::Text(transpose(v, rows, cols)),
    }
}

// ndarray-npy's writer (the CLI's) makes the files: an independent implementation of the format.
#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;
    use ndarray::array;
    use ndarray_npy::NpzWriter;
    use std::fs::File;

    fn write(path: &Path, build: impl FnOnce(&mut NpzWriter<File>)) {
        let mut w = NpzWriter::new(File::create(path).unwrap());
        build(&mut w);
        w.finish().unwrap();
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("geneb-npz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn reads_f32_x_and_integer_labels_in_numeric_order() {
        let p = tmp("ok.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]])
                .unwrap();
            w.add_array("y_train", &array![10i64, -2, 10]).unwrap();
            w.add_array("X_test", &array![[0.5f32, 1.5]]).unwrap();
            w.add_array("y_test", &array![3i64]).unwrap();
        });
        let a = read_probe_npz(&p).unwrap();
        assert_eq!(a.labels, vec!["-2", "3", "10"]);
        assert_eq!(a.y_train, vec![2, 0, 2]);
        assert_eq!(a.y_test, vec![1]);
        let ProbeX::F32 { train, test } = &a.x else {
            panic!("float32 X must stay float32: {:?}", a.x)
        };
        assert_eq!(train[[1, 0]], 3.0);
        assert_eq!(test.dim(), (1, 2));
    }

    #[test]
    fn clear_errors() {
        let p = tmp("missing.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![[1.0f64]]).unwrap();
            w.add_array("y_train", &array![1u8]).unwrap();
        });
        let e = read_probe_npz(&p).unwrap_err();
        assert!(e.message.contains("missing array(s) X_test, y_test"), "{e}");
        assert!(e.file.is_some());

        let p = tmp("dims.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![1.0f64, 2.0]).unwrap();
            w.add_array("y_train", &array![1u8, 0]).unwrap();
            w.add_array("X_test", &array![[1.0f64]]).unwrap();
            w.add_array("y_test", &array![1u8]).unwrap();
        });
        let e = read_probe_npz(&p).unwrap_err();
        assert!(
            e.message.contains("X_train has 1 dimension(s), expected 2"),
            "{e}"
        );

        let p = tmp("len.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![[1.0f64], [2.0]]).unwrap();
            w.add_array("y_train", &array![1u8]).unwrap();
            w.add_array("X_test", &array![[1.0f64]]).unwrap();
            w.add_array("y_test", &array![1u8]).unwrap();
        });
        let e = read_probe_npz(&p).unwrap_err();
        assert!(
            e.message.contains("X_train has 2 rows but y_train has 1"),
            "{e}"
        );

        let p = tmp("nan.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![[1.0f64], [f64::NAN]])
                .unwrap();
            w.add_array("y_train", &array![1u8, 0]).unwrap();
            w.add_array("X_test", &array![[1.0f64]]).unwrap();
            w.add_array("y_test", &array![1u8]).unwrap();
        });
        let e = read_probe_npz(&p).unwrap_err();
        assert!(
            e.message.contains("X_train[1, 0] is not a finite number"),
            "{e}"
        );

        let p = tmp("floaty.npz");
        write(&p, |w| {
            w.add_array("X_train", &array![[1.0f64]]).unwrap();
            w.add_array("y_train", &array![1.5f64]).unwrap();
            w.add_array("X_test", &array![[1.0f64]]).unwrap();
            w.add_array("y_test", &array![1u8]).unwrap();
        });
        let e = read_probe_npz(&p).unwrap_err();
        assert!(e.message.contains("integer class labels"), "{e}");
    }
}
