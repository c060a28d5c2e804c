//! Reading `X_train, y_train, X_test, y_test` from a numpy `.npz` (the CLI's `probe` verb).
use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use ndarray::{Array1, Array2};
use ndarray_npy::{NpzReader, ReadNpyError, ReadNpzError, ReadableElement};

use crate::{Error, Result};

/// The four arrays of a probe `.npz`, labels as indices into `labels`.
#[derive(Debug, Clone)]
pub struct ProbeArrays {
    pub x: ProbeX,
    pub y_train: Vec<usize>,
    pub y_test: Vec<usize>,
    /// The distinct label values of train and test together, ascending (`np.unique`).
    pub labels: Vec<String>,
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

/// Read and check a probe `.npz`: X as float32/float64 (rows = examples), y as integers.
pub fn read_probe_npz(path: &Path) -> Result<ProbeArrays> {
    let file = path.display().to_string();
    let f = File::open(path).map_err(|e| Error::in_file(&file, format!("cannot open: {e}")))?;
    read_probe_npz_from(&file, f)
}

/// `read_probe_npz` on a file already open (or in memory), named `file` in errors.
pub fn read_probe_npz_from(file: &str, reader: impl Read + Seek) -> Result<ProbeArrays> {
    let err = |m: String| Error::in_file(file, m);
    let mut npz =
        NpzReader::new(reader).map_err(|e| err(format!("not a readable .npz file: {e}")))?;
    let names = npz
        .names()
        .map_err(|e| err(format!("not a readable .npz file: {e}")))?;
    let missing: Vec<&str> = ["X_train", "y_train", "X_test", "y_test"]
        .into_iter()
        .filter(|a| !names.iter().any(|n| n == a || *n == format!("{a}.npy")))
        .collect();
    if !missing.is_empty() {
        return Err(err(format!(
            "missing array(s) {}; a probe .npz needs X_train, y_train, X_test, y_test \
             (it has: {})",
            missing.join(", "),
            names.join(", ")
        )));
    }
    let x = match (
        read_x(&mut npz, "X_train").map_err(err)?,
        read_x(&mut npz, "X_test").map_err(err)?,
    ) {
        (Matrix::F32(train), Matrix::F32(test)) => ProbeX::F32 { train, test },
        (train, test) => ProbeX::F64 {
            train: train.into_f64(),
            test: test.into_f64(),
        },
    };
    let y_train = read_y(&mut npz, "y_train").map_err(err)?;
    let y_test = read_y(&mut npz, "y_test").map_err(err)?;
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
    })
}

/// Read `name` as `T`; `Ok(None)` when the array has another dtype.
fn try_read<T: ReadableElement, D: ndarray::Dimension>(
    npz: &mut NpzReader<impl Read + Seek>,
    name: &str,
) -> std::result::Result<Option<ndarray::Array<T, D>>, String> {
    match npz.by_name(name) {
        Ok(a) => Ok(Some(a)),
        Err(ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_))) => Ok(None),
        Err(ReadNpzError::Npy(ReadNpyError::WrongNdim(want, got))) => Err(format!(
            "{name} has {got} dimension(s), expected {}",
            want.unwrap_or_default()
        )),
        Err(e) => Err(format!("cannot read {name}: {e}")),
    }
}

fn read_x(
    npz: &mut NpzReader<impl Read + Seek>,
    name: &str,
) -> std::result::Result<Matrix, String> {
    fn finite<T: Copy + Into<f64>>(x: &Array2<T>, name: &str) -> std::result::Result<(), String> {
        match x.indexed_iter().find(|(_, v)| !(**v).into().is_finite()) {
            Some(((i, j), _)) => Err(format!(
                "{name}[{i}, {j}] is not a finite number (NaN or infinity)"
            )),
            None => Ok(()),
        }
    }
    if let Some(x) = try_read::<f64, _>(npz, name)? {
        finite(&x, name)?;
        return Ok(Matrix::F64(x));
    }
    match try_read::<f32, _>(npz, name)? {
        Some(x) => finite(&x, name).map(|()| Matrix::F32(x)),
        None => Err(format!("{name} must be a float32 or float64 array")),
    }
}

fn read_y(
    npz: &mut NpzReader<impl Read + Seek>,
    name: &str,
) -> std::result::Result<Vec<i128>, String> {
    fn widen<T: Copy + Into<i128>>(a: Array1<T>) -> Vec<i128> {
        a.iter().map(|&v| v.into()).collect()
    }
    macro_rules! try_int {
        ($($t:ty),*) => {
            $(if let Some(a) = try_read::<$t, ndarray::Ix1>(npz, name)? {
                return Ok(widen(a));
            })*
        };
    }
    try_int!(i64, i32, i16, i8, u64, u32, u16, u8);
    if let Some(a) = try_read::<bool, ndarray::Ix1>(npz, name)? {
        return Ok(a.iter().map(|&b| i128::from(b)).collect());
    }
    Err(format!(
        "{name} must hold integer class labels; string or float labels are not read — \
         convert them first, e.g. `np.unique(y, return_inverse=True)[1]`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use ndarray_npy::NpzWriter;

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
