//! A checkpoint as named tensors that an architecture takes one by one. Taking reads a single
//! tensor's bytes from the file (`ByteSource`) and converts them to contiguous f32, so a model is
//! built tensor by tensor and never holds the file's bytes beside its weights; it checks the
//! shape and records that the tensor was consumed. `finish` then names every tensor nobody took,
//! so a renamed or unsupported layer can never be silently ignored.
//!
//! A model too large for f32 holds its large matrices (`take_matrix`: linear layers, embedding
//! tables) in half precision instead ([`Held`]): as the file stores them where it stores bf16 or
//! f16, so nothing is lost, and each is widened to f32 only for the product that uses it. What a
//! model holds is charged to the memory budget as it is taken (`charge_to_budget`).

use super::ByteSource;
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Element types found in HF checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U8,
    Bool,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32 | DType::F16 | DType::BF16)
    }

    /// bf16 or f16: the 16-bit float types a checkpoint stores its weights in to halve them.
    pub(crate) fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
}

/// Where one tensor's elements live: a buffer of the checkpoint, a start (in elements) and
/// strides (in elements), as PyTorch storages describe views. Safetensors tensors are contiguous.
#[derive(Debug, Clone)]
pub struct TensorEntry {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub buffer: usize,
    /// Byte offset of element 0 of the storage this tensor views (safetensors: of the tensor).
    pub byte_offset: usize,
    /// Offset of the tensor's first element within that storage, in elements.
    pub element_offset: usize,
    pub strides: Vec<usize>,
}

impl TensorEntry {
    pub fn contiguous(
        dtype: DType,
        shape: Vec<usize>,
        buffer: usize,
        byte_offset: usize,
    ) -> TensorEntry {
        let strides = contiguous_strides(&shape);
        TensorEntry {
            dtype,
            shape,
            buffer,
            byte_offset,
            element_offset: 0,
            strides,
        }
    }

    /// Elements in the tensor. `Checkpoint::new` has checked that the product fits.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The bytes the tensor spans in its buffer (a strided view's too): its first element's
    /// offset and the length up to one past its last. Only for entries `Checkpoint::new` checked.
    fn span(&self) -> (usize, usize) {
        // An empty tensor reads nothing, whatever offset its file declares.
        if self.numel() == 0 {
            return (self.byte_offset, 0);
        }
        let start = self.byte_offset + self.element_offset * self.dtype.size();
        let end = self.checked_end().expect("checked by Checkpoint::new");
        (start, end - start)
    }

    /// Elements, or `None` when the shape a file declares overflows.
    fn checked_numel(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// One past the last byte the tensor reads, or `None` when the shape, strides or offsets a
    /// file declares overflow.
    fn checked_end(&self) -> Option<usize> {
        if self.shape.len() != self.strides.len() {
            return None;
        }
        let elements = if self.checked_numel()? == 0 {
            0
        } else {
            self.shape
                .iter()
                .zip(&self.strides)
                .try_fold(self.element_offset, |last, (n, s)| {
                    last.checked_add((n - 1).checked_mul(*s)?)
                })?
                .checked_add(1)?
        };
        elements
            .checked_mul(self.dtype.size())?
            .checked_add(self.byte_offset)
    }
}

/// Row-major strides; saturating, so a hostile shape yields strides `Checkpoint::new` refuses
/// rather than an overflow.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
    }
    strides
}

/// What an architecture's large matrices are held in once taken (`Checkpoint::take_matrix`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Held {
    #[default]
    F32,
    Bf16,
    F16,
}

impl Held {
    /// Bytes per element held.
    pub fn size(self) -> u64 {
        match self {
            Held::F32 => 4,
            Held::Bf16 | Held::F16 => 2,
        }
    }

    /// The half type a checkpoint stored in `dtype` is held in when it must be: its own where it
    /// is half already (exact), else bf16, which keeps f32's range (f16 would overflow at 65,504).
    pub fn half_of(dtype: Option<DType>) -> Held {
        match dtype {
            Some(DType::F16) => Held::F16,
            _ => Held::Bf16,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Held::F32 => "f32",
            Held::Bf16 => "bf16",
            Held::F16 => "f16",
        }
    }

    /// Whether `dtype` is this type (so values are taken as they are).
    pub fn stores(self, dtype: DType) -> bool {
        matches!(
            (self, dtype),
            (Held::F32, DType::F32) | (Held::Bf16, DType::BF16) | (Held::F16, DType::F16)
        )
    }
}

/// A matrix as taken (`Checkpoint::take_matrix`): contiguous row-major values of the held type.
#[derive(Debug, Clone, PartialEq)]
pub enum Matrix {
    F32(Vec<f32>),
    Bf16(Vec<half::bf16>),
    F16(Vec<half::f16>),
}

impl Matrix {
    /// Splits off the values from `at` on, as `Vec::split_off` (a fused weight's later parts).
    pub fn split_off(&mut self, at: usize) -> Matrix {
        match self {
            Matrix::F32(v) => Matrix::F32(v.split_off(at)),
            Matrix::Bf16(v) => Matrix::Bf16(v.split_off(at)),
            Matrix::F16(v) => Matrix::F16(v.split_off(at)),
        }
    }

    pub fn held(&self) -> Held {
        match self {
            Matrix::F32(_) => Held::F32,
            Matrix::Bf16(_) => Held::Bf16,
            Matrix::F16(_) => Held::F16,
        }
    }
}

pub struct Checkpoint {
    /// The file name the user gave, for messages.
    source: String,
    buffers: Vec<Box<dyn ByteSource>>,
    entries: BTreeMap<String, TensorEntry>,
    consumed: BTreeSet<String>,
    /// The parameters taken (buffers excluded), in order.
    taken: Vec<String>,
    /// The tensors of skipped heads (`skip_prefix`).
    heads: Vec<String>,
    /// While `collect_missing` is on: the tensors asked for and absent.
    missing: Option<Vec<String>>,
    /// What `take_matrix` holds matrices in.
    matrices: Held,
    /// The stored type of the first matrix `take_matrix` converted to the held half type
    /// (other numbers than the file's), where one was.
    narrowed_from: Option<DType>,
    /// What the tensors taken so far hold, charged to the budget (`charge_to_budget`).
    held: Option<crate::budget::Meter>,
}

/// The most elements a stand-in for a missing tensor may have (`collect_missing`): beyond it
/// the load stops at that tensor, so a hostile config cannot make geneb allocate at will.
const MISSING_STAND_IN_ELEMENTS: usize = 1 << 26;

impl Checkpoint {
    /// Builds a checkpoint from its files (read by range) and tensor entries, checking that
    /// every entry lies inside its buffer (a truncated download must fail here, not as garbage
    /// weights).
    pub fn new(
        source: impl Into<String>,
        buffers: Vec<Box<dyn ByteSource>>,
        entries: BTreeMap<String, TensorEntry>,
    ) -> Result<Checkpoint> {
        let source = source.into();
        for (name, entry) in &entries {
            let buffer = buffers.get(entry.buffer).ok_or_else(|| {
                Error::in_file(&source, format!("tensor '{name}' refers to missing data"))
            })?;
            let corrupt = |what: String| {
                Error::in_file(
                    &source,
                    format!(
                        "tensor '{name}' {what} — the file is truncated or corrupt; download it \
                         again"
                    ),
                )
            };
            let end = entry.checked_end().ok_or_else(|| {
                corrupt(format!(
                    "declares shape {:?} and strides {:?}, which no file can hold",
                    entry.shape, entry.strides
                ))
            })?;
            if end as u64 > buffer.size() {
                return Err(corrupt(format!(
                    "needs bytes up to {end} but its data has {}",
                    buffer.size()
                )));
            }
            // Every element a file really stores takes at least a byte, so this bounds what
            // converting the tensor allocates by the file's size (a view repeating one element
            // with stride 0 could otherwise declare terabytes).
            if entry.numel() as u64 > buffer.size() {
                return Err(corrupt(format!(
                    "declares {} elements, more than its {} bytes of data hold",
                    entry.numel(),
                    buffer.size()
                )));
            }
        }
        Ok(Checkpoint {
            source,
            buffers,
            entries,
            consumed: BTreeSet::new(),
            taken: Vec::new(),
            heads: Vec::new(),
            missing: None,
            matrices: Held::F32,
            narrowed_from: None,
            held: None,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.entries.get(name).map(|e| e.shape.as_slice())
    }

    /// The first of `prefixes` under which `probe` exists (e.g. "bert." vs ""), so one
    /// architecture reads both bare encoders and task-head checkpoints.
    pub fn find_prefix<'p>(&self, prefixes: &[&'p str], probe: &str) -> Option<&'p str> {
        prefixes
            .iter()
            .copied()
            .find(|p| self.contains(&format!("{p}{probe}")))
    }

    /// From now on a missing tensor does not stop the load: `take` notes it and hands back
    /// zeros, so that `refuse_missing` can name every tensor a checkpoint lacks at once (a
    /// reference that loads with `strict=False` would have run them all at random values).
    pub fn collect_missing(&mut self) {
        self.missing.get_or_insert_with(Vec::new);
    }

    /// After `collect_missing`: an error naming every tensor asked for and absent.
    pub fn refuse_missing(&mut self, why: &str) -> Result<()> {
        let missing = self.missing.take().unwrap_or_default();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::in_file(
            &self.source,
            format!(
                "the checkpoint lacks {} tensor(s) that config.json needs: {}; {why}",
                missing.len(),
                first_names(missing.iter().map(String::as_str)),
            ),
        ))
    }

    /// From now on `take_matrix` holds matrices in `held`.
    pub fn hold_matrices_in(&mut self, held: Held) {
        self.matrices = held;
    }

    /// From now on every tensor taken is charged to the memory budget at what it holds (f32,
    /// or `take_matrix`'s type), before it is read: the model's weights are one reader's.
    pub fn charge_to_budget(&mut self) {
        let what = match self.matrices {
            Held::F32 => "holding the model's weights in f32",
            Held::Bf16 => "holding the model's weights in bf16",
            Held::F16 => "holding the model's weights in f16",
        };
        self.held = Some(crate::budget::Meter::new(&self.source, what));
    }

    /// Bytes the float tensors hold at f32 (all of them: heads the architecture skips too, which
    /// are not known before it loads), and the half type (bf16 or f16) the file stores its
    /// weights in, where it stores them in one: f32 tensors beside it are ones a checkpoint
    /// keeps wide (Evo-1's poles and residues, a norm), not another precision of the weights.
    pub fn float_bytes(&self) -> (u64, Option<DType>) {
        let floats = self.entries.values().filter(|e| e.dtype.is_float());
        let bytes = floats.clone().map(|e| e.numel() as u64 * 4).sum();
        let mut halves = floats.map(|e| e.dtype).filter(|d| d.is_half());
        let first = halves.next();
        let one = first.filter(|&first| halves.all(|d| d == first));
        (bytes, one)
    }

    /// Bytes the float tensors hold once taken as `hold_matrices_in` chose, from the header
    /// alone: each of two or more dimensions (what `take_matrix` takes: linear layers, embedding
    /// tables, convolution kernels, experts) at the held type's size, every other at f32's.
    /// Heads the architecture skips are counted too; a few small tensors (Mamba's convolutions,
    /// learned biases) are held at f32 where this counts them at the held size.
    pub fn held_bytes(&self) -> u64 {
        let floats = self.entries.values().filter(|e| e.dtype.is_float());
        floats
            .map(|e| {
                let each = if e.shape.len() >= 2 {
                    self.matrices.size()
                } else {
                    4
                };
                (e.numel() as u64).saturating_mul(each)
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The stored type of a matrix `take_matrix` converted to the held half type, where one
    /// was: the model's numbers are then not the file's.
    pub fn narrowed_from(&self) -> Option<DType> {
        self.narrowed_from
    }

    fn charge(&mut self, elements: usize, each: u64) -> Result<()> {
        match &mut self.held {
            Some(meter) => meter.add((elements as u64).saturating_mul(each)),
            None => Ok(()),
        }
    }

    /// Takes a large matrix (a linear layer's weight, an embedding table) of `expected_shape`
    /// in the type `hold_matrices_in` chose: values the file stores in that type are taken as
    /// they are, others converted.
    pub fn take_matrix(&mut self, name: &str, expected_shape: &[usize]) -> Result<Matrix> {
        let held = self.matrices;
        if held == Held::F32 || !self.entries.contains_key(name) {
            return self.take(name, expected_shape).map(Matrix::F32);
        }
        // Cloned: charging needs the checkpoint mutably (an entry is a few numbers).
        let entry = &self.float_entry(name)?.clone();
        if entry.shape != expected_shape {
            return Err(self.shape_error(name, &entry.shape, expected_shape));
        }
        self.charge(entry.numel(), held.size())?;
        let bytes = self.read(entry)?;
        let matrix = match (held, held.stores(entry.dtype)) {
            (Held::Bf16, true) => Matrix::Bf16(gather(&bytes, entry, |b| {
                half::bf16::from_le_bytes([b[0], b[1]])
            })),
            (Held::F16, true) => Matrix::F16(gather(&bytes, entry, |b| {
                half::f16::from_le_bytes([b[0], b[1]])
            })),
            (Held::Bf16, false) => Matrix::Bf16(gather(&bytes, entry, |b| {
                half::bf16::from_f32(decode(b, entry.dtype))
            })),
            (Held::F16, false) => Matrix::F16(gather(&bytes, entry, |b| {
                half::f16::from_f32(decode(b, entry.dtype))
            })),
            (Held::F32, _) => unreachable!("taken as f32 above"),
        };
        let not_finite = match &matrix {
            Matrix::Bf16(v) => v.iter().position(|x| !x.is_finite()),
            Matrix::F16(v) => v.iter().position(|x| !x.is_finite()),
            Matrix::F32(_) => None,
        };
        if let Some(at) = not_finite {
            return Err(Error::in_file(
                &self.source,
                format!(
                    "tensor '{name}' is not finite at element {at} in {}: the weights are \
                     corrupt{}",
                    held.name(),
                    if held.stores(entry.dtype) {
                        ""
                    } else {
                        ", or too large for it (hold them in f32: hf:MODEL?weights=f32)"
                    }
                ),
            ));
        }
        if !held.stores(entry.dtype) {
            self.narrowed_from.get_or_insert(entry.dtype);
        }
        self.consume(name);
        Ok(matrix)
    }

    fn shape_error(&self, name: &str, shape: &[usize], expected_shape: &[usize]) -> Error {
        Error::in_file(
            &self.source,
            format!(
                "tensor '{name}' has shape {shape:?}, but config.json implies {expected_shape:?}"
            ),
        )
    }

    fn consume(&mut self, name: &str) {
        if self.consumed.insert(name.to_string()) {
            self.taken.push(name.to_string());
        }
    }

    /// The entry of float tensor `name`, or why there is none.
    fn float_entry(&self, name: &str) -> Result<&TensorEntry> {
        let entry = self.entries.get(name).ok_or_else(|| {
            Error::in_file(
                &self.source,
                format!("the checkpoint has no tensor '{name}', which this architecture needs"),
            )
        })?;
        if !entry.dtype.is_float() {
            return Err(Error::in_file(
                &self.source,
                format!(
                    "tensor '{name}' holds {:?}, expected floating-point weights",
                    entry.dtype
                ),
            ));
        }
        Ok(entry)
    }

    /// Takes a float tensor as contiguous row-major f32, checking its shape.
    pub fn take(&mut self, name: &str, expected_shape: &[usize]) -> Result<Vec<f32>> {
        let elements = expected_shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d));
        if let (Some(missing), Some(elements)) = (&mut self.missing, elements)
            && !self.entries.contains_key(name)
            && elements <= MISSING_STAND_IN_ELEMENTS
        {
            missing.push(name.to_string());
            return Ok(vec![0.0; elements]);
        }
        let (shape, data) = self.take_any(name)?;
        if shape != expected_shape {
            return Err(self.shape_error(name, &shape, expected_shape));
        }
        Ok(data)
    }

    /// Takes a float tensor of whatever shape it has.
    pub fn take_any(&mut self, name: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        let entry = &self.float_entry(name)?.clone();
        self.charge(entry.numel(), 4)?;
        let data = to_f32(&self.read(entry)?, entry);
        // A NaN or infinite weight makes every embedding NaN, and the probe would then fit
        // garbage quietly: refuse the model here, naming the tensor.
        if let Some(at) = data.iter().position(|v| !v.is_finite()) {
            return Err(Error::in_file(
                &self.source,
                format!(
                    "tensor '{name}' holds {} at element {at}: the weights are corrupt, and \
                     geneb does not embed with non-finite weights",
                    data[at]
                ),
            ));
        }
        let shape = entry.shape.clone();
        self.consume(name);
        Ok((shape, data))
    }

    /// Takes a float buffer the model computes with but does not train (rotary frequencies,
    /// fixed positions): PyTorch does not count buffers as parameters, so neither does geneb.
    pub fn take_buffer(&mut self, name: &str, expected_shape: &[usize]) -> Result<Vec<f32>> {
        let first = !self.consumed.contains(name);
        let data = self.take(name, expected_shape)?;
        if first {
            self.taken.pop();
        }
        Ok(data)
    }

    /// The bytes `entry` spans, read from its buffer.
    fn read(&self, entry: &TensorEntry) -> Result<Vec<u8>> {
        let (start, len) = entry.span();
        self.buffers[entry.buffer]
            .read_at(start as u64, len)
            .map_err(|e| e.or_in_file(&self.source))
    }

    /// Parameters of the encoder: the tensors taken so far, buffers and tied copies excluded.
    pub fn encoder_parameters(&self) -> Result<u64> {
        self.parameters(&self.taken)
    }

    /// Parameters of the whole checkpoint as `num_parameters()` counts them for its model
    /// class, which is what GENEB reports: the encoder's and the skipped heads' (`skip_prefix`),
    /// each tied weight once, buffers not at all.
    pub fn model_parameters(&self) -> Result<u64> {
        let all: Vec<String> = self.taken.iter().chain(&self.heads).cloned().collect();
        self.parameters(&all)
    }

    /// Elements of the float tensors `names`, in order, each tied copy of an earlier one left
    /// out (tied weights are one parameter; a `.bin` or a hand-made file stores both names).
    fn parameters(&self, names: &[String]) -> Result<u64> {
        let mut counted: Vec<&TensorEntry> = Vec::new();
        let mut prefixes = HashMap::new();
        let mut elements = 0;
        for name in names {
            let entry = &self.entries[name];
            if !entry.dtype.is_float() {
                continue;
            }
            let mut tied = false;
            for other in &counted {
                if self.is_tied_copy(entry, other, &mut prefixes)? {
                    tied = true;
                    break;
                }
            }
            if !tied {
                elements += entry.numel() as u64;
                counted.push(entry);
            }
        }
        Ok(elements)
    }

    /// Marks a buffer that holds no weights (position or token-type id ranges, a complement
    /// map) as consumed; it is no parameter.
    pub fn skip(&mut self, name: &str) {
        if self.entries.contains_key(name) {
            self.consumed.insert(name.to_string());
        }
    }

    /// Skips every tensor whose name starts with `prefix`: a head the embedding is taken
    /// before (masked-LM, pooler, classifier). Its float tensors still count as the model's
    /// parameters, as `num_parameters()` counts them for the checkpoint's class
    /// (`model_parameters`).
    pub fn skip_prefix(&mut self, prefix: &str) {
        let names: Vec<String> = self
            .entries
            .keys()
            .filter(|n| n.starts_with(prefix) && !self.consumed.contains(*n))
            .cloned()
            .collect();
        self.consumed.extend(names.iter().cloned());
        self.heads.extend(names);
    }

    /// Whether `entry` repeats `other`: the same storage (a `.bin`'s tied names), or a
    /// contiguous matrix of the same shape and bytes (tied weights written twice). Only
    /// matrices are compared by value: the weights models tie are matrices (embeddings,
    /// Caduceus's shared Mamba projections), and two vectors can be equal by chance (a fresh
    /// layer norm's ones). The weights are not in memory, so the first bytes of each are read
    /// once (`prefixes`) and two matrices are read whole only when those agree.
    fn is_tied_copy(
        &self,
        entry: &TensorEntry,
        other: &TensorEntry,
        prefixes: &mut HashMap<(usize, usize), Vec<u8>>,
    ) -> Result<bool> {
        let same_storage = other.buffer == entry.buffer
            && other.byte_offset == entry.byte_offset
            && other.element_offset == entry.element_offset
            && other.shape == entry.shape
            && other.strides == entry.strides;
        if same_storage {
            return Ok(true);
        }
        let contiguous = |e: &TensorEntry| e.strides == contiguous_strides(&e.shape);
        if entry.shape.len() != 2
            || other.shape != entry.shape
            || other.dtype != entry.dtype
            || !contiguous(entry)
            || !contiguous(other)
        {
            return Ok(false);
        }
        for e in [entry, other] {
            let (start, len) = e.span();
            if let std::collections::hash_map::Entry::Vacant(slot) =
                prefixes.entry((e.buffer, start))
            {
                let prefix = self.buffers[e.buffer]
                    .read_at(start as u64, len.min(PREFIX_BYTES))
                    .map_err(|err| err.or_in_file(&self.source))?;
                slot.insert(prefix);
            }
        }
        let prefix = |e: &TensorEntry| &prefixes[&(e.buffer, e.span().0)];
        if prefix(entry) != prefix(other) {
            return Ok(false);
        }
        Ok(self.read(entry)? == self.read(other)?)
    }

    /// Ends loading: an error naming the tensors nobody consumed, so a checkpoint that does not
    /// match the architecture is refused rather than half-loaded.
    pub fn finish(self) -> Result<()> {
        let unused: Vec<&String> = self
            .entries
            .keys()
            .filter(|n| !self.consumed.contains(*n))
            .collect();
        if unused.is_empty() {
            return Ok(());
        }
        Err(Error::in_file(
            &self.source,
            format!(
                "{} tensor(s) in the checkpoint are not used by this architecture: {} — is \
                 config.json from the same model?",
                unused.len(),
                first_names(unused.iter().map(|s| s.as_str())),
            ),
        ))
    }
}

/// The first eight of `names`, then how many more: a message names them without flooding.
fn first_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = names.len();
    let shown: Vec<&str> = names.take(8).collect();
    match total - shown.len() {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// Bytes of a tensor compared before the whole: two matrices that differ almost always differ
/// in their first elements.
const PREFIX_BYTES: usize = 64;

/// `bytes` (the tensor's span, `TensorEntry::span`) as contiguous row-major f32.
fn to_f32(bytes: &[u8], entry: &TensorEntry) -> Vec<f32> {
    gather(bytes, entry, |b| decode(b, entry.dtype))
}

/// One stored float element as f32.
fn decode(b: &[u8], dtype: DType) -> f32 {
    match dtype {
        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        DType::F64 => f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32,
        DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
        DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        _ => unreachable!("float_entry admits floating-point tensors only"),
    }
}

/// `bytes` (the tensor's span) as contiguous row-major values, each element's bytes read by
/// `read`.
fn gather<T>(bytes: &[u8], entry: &TensorEntry, read: impl Fn(&[u8]) -> T) -> Vec<T> {
    let n = entry.numel();
    let size = entry.dtype.size();
    let read = |element: usize| -> T {
        let at = (element - entry.element_offset) * size;
        read(&bytes[at..at + size])
    };
    if entry.strides == contiguous_strides(&entry.shape) {
        return (0..n).map(|i| read(entry.element_offset + i)).collect();
    }
    // A strided view (PyTorch saves transposed views as they are): walk it in row-major order.
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0usize; entry.shape.len()];
    for _ in 0..n {
        let element = entry.element_offset
            + index
                .iter()
                .zip(&entry.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>();
        out.push(read(element));
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < entry.shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// An empty tensor whose file declares an absurd storage offset reads nothing and is empty,
    /// beside a matrix of the same (empty) shape: no overflow, no read past the file.
    #[test]
    fn empty_tensors_read_nothing_whatever_their_offset() {
        let mut entry = TensorEntry::contiguous(DType::F32, vec![0, 3], 0, 0);
        entry.element_offset = usize::MAX / 2;
        let entries = BTreeMap::from([
            ("empty.weight".to_string(), entry),
            (
                "other.weight".to_string(),
                TensorEntry::contiguous(DType::F32, vec![0, 3], 0, 4),
            ),
        ]);
        let buffers: Vec<Box<dyn ByteSource>> = vec![Box::new(f32_bytes(&[1.0, 2.0]))];
        let mut ckpt = Checkpoint::new("test", buffers, entries).unwrap();
        assert_eq!(
            ckpt.take("empty.weight", &[0, 3]).unwrap(),
            Vec::<f32>::new()
        );
        assert_eq!(
            ckpt.take("other.weight", &[0, 3]).unwrap(),
            Vec::<f32>::new()
        );
        assert_eq!(ckpt.encoder_parameters().unwrap(), 0);
    }

    /// A 2 × 2 embedding, its tied copy in a head (shared storage, as a `.bin` keeps it, or the
    /// same bytes stored twice), a head bias equal by chance to an encoder bias, and a buffer.
    #[test]
    fn heads_count_once_per_tied_weight_and_buffers_not_at_all() {
        let embedding = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let ones = f32_bytes(&[1.0, 1.0]);
        let buffers = vec![
            embedding.clone(),
            embedding,
            [ones.clone(), ones].concat(),
            f32_bytes(&[0.5, 0.25]),
        ];
        let entry = |buffer, byte_offset, shape: Vec<usize>| {
            TensorEntry::contiguous(DType::F32, shape, buffer, byte_offset)
        };
        let entries = BTreeMap::from([
            ("embed.weight".to_string(), entry(0, 0, vec![2, 2])),
            ("head.decoder.weight".to_string(), entry(0, 0, vec![2, 2])),
            ("head.copy.weight".to_string(), entry(1, 0, vec![2, 2])),
            ("norm.weight".to_string(), entry(2, 0, vec![2])),
            ("head.norm.weight".to_string(), entry(2, 8, vec![2])),
            ("rotary.inv_freq".to_string(), entry(3, 0, vec![2])),
        ]);
        let buffers = buffers
            .into_iter()
            .map(|b| Box::new(b) as Box<dyn ByteSource>)
            .collect();
        let mut ckpt = Checkpoint::new("test", buffers, entries).unwrap();
        ckpt.take("embed.weight", &[2, 2]).unwrap();
        ckpt.take("norm.weight", &[2]).unwrap();
        ckpt.take_buffer("rotary.inv_freq", &[2]).unwrap();
        ckpt.skip_prefix("head.");
        assert_eq!(ckpt.encoder_parameters().unwrap(), 4 + 2);
        // The decoder and the copy are the embedding; the head's norm is a parameter of its own.
        assert_eq!(ckpt.model_parameters().unwrap(), 4 + 2 + 2);
        ckpt.finish().unwrap();
    }
}
