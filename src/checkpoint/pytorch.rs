//! PyTorch's `torch.save` format (torch >= 1.6), as `pytorch_model.bin` holds it: a zip archive
//! of uncompressed entries under one top folder (`archive/` or the saved file's stem): `data.pkl`,
//! a pickle of the state dict whose tensors name their storages by key, and `data/<key>`, each
//! storage's raw little-endian bytes. Read without Python: the crate's zip directory reader
//! (`crate::zip`, by byte range) and a pickle machine that knows only the opcodes and globals
//! `torch.save` emits for a state dict, so anything else is refused by name instead of being
//! executed or guessed at.

use super::ByteSource;
use super::tensors::{Checkpoint, DType, TensorEntry};
use crate::{Error, Result, zip};
use std::collections::{BTreeMap, HashMap};

/// Reads a `pytorch_model.bin`'s directory and pickle; each tensor is read from `file` (the
/// archive's stored entries) when an architecture takes it.
pub fn read(source: &str, file: Box<dyn ByteSource>) -> Result<Checkpoint> {
    let entries =
        tensor_entries(file.as_ref()).map_err(|message| Error::in_file(source, message))?;
    Checkpoint::new(source, vec![file], entries)
}

fn tensor_entries(
    bytes: &dyn ByteSource,
) -> std::result::Result<BTreeMap<String, TensorEntry>, String> {
    let archive = Archive::read(bytes)?;
    let pickle_name = archive.data_pickle_name()?;
    let folder = &pickle_name[..pickle_name.len() - "data.pkl".len()];
    if let Some(order) = archive.get(&format!("{folder}byteorder")) {
        let order = archive.stored_bytes(bytes, order)?;
        if order != b"little" {
            return Err(format!(
                "its tensors are stored {}-endian; geneb reads little-endian checkpoints only",
                String::from_utf8_lossy(&order)
            ));
        }
    }
    let pickle = archive.stored_bytes(bytes, archive.get(&pickle_name).expect("found above"))?;
    let state = Unpickler::new(&pickle).run()?;
    let Value::Dict(items) = state else {
        return Err(format!(
            "{pickle_name} holds {}, not a state dict; save model.state_dict()",
            state.kind()
        ));
    };
    // A checkpoint that nests the state dict beside other entries: a PyTorch Lightning
    // checkpoint's "state_dict" (JanusDNA's), or "model" (DNAGPT's published files, read as
    // `torch.load(f)["model"]`).
    let nested_under = |name: &str| {
        items.iter().position(
            |(key, value)| matches!((key, value), (Value::Str(k), Value::Dict(_)) if k == name),
        )
    };
    let items = match nested_under("state_dict").or_else(|| nested_under("model")) {
        Some(at) => match items.into_iter().nth(at) {
            Some((_, Value::Dict(state_dict))) => state_dict,
            _ => return Err(corrupt()),
        },
        None => items,
    };
    let mut entries = BTreeMap::new();
    for (key, value) in items {
        let Value::Str(name) = key else {
            return Err(format!(
                "{pickle_name}: a state dict key is {}, not a tensor name",
                key.kind()
            ));
        };
        let Value::Tensor(tensor) = value else {
            return Err(format!(
                "'{name}' is {}, not a tensor: give a state dict of tensors (model.state_dict()), \
                 not a training checkpoint",
                value.describe()
            ));
        };
        let storage_name = format!("{folder}data/{}", tensor.storage.key);
        let stored = archive.get(&storage_name).ok_or_else(|| {
            format!("tensor '{name}' refers to storage {storage_name}, which the archive lacks")
        })?;
        let entry = tensor.entry(data_start(bytes, stored)?, stored.size)?;
        entries.insert(name, entry);
    }
    Ok(entries)
}

struct Archive {
    entries: BTreeMap<String, zip::Entry>,
}

/// The magic number the legacy (pre-1.6) format pickles first, after the protocol opcode.
const LEGACY_MAGIC: [u8; 12] = [
    0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19,
];

impl Archive {
    /// Reads the central directory (and nothing else) by byte range.
    fn read(file: &dyn ByteSource) -> std::result::Result<Archive, String> {
        let archive = zip::Source::Ranges(file);
        let head = archive.read(0, file.size().min(2 + LEGACY_MAGIC.len() as u64) as usize)?;
        if head.starts_with(&[0x80, 0x02]) && head[2..].starts_with(&LEGACY_MAGIC) {
            return Err(
                "it is in PyTorch's legacy (pre-1.6) format, which geneb does not read: \
                        re-save it with a current torch.save or convert it to model.safetensors"
                    .into(),
            );
        }
        if !head.starts_with(b"PK") {
            return Err(
                "not a PyTorch checkpoint (torch.save writes a zip archive, and this is \
                        not one)"
                    .into(),
            );
        }
        let entries = zip::entries(archive)
            .map_err(|e| format!("{e}; download it again"))?
            .into_iter()
            .map(|entry| (entry.name.clone(), entry))
            .collect();
        Ok(Archive { entries })
    }

    fn get(&self, name: &str) -> Option<&zip::Entry> {
        self.entries.get(name)
    }

    /// The pickle's path, `<folder>/data.pkl`: torch names the folder after the saved file.
    fn data_pickle_name(&self) -> std::result::Result<String, String> {
        let mut found = self.entries.keys().filter(|name| {
            name.split_once('/')
                .is_some_and(|(_, rest)| rest == "data.pkl")
        });
        match (found.next(), found.next()) {
            (Some(name), None) => Ok(name.clone()),
            (None, _) => Err("the zip archive has no <folder>/data.pkl, so it is not a \
                              torch.save checkpoint"
                .into()),
            (Some(a), Some(b)) => Err(format!(
                "the zip archive holds two checkpoints ({a} and {b}); give one"
            )),
        }
    }

    /// An entry's bytes, which must be stored uncompressed.
    fn stored_bytes(
        &self,
        file: &dyn ByteSource,
        entry: &zip::Entry,
    ) -> std::result::Result<Vec<u8>, String> {
        let start = data_start(file, entry)?;
        Ok(zip::Source::Ranges(file)
            .read(start, entry.size)?
            .into_owned())
    }
}

/// Where an entry's data begins, which torch.save stores uncompressed (so its size is the
/// stored one).
fn data_start(file: &dyn ByteSource, entry: &zip::Entry) -> std::result::Result<usize, String> {
    if entry.method != 0 {
        return Err(format!(
            "an entry is compressed (zip method {}); geneb reads torch.save's uncompressed \
             archives only — re-save the weights with torch.save",
            entry.method
        ));
    }
    if entry.compressed != entry.size {
        return Err(format!(
            "zip entry {} is stored in {} bytes but declares {}: the file is corrupt",
            entry.name, entry.compressed, entry.size
        ));
    }
    entry
        .data_start(zip::Source::Ranges(file))
        .map_err(|e| format!("{e}; download it again"))
}

/// A storage as `torch.save` names it: element type, archive key, element count.
#[derive(Debug, Clone)]
struct Storage {
    dtype: DType,
    key: String,
    numel: usize,
}

/// `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`: a strided view.
#[derive(Debug, Clone)]
struct TensorView {
    storage: Storage,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

impl TensorView {
    /// The checkpoint entry, after checking that the view lies inside its storage and the
    /// storage inside its archive entry (with overflow-checked arithmetic: the numbers come
    /// from the file).
    fn entry(
        self,
        data_start: usize,
        stored_size: usize,
    ) -> std::result::Result<TensorEntry, String> {
        let size = self.storage.dtype.size();
        let outside = || {
            format!(
                "a tensor viewing storage data/{} reaches outside it: the file is corrupt",
                self.storage.key
            )
        };
        if self.shape.len() != self.strides.len() {
            return Err(outside());
        }
        if self.shape.iter().all(|&n| n > 0) {
            let mut last = self.offset;
            for (n, stride) in self.shape.iter().zip(&self.strides) {
                last = (n - 1)
                    .checked_mul(*stride)
                    .and_then(|step| last.checked_add(step))
                    .ok_or_else(outside)?;
            }
            if last >= self.storage.numel {
                return Err(outside());
            }
        }
        if self
            .storage
            .numel
            .checked_mul(size)
            .is_none_or(|bytes| bytes > stored_size)
        {
            return Err(format!(
                "storage data/{} is shorter than its {} elements: the file is truncated or corrupt",
                self.storage.key, self.storage.numel
            ));
        }
        Ok(TensorEntry {
            dtype: self.storage.dtype,
            shape: self.shape,
            buffer: 0,
            byte_offset: data_start,
            element_offset: self.offset,
            strides: self.strides,
        })
    }
}

/// The globals a state dict pickle may name; any other is refused (a pickle can call anything).
#[derive(Debug, Clone)]
enum Global {
    OrderedDict,
    RebuildTensor,
    RebuildParameter,
    StorageType(DType),
    /// A class a training checkpoint keeps beside its state dict (Lightning's OmegaConf
    /// hyper-parameters, plain containers): named, never called; what it builds is opaque.
    Opaque(String),
}

fn global(module: &str, name: &str) -> std::result::Result<Global, String> {
    Ok(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensor,
        ("torch._utils", "_rebuild_parameter") => Global::RebuildParameter,
        ("torch", storage) => Global::StorageType(match storage {
            "FloatStorage" => DType::F32,
            "DoubleStorage" => DType::F64,
            "HalfStorage" => DType::F16,
            "BFloat16Storage" => DType::BF16,
            "LongStorage" => DType::I64,
            "IntStorage" => DType::I32,
            "ShortStorage" => DType::I16,
            "CharStorage" => DType::I8,
            "ByteStorage" => DType::U8,
            "BoolStorage" => DType::Bool,
            _ => return Err(unknown_global(module, name)),
        }),
        _ if is_training_state(module, name) => Global::Opaque(format!("{module}.{name}")),
        _ => return Err(unknown_global(module, name)),
    })
}

/// The classes a PyTorch Lightning checkpoint pickles around its state dict: its OmegaConf
/// hyper-parameters and their typing annotations, and plain containers and numbers.
fn is_training_state(module: &str, name: &str) -> bool {
    module == "omegaconf"
        || module.starts_with("omegaconf.")
        || module == "typing"
        || (module == "collections" && name == "defaultdict")
        || (matches!(module, "builtins" | "__builtin__")
            && matches!(
                name,
                "dict"
                    | "list"
                    | "set"
                    | "frozenset"
                    | "tuple"
                    | "int"
                    | "long"
                    | "float"
                    | "str"
                    | "bool"
                    | "object"
            ))
}

fn unknown_global(module: &str, name: &str) -> String {
    format!(
        "data.pkl uses {module}.{name}, which a plain state dict does not contain; geneb reads \
         state dicts of tensors only — save model.state_dict() or use model.safetensors"
    )
}

#[derive(Debug, Clone)]
enum Value {
    None,
    Bool,
    Int(i64),
    Float,
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Global(Global),
    Storage(Storage),
    Tensor(TensorView),
    /// An instance of an opaque class (`Global::Opaque`), by its class's name.
    Object(String),
}

impl Value {
    /// `kind`, naming an object's class.
    fn describe(&self) -> String {
        match self {
            Value::Object(class) => format!("an object of {class}"),
            other => other.kind().to_string(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool => "a bool",
            Value::Int(_) => "an int",
            Value::Float => "a float",
            Value::Str(_) => "a string",
            Value::Tuple(_) => "a tuple",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dict",
            Value::Global(_) => "a class",
            Value::Storage(_) => "a storage",
            Value::Tensor(_) => "a tensor",
            Value::Object(_) => "an object",
        }
    }

    /// What holding a copy of the value costs, in nodes (long strings count in 16-byte
    /// chunks), and how deeply it nests: the unpickler's bounds on copies and on nesting.
    fn measure(&self) -> (usize, usize) {
        let children = |items: &mut dyn Iterator<Item = &Value>| {
            items.fold((1, 0), |(nodes, depth), item| {
                let (n, d) = item.measure();
                (nodes + n, depth.max(d))
            })
        };
        let (nodes, depth) = match self {
            Value::Str(text) => (1 + text.len() / 16, 0),
            Value::Storage(storage) => (1 + storage.key.len() / 16, 0),
            Value::Object(class) => (1 + class.len() / 16, 0),
            Value::Tensor(view) => (1 + view.storage.key.len() / 16 + view.shape.len() * 2, 0),
            Value::Tuple(items) | Value::List(items) => children(&mut items.iter()),
            Value::Dict(pairs) => children(&mut pairs.iter().flat_map(|(key, value)| [key, value])),
            Value::None | Value::Bool | Value::Int(_) | Value::Float | Value::Global(_) => (1, 0),
        };
        (nodes, depth + 1)
    }
}

/// The deepest nesting a state dict pickle builds is about five (the dict, a tensor's
/// arguments, its shape tuple, `_metadata`'s dicts); deeper is refused, so dropping or copying
/// a value can never exhaust the native stack.
const MAX_NESTING: usize = 32;

struct Unpickler<'p> {
    pickle: &'p [u8],
    at: usize,
    stack: Vec<Value>,
    /// Stack heights at each MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    /// Nodes that memo stores and recalls may still copy. A real state dict recalls a few
    /// small values per tensor; a hostile pickle recalling a value that holds itself would
    /// otherwise double its memory with every two bytes.
    copy_budget: usize,
    /// Values and marks pushed or copied so far: what the stack, the memo and the containers
    /// built from them hold is at most this many values, charged to the memory budget.
    pushed: u64,
}

/// A state dict's pickle builds each container from a batch of at most a thousand or so
/// stacked items (pickle's `SETITEMS`/`APPENDS` batches); a million waiting values is no state
/// dict, whatever the memory budget allows.
const MAX_STACK: usize = 1 << 20;

impl<'p> Unpickler<'p> {
    fn new(pickle: &'p [u8]) -> Unpickler<'p> {
        Unpickler {
            pickle,
            at: 0,
            stack: Vec::new(),
            marks: Vec::new(),
            memo: HashMap::new(),
            copy_budget: 4096 + 8 * pickle.len(),
            pushed: 0,
        }
    }

    /// Counts one more pushed value or mark against `MAX_STACK` and the memory budget.
    fn charge_push(&mut self) -> std::result::Result<(), String> {
        if self.stack.len() + self.marks.len() >= MAX_STACK {
            return Err(format!(
                "data.pkl stacks more than {MAX_STACK} values without building anything from \
                 them: it is not a state dict"
            ));
        }
        self.hold(1)
    }

    /// Counts `values` more made (pushed or copied) against the memory budget.
    fn hold(&mut self, values: u64) -> std::result::Result<(), String> {
        self.pushed = self.pushed.saturating_add(values);
        let held = self
            .pushed
            .saturating_mul(std::mem::size_of::<Value>() as u64);
        if held > crate::budget::limit() {
            return Err(format!(
                "data.pkl builds more values than geneb's memory budget of {} holds (raise it \
                 with --max-memory or {}): it is not a state dict",
                crate::budget::human(crate::budget::limit()),
                crate::budget::ENV
            ));
        }
        Ok(())
    }

    fn push(&mut self, value: Value) -> std::result::Result<(), String> {
        self.charge_push()?;
        self.stack.push(value);
        Ok(())
    }

    fn take(&mut self, n: usize) -> std::result::Result<&'p [u8], String> {
        let bytes = self
            .at
            .checked_add(n)
            .and_then(|end| self.pickle.get(self.at..end))
            .ok_or("data.pkl is truncated: download the file again")?;
        self.at += n;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> std::result::Result<u64, String> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0, |acc, byte| (acc << 8) | u64::from(*byte)))
    }

    fn line(&mut self) -> std::result::Result<String, String> {
        let rest = &self.pickle[self.at..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("data.pkl is truncated: download the file again")?;
        self.at += end + 1;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }

    fn text(&mut self, len: usize) -> std::result::Result<Value, String> {
        let bytes = self.take(len)?;
        let text = std::str::from_utf8(bytes).map_err(|_| "data.pkl holds invalid UTF-8")?;
        Ok(Value::Str(text.to_string()))
    }

    fn pop(&mut self) -> std::result::Result<Value, String> {
        if self
            .marks
            .last()
            .is_some_and(|&mark| mark >= self.stack.len())
        {
            return Err(corrupt());
        }
        self.stack.pop().ok_or_else(corrupt)
    }

    fn pop_mark(&mut self) -> std::result::Result<Vec<Value>, String> {
        let mark = self.marks.pop().ok_or_else(corrupt)?;
        if mark > self.stack.len() {
            return Err(corrupt());
        }
        Ok(self.stack.split_off(mark))
    }

    fn top(&mut self) -> std::result::Result<&mut Value, String> {
        self.stack.last_mut().ok_or_else(corrupt)
    }

    /// Charges a copy of `value` to the copy budget and the memory budget, before it is made.
    fn charge(&mut self, value: &Value) -> std::result::Result<(), String> {
        let nodes = value.measure().0;
        self.copy_budget = self
            .copy_budget
            .checked_sub(nodes)
            .ok_or("data.pkl copies more objects than a state dict could: it is not one")?;
        self.hold(nodes as u64)
    }

    /// Checks that values about to go into a container keep it within `MAX_NESTING`.
    fn nestable<'v>(items: impl IntoIterator<Item = &'v Value>) -> std::result::Result<(), String> {
        if items
            .into_iter()
            .any(|item| item.measure().1 >= MAX_NESTING)
        {
            return Err(
                "data.pkl nests objects deeper than a state dict does: it is not one".into(),
            );
        }
        Ok(())
    }

    fn memoize(&mut self, index: u32) -> std::result::Result<(), String> {
        let top = self.stack.pop().ok_or_else(corrupt)?;
        self.charge(&top)?;
        self.memo.insert(index, top.clone());
        self.push(top)?;
        Ok(())
    }

    fn recall(&mut self, index: u32) -> std::result::Result<(), String> {
        let value = self.memo.remove(&index).ok_or_else(corrupt)?;
        self.charge(&value)?;
        self.push(value.clone())?;
        self.memo.insert(index, value);
        Ok(())
    }

    /// Runs the pickle to its STOP and returns the object it built.
    fn run(mut self) -> std::result::Result<Value, String> {
        loop {
            let opcode = self.take(1)?[0];
            match opcode {
                0x80 => {
                    let protocol = self.uint(1)?;
                    if protocol > 5 {
                        return Err(format!("data.pkl uses pickle protocol {protocol}"));
                    }
                }
                0x95 => drop(self.uint(8)?), // FRAME: a length hint
                b'.' => return self.pop(),
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.push(Value::Global(global(&module, &name)?))?;
                }
                0x93 => {
                    let (Value::Str(name), Value::Str(module)) = (self.pop()?, self.pop()?) else {
                        return Err(corrupt());
                    };
                    self.push(Value::Global(global(&module, &name)?))?;
                }
                b'(' => {
                    self.charge_push()?;
                    self.marks.push(self.stack.len());
                }
                b')' => self.push(Value::Tuple(Vec::new()))?,
                b']' => self.push(Value::List(Vec::new()))?,
                b'}' => self.push(Value::Dict(Vec::new()))?,
                b't' => {
                    let items = self.pop_mark()?;
                    Self::nestable(&items)?;
                    self.push(Value::Tuple(items))?;
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    Self::nestable(&items)?;
                    self.push(Value::List(items))?;
                }
                0x85..=0x87 => {
                    let n = usize::from(opcode - 0x84);
                    if self.stack.len() < n {
                        return Err(corrupt());
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    Self::nestable(&items)?;
                    self.push(Value::Tuple(items))?;
                }
                // Items added to an opaque object (a defaultdict, a list subclass) are dropped.
                b'a' => {
                    let item = self.pop()?;
                    Self::nestable([&item])?;
                    match self.top()? {
                        Value::List(list) => list.push(item),
                        Value::Object(_) => {}
                        _ => return Err(corrupt()),
                    }
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    Self::nestable(&items)?;
                    match self.top()? {
                        Value::List(list) => list.extend(items),
                        Value::Object(_) => {}
                        _ => return Err(corrupt()),
                    }
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    Self::nestable([&key, &value])?;
                    match self.top()? {
                        Value::Dict(dict) => dict.push((key, value)),
                        Value::Object(_) => {}
                        _ => return Err(corrupt()),
                    }
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return Err(corrupt());
                    }
                    Self::nestable(&items)?;
                    let dict = match self.top()? {
                        Value::Dict(dict) => dict,
                        Value::Object(_) => continue,
                        _ => return Err(corrupt()),
                    };
                    let mut items = items.into_iter();
                    while let (Some(key), Some(value)) = (items.next(), items.next()) {
                        dict.push((key, value));
                    }
                }
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool)?,
                0x89 => self.push(Value::Bool)?,
                // BININT1, BININT2 (unsigned), BININT (signed 32-bit)
                b'K' | b'M' => {
                    let v = self.uint(if opcode == b'K' { 1 } else { 2 })?;
                    self.push(Value::Int(v as i64))?;
                }
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.push(Value::Int(i64::from(v)))?;
                }
                0x8a => {
                    let n = self.uint(1)? as usize;
                    if n > 8 {
                        return Err("data.pkl holds an integer wider than 64 bits".into());
                    }
                    let v = self.uint(n)?;
                    // Two's complement of n bytes, sign-extended.
                    let shift = 64 - 8 * n as u32;
                    let v = if n == 0 {
                        0
                    } else {
                        ((v << shift) as i64) >> shift
                    };
                    self.push(Value::Int(v))?;
                }
                b'G' => {
                    self.take(8)?;
                    self.push(Value::Float)?;
                }
                // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8: UTF-8 after its length
                b'X' | 0x8c | 0x8d => {
                    let width = match opcode {
                        b'X' => 4,
                        0x8c => 1,
                        _ => 8,
                    };
                    let len = usize::try_from(self.uint(width)?).map_err(|_| corrupt())?;
                    let value = self.text(len)?;
                    self.push(value)?;
                }
                // BINPUT, LONG_BINPUT, MEMOIZE
                b'q' | b'r' => {
                    let index = self.uint(if opcode == b'q' { 1 } else { 4 })? as u32;
                    self.memoize(index)?;
                }
                0x94 => self.memoize(self.memo.len() as u32)?,
                // BINGET, LONG_BINGET
                b'h' | b'j' => {
                    let index = self.uint(if opcode == b'h' { 1 } else { 4 })? as u32;
                    self.recall(index)?;
                }
                b'Q' => {
                    let id = self.pop()?;
                    self.push(persistent_storage(id)?)?;
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    self.push(reduce(callable, args)?)?;
                }
                // NEWOBJ (cls, args) and NEWOBJ_EX (cls, args, kwargs): `cls.__new__`, read as
                // a call.
                0x81 | 0x92 => {
                    if opcode == 0x92 {
                        self.pop()?;
                    }
                    let args = self.pop()?;
                    let class = self.pop()?;
                    self.push(reduce(class, args)?)?;
                }
                b'b' => {
                    // BUILD sets object state: for a state dict that is its `_metadata`
                    // (module versions), which loading does not need; an opaque object's
                    // state is dropped with it.
                    self.pop()?;
                    if !matches!(self.top()?, Value::Dict(_) | Value::Object(_)) {
                        return Err(corrupt());
                    }
                }
                other => {
                    return Err(format!(
                        "data.pkl uses pickle opcode 0x{other:02x} at byte {}, which torch.save \
                         does not write for a state dict; re-save with torch.save or use \
                         model.safetensors",
                        self.at - 1
                    ));
                }
            }
        }
    }
}

fn corrupt() -> String {
    "data.pkl is corrupt (its pickle does not build a state dict): download the file again".into()
}

/// BINPERSID's id for a storage: `('storage', <StorageType>, key, location, numel)`.
fn persistent_storage(id: Value) -> std::result::Result<Value, String> {
    let Value::Tuple(fields) = id else {
        return Err(corrupt());
    };
    match fields.as_slice() {
        [
            Value::Str(tag),
            Value::Global(Global::StorageType(dtype)),
            Value::Str(key),
            Value::Str(_location),
            Value::Int(numel),
        ] if tag == "storage" => Ok(Value::Storage(Storage {
            dtype: *dtype,
            key: key.clone(),
            numel: usize::try_from(*numel).map_err(|_| corrupt())?,
        })),
        _ => Err(corrupt()),
    }
}

fn ints(value: &Value) -> std::result::Result<Vec<usize>, String> {
    let Value::Tuple(items) = value else {
        return Err(corrupt());
    };
    items
        .iter()
        .map(|item| match item {
            Value::Int(v) => usize::try_from(*v).map_err(|_| corrupt()),
            _ => Err(corrupt()),
        })
        .collect()
}

fn reduce(callable: Value, args: Value) -> std::result::Result<Value, String> {
    let (Value::Global(global), Value::Tuple(args)) = (callable, args) else {
        return Err(corrupt());
    };
    match (global, args.as_slice()) {
        (Global::Opaque(class), _) => Ok(Value::Object(class)),
        (Global::OrderedDict, []) => Ok(Value::Dict(Vec::new())),
        // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
        (
            Global::RebuildTensor,
            [
                Value::Storage(storage),
                Value::Int(offset),
                size,
                stride,
                ..,
            ],
        ) => Ok(Value::Tensor(TensorView {
            storage: storage.clone(),
            offset: usize::try_from(*offset).map_err(|_| corrupt())?,
            shape: ints(size)?,
            strides: ints(stride)?,
        })),
        // (data, requires_grad, backward_hooks): a parameter is its tensor.
        (Global::RebuildParameter, [tensor @ Value::Tensor(_), ..]) => Ok(tensor.clone()),
        _ => Err(corrupt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zip::{CENTRAL_HEADER, EOCD, EOCD64_LOCATOR};

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pytorch/");

    fn fixture() -> Vec<u8> {
        std::fs::read(format!("{FIXTURE}small_state.bin")).unwrap()
    }

    fn read(source: &str, bytes: Vec<u8>) -> Result<Checkpoint> {
        super::read(source, Box::new(bytes))
    }

    /// Every tensor torch.save wrote, read back as torch.load reads it (the oracle's values).
    #[test]
    fn reads_what_torch_load_reads() {
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(format!("{FIXTURE}small_state.json")).unwrap())
                .unwrap();
        let tensors = expected["tensors"].as_object().unwrap();
        let mut ckpt = read("small_state.bin", fixture()).unwrap();
        let names: Vec<&str> = ckpt.names().collect();
        let mut expected_names: Vec<&str> = tensors.keys().map(String::as_str).collect();
        expected_names.sort();
        assert_eq!(names, expected_names);
        for (name, tensor) in tensors {
            let shape: Vec<usize> = serde_json::from_value(tensor["shape"].clone()).unwrap();
            let values: Vec<f64> = serde_json::from_value(tensor["values"].clone()).unwrap();
            assert_eq!(ckpt.shape(name).unwrap(), shape.as_slice(), "{name}");
            if tensor["dtype"] == "int64" {
                let err = ckpt.take_any(name).unwrap_err().to_string();
                assert!(err.contains("holds I64"), "{err}");
                ckpt.skip(name);
                continue;
            }
            let got = ckpt.take(name, &shape).unwrap();
            let want: Vec<f32> = values.iter().map(|v| *v as f32).collect();
            assert_eq!(got, want, "{name}");
        }
        ckpt.finish().unwrap();
    }

    /// A PyTorch Lightning checkpoint (JanusDNA's pretraining files): its "state_dict" is read,
    /// past the OmegaConf hyper-parameters, the optimiser's tensors and the loops' state.
    #[test]
    fn reads_the_state_dict_of_a_lightning_checkpoint() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/models/janus/w/last.ckpt"
        );
        let ckpt = read("last.ckpt", std::fs::read(path).unwrap()).unwrap();
        let names: Vec<&str> = ckpt.names().collect();
        assert!(
            names.contains(&"model.model.final_layernorm.weight"),
            "{names:?}"
        );
        assert!(names.contains(&"model.lm_head.weight"), "{names:?}");
        assert!(
            names.iter().all(|name| name.starts_with("model.")),
            "{names:?}"
        );
        // No byte of its pickle, flipped, makes the unpickler panic (every 61st: all 50 kB
        // take minutes in a debug build).
        let bytes = std::fs::read(path).unwrap();
        let name = bytes.windows(8).position(|w| w == b"data.pkl").unwrap();
        let start = name
            + bytes[name..]
                .windows(2)
                .position(|w| w == b"\x80\x02")
                .unwrap();
        let len = bytes[start..]
            .windows(4)
            .position(|w| w == b"PK\x03\x04")
            .unwrap();
        let mut pickle = bytes[start..start + len].to_vec();
        assert!(Unpickler::new(&pickle).run().is_ok());
        for at in (0..pickle.len()).step_by(61) {
            pickle[at] ^= 0xff;
            let _ = Unpickler::new(&pickle).run();
            pickle[at] ^= 0xff;
        }
        // Only the checkpoint's classes are opaque: others are still refused by name.
        let message = Unpickler::new(b"\x80\x02cbuiltins\neval\nq\x00.")
            .run()
            .unwrap_err();
        assert!(message.contains("uses builtins.eval"), "{message}");
    }

    /// Truncations and single-byte corruptions of a real file are errors or (where the byte
    /// does not matter) the same load — never a panic.
    #[test]
    fn truncated_and_corrupted_files_never_panic() {
        let bytes = fixture();
        for len in 0..bytes.len() {
            let err = read("t.bin", bytes[..len].to_vec()).err().unwrap();
            assert!(err.to_string().starts_with("t.bin: "), "{err}");
        }
        for at in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[at] ^= 0xff;
            if let Ok(mut ckpt) = read("c.bin", corrupt) {
                let names: Vec<String> = ckpt.names().map(str::to_string).collect();
                for name in names {
                    let _ = ckpt.take_any(&name);
                }
            }
        }
    }

    fn find(bytes: &[u8], signature: u32) -> usize {
        bytes
            .windows(4)
            .rposition(|w| w == signature.to_le_bytes())
            .unwrap()
    }

    /// torch.save always writes the zip64 end record too; an archive whose plain end record
    /// is saturated (as over 4 GiB) is read through it.
    #[test]
    fn reads_through_the_zip64_end_record() {
        let mut bytes = fixture();
        let eocd = find(&bytes, EOCD);
        bytes[eocd + 10..eocd + 12].copy_from_slice(&[0xff; 2]);
        bytes[eocd + 16..eocd + 20].copy_from_slice(&[0xff; 4]);
        let ckpt = read("z.bin", bytes.clone()).unwrap();
        assert_eq!(ckpt.names().count(), 10);
        let locator = find(&bytes, EOCD64_LOCATOR);
        bytes[locator] = b'X';
        let err = read("z.bin", bytes).err().unwrap().to_string();
        assert!(err.contains("zip64 end record locator is missing"), "{err}");
    }

    #[test]
    fn refuses_what_it_cannot_read_by_name() {
        let mut compressed = fixture();
        let first_entry = compressed
            .windows(4)
            .position(|w| w == CENTRAL_HEADER.to_le_bytes())
            .unwrap();
        compressed[first_entry + 10] = 8; // deflate
        let err = read("m.bin", compressed).err().unwrap().to_string();
        assert!(err.contains("compressed (zip method 8)"), "{err}");
        let err = |bytes: Vec<u8>| read("m.bin", bytes).err().unwrap().to_string();
        let mut legacy = vec![0x80, 0x02];
        legacy.extend_from_slice(&LEGACY_MAGIC);
        assert!(err(legacy).contains("legacy (pre-1.6) format"));
        assert!(err(b"{\"not\": \"zip\"}".to_vec()).contains("not a PyTorch checkpoint"));
        // A pickle calling something other than torch's tensor rebuilders.
        let mut unpickler = Unpickler::new(b"\x80\x02cos\nsystem\nq\x00.");
        assert!(unpickler.run().unwrap_err().contains("uses os.system"));
        unpickler = Unpickler::new(b"\x80\x02}q\x00(K\x01K\x02u\x28.");
        let message = unpickler.run().unwrap_err();
        assert!(
            message.contains("corrupt") || message.contains("truncated"),
            "{message}"
        );
        unpickler = Unpickler::new(b"\x80\x02S'x'\n.");
        assert!(unpickler.run().unwrap_err().contains("opcode 0x53"));
    }

    /// Pickles built to exhaust memory or the stack from a few bytes: copies of a value
    /// recalled from the memo over and over, and lists nested in lists.
    #[test]
    fn pickle_bombs_are_refused_before_they_grow() {
        let mut copies = b"\x80\x02](".to_vec();
        copies.extend(std::iter::repeat_n(b'N', 1000));
        copies.extend_from_slice(b"eq\x00");
        copies.extend(std::iter::repeat_n(*b"h\x00", 100_000).flatten());
        copies.push(b'.');
        let message = Unpickler::new(&copies).run().unwrap_err();
        assert!(message.contains("copies more objects"), "{message}");

        let mut nested = b"\x80\x02".to_vec();
        nested.extend(std::iter::repeat_n(b']', 100_000));
        nested.extend(std::iter::repeat_n(b'a', 99_999));
        nested.push(b'.');
        let message = Unpickler::new(&nested).run().unwrap_err();
        assert!(message.contains("nests objects deeper"), "{message}");
        // The same through STACK_GLOBAL, as protocol 4 names callables.
        let message = Unpickler::new(b"\x80\x04\x8c\x08builtins\x8c\x04exec\x93.")
            .run()
            .unwrap_err();
        assert!(message.contains("uses builtins.exec"), "{message}");
    }

    /// 20 MB of pushes (values or marks) that never build anything: refused after a million,
    /// not held as 20 million values.
    #[test]
    fn a_pickle_of_megabytes_of_pushes_is_refused() {
        for push in [b'N', b'('] {
            let mut pushes = b"\x80\x02".to_vec();
            pushes.extend(std::iter::repeat_n(push, 20 << 20));
            pushes.push(b'.');
            let message = Unpickler::new(&pushes).run().unwrap_err();
            assert!(
                message.contains("stacks more than 1048576 values"),
                "{message}"
            );
        }
    }
}
