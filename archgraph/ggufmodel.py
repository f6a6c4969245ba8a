"""A GGUF file as an archgraph model: its metadata as a Hugging Face config, its tensors checked.

`gguf_config` turns the header (`archgraph.ggufread`) into the config.json the family's key
table reads, by the table `specs/gguf/architectures.yaml` (GGUF key -> config key per
`general.architecture`); every family template is reused as it is.  `as_checkpoint` names the
file's tensors as the template names them (gguf-py's TensorNameMap, the map llama.cpp's
converter writes with), so `archgraph.passes.checkpoint.compare` checks them tensor by tensor:
`load_gguf` refuses a file whose tensors are not the template's, by name and both shapes.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, NamedTuple

from .checkpoint import Checkpoint
from .errors import ArchgraphError, Loc, shortened
from .ggufread import ArrayValue, GGUFFile, gguf_module
from .spec.sources import spec_dir

# tensors llama.cpp stores that are no parameter of the Hugging Face model (computed buffers)
BUFFERS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")


class StoredTensor(NamedTuple):
    """A GGUF tensor as a checkpoint's (`archgraph.checkpoint.TensorInfo`'s fields), its bytes as stored."""

    dtype: str               # its ggml type (two joined by + for parts stored apart)
    shape: tuple[int, ...]   # PyTorch's order
    nbytes: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@lru_cache(maxsize=1)
def table() -> Mapping[str, Any]:
    """specs/gguf/architectures.yaml, parsed."""
    from .spec.yamlload import load_file
    folder = spec_dir()
    if folder is None or not (folder / "gguf" / "architectures.yaml").is_file():
        raise ArchgraphError("the GGUF table (specs/gguf/architectures.yaml) is missing from this installation",
                             hint="reinstall archgraph")
    return load_file(folder / "gguf" / "architectures.yaml")


def architecture(gfile: GGUFFile) -> tuple[str, Mapping[str, Any]]:
    """(general.architecture, its entry), or the refusal naming it."""
    arch = gfile.metadata.get("general.architecture")
    known = table()["architectures"]
    if not isinstance(arch, str):
        raise ArchgraphError(f"{gfile.path}: the file has no general.architecture, so its family is unknown",
                             hint="GGUF files made by llama.cpp name it; architectures archgraph maps: "
                                  + ", ".join(known))
    if arch not in known:
        raise ArchgraphError(f"{gfile.path}: GGUF architecture '{shortened(arch)}' is not supported",
                             hint="architectures archgraph maps: " + ", ".join(known) +
                                  " (specs/gguf/architectures.yaml: add a key table entry)")
    return arch, known[arch]


def gguf_config(gfile: GGUFFile, origin: dict[str, str] | None = None) -> dict[str, Any]:
    """The config.json (as a dict) the file's metadata and tensors describe; `origin` (when given)
    gets, for each config key set, where in the file it came from."""
    origin = {} if origin is None else origin
    arch, entry = architecture(gfile)
    keys = {**table()["keys"], **(entry.get("keys") or {})}
    config: dict[str, Any] = {}
    read = _read_keys(entry)
    for key, value in gfile.metadata.items():
        if key.startswith(tuple(table()["ignored"])):
            continue
        short = key[len(arch) + 1:] if key.startswith(arch + ".") else None
        if short is not None and (short in table()["checked"] or short in (entry.get("unread") or {})):
            continue
        if short is None or keys.get(short) is None:
            raise ArchgraphError(f"{gfile.path}: metadata '{shortened(key)}' = {_shown(value)} is not read by "
                                 f"archgraph's '{arch}' mapping", hint="archgraph honours every key of a "
                                 "model's architecture or refuses it; add it to specs/gguf/architectures.yaml")
        if isinstance(value, ArrayValue):
            raise ArchgraphError(f"{gfile.path}: metadata '{shortened(key)}' is an array (per layer), which "
                                 f"archgraph's '{arch}' mapping reads as one value", hint="write a spec for it")
        if short == "attention.key_length" and "head_dim" not in read:
            continue  # a family of heads of hidden / heads dims: _sizes checks it is that
        if str(keys[short]).split(".")[0] not in read:
            raise ArchgraphError(f"{gfile.path}: metadata '{shortened(key)}' sets the config's '{keys[short]}', which "
                                 f"the '{_model_type(gfile, entry)}' key table does not read",
                                 hint="say in specs/gguf/architectures.yaml's 'unread:' why it may be left, or map it")
        _put(config, str(keys[short]), value)
        origin[str(keys[short])] = key
    model_type = _model_type(gfile, entry)
    config.update(model_type=model_type, architectures=[entry["class"] if model_type == entry["model_type"]
                                                        else entry["experts_class"]])
    for flag, tensor in (entry.get("bias") or {}).items():
        config[flag] = tensor in gfile.tensors
        origin[flag] = f"{tensor} {'present' if config[flag] else 'absent'}"
    for flag, key in (entry.get("is_one") or {}).items():
        config[flag] = gfile.metadata.get(f"{arch}.{key}") == 1
        origin[flag] = f"{arch}.{key} {'is' if config[flag] else 'is not'} 1"
    for key, value in (entry.get("set") or {}).items():
        config[key] = value
    _sizes(gfile, arch, config, keys, origin)
    return config


def imported(path, gfile: GGUFFile | None = None):
    """The GGUF file at `path` as `archgraph.hf.import_config` imports a config, each variable's source
    the file's key or tensor (`import-hf model.gguf`, `load`)."""
    from .ggufread import read_gguf
    from .hf import Imported, import_config
    origin: dict[str, str] = {}
    found = import_config(gguf_config(gfile or read_gguf(path), origin), path)
    sources = {var: f"GGUF {origin[src]}" if src in origin else src for var, src in found.sources.items()}
    return Imported(found.name, found.model_type, found.architecture, found.template, found.variables, sources)


def _model_type(gfile: GGUFFile, entry: Mapping[str, Any]) -> str:
    """The entry's model_type, or its `experts:` one when the file has experts (llama with experts: mixtral)."""
    arch = gfile.metadata.get("general.architecture")
    return entry["experts"] if entry.get("experts") and gfile.metadata.get(f"{arch}.expert_count") else entry["model_type"]


def _read_keys(entry: Mapping[str, Any]) -> set[str]:
    """The top-level config keys the key tables of the entry's model types read."""
    from .hf import family
    out: set[str] = set()
    for model_type in {entry["model_type"], entry.get("experts") or entry["model_type"]}:
        for rule in (family(model_type) or {}).get("variables", {}).values():
            texts = [rule.get(k) for k in ("key", "unless")] if isinstance(rule, Mapping) else [rule]
            for text in texts:
                out.update(part.split(".")[0].split("[")[0] for part in str(text or "").rstrip("?").split("|"))
    return out


def _sizes(gfile: GGUFFile, arch: str, config: dict[str, Any], keys: Mapping[str, Any],
           origin: dict[str, str]) -> None:
    """The vocabulary from token_embd.weight, the tie from output.weight, and the checked keys."""
    embed = gfile.tensors.get("token_embd.weight")
    if embed is None or len(embed.shape) != 2:
        raise ArchgraphError(f"{gfile.path}: no token_embd.weight of two dimensions, so the vocabulary is "
                             "unknown", hint="the file is damaged or not a language model's")
    config["vocab_size"] = embed.shape[0]
    origin["vocab_size"] = "token_embd.weight's rows"
    given = gfile.metadata.get(f"{arch}.vocab_size")
    if given is not None and given != embed.shape[0]:
        raise ArchgraphError(f"{gfile.path}: {arch}.vocab_size is {given} but token_embd.weight has "
                             f"{embed.shape[0]} rows", hint="the file is damaged: convert it again")
    scaled = [name for name in BUFFERS if name in gfile.tensors]
    if scaled:  # llama.cpp's rotary factors (Llama 3's scaling, Phi-3's longrope) are values, not a shape
        gfile.notes.append(f"the file scales its rotary frequencies by {' and '.join(scaled)}, values a header does "
                           "not hold: counts and memory are exact; the spec's rotary tables are unscaled")
    tokens = gfile.metadata.get("tokenizer.ggml.tokens")
    if isinstance(tokens, ArrayValue) and tokens.length != embed.shape[0]:
        gfile.notes.append(f"the tokenizer lists {tokens.length:,} tokens, token_embd.weight has "
                           f"{embed.shape[0]:,} rows: the count uses the tensor")
    config["tie_word_embeddings"] = "output.weight" not in gfile.tensors
    origin["tie_word_embeddings"] = f"output.weight {'absent' if config['tie_word_embeddings'] else 'present'}"
    head_dim = config.get("head_dim")
    key_dim = gfile.metadata.get(f"{arch}.attention.key_length")
    if head_dim is None and key_dim is not None and key_dim != _width(config, keys):
        raise ArchgraphError(f"{gfile.path}: {arch}.attention.key_length is {key_dim}, but archgraph's '{arch}' "
                             f"template has heads of hidden size / heads = {_width(config, keys)}",
                             hint="write a spec for it")
    value_dim = gfile.metadata.get(f"{arch}.attention.value_length")
    if value_dim is not None and value_dim != (head_dim or key_dim or _width(config, keys)):
        raise ArchgraphError(f"{gfile.path}: {arch}.attention.value_length is {value_dim} but key_length is "
                             f"{head_dim}; archgraph's '{arch}' template has heads of one size",
                             hint="write a spec for it")
    rotated = gfile.metadata.get(f"{arch}.rope.dimension_count")
    width = head_dim or _width(config, keys)
    if rotated is not None and width and rotated != width:
        if config["model_type"] != "phi3":
            raise ArchgraphError(f"{gfile.path}: {arch}.rope.dimension_count is {rotated} of heads of {width}; "
                                 f"archgraph's '{arch}' template rotates whole heads", hint="write a spec for it")
        config["partial_rotary_factor"] = rotated / width
        origin["partial_rotary_factor"] = f"{arch}.rope.dimension_count / head size"


def _width(config: Mapping[str, Any], keys: Mapping[str, Any]) -> int | None:
    hidden, heads = config.get(keys["embedding_length"]), config.get(keys["attention.head_count"])
    return hidden // heads if isinstance(hidden, int) and isinstance(heads, int) and heads else None


def _put(config: dict[str, Any], key: str, value: Any) -> None:
    """config[a][b] = value for key 'a.b'."""
    *parents, last = key.split(".")
    for part in parents:
        config = config.setdefault(part, {})
    config[last] = value


def _shown(value: Any) -> str:
    if isinstance(value, ArrayValue):
        return f"an array of {value.length:,} {value.item_type}"
    return shortened(repr(value))


def gguf_names(gfile: GGUFFile, names) -> dict[str, list[str]]:
    """Template tensor name -> the file's tensors that hold it (one, or the parts of a split), for
    each name gguf-py's TensorNameMap maps for the file's architecture."""
    gguf = gguf_module()
    arch, entry = architecture(gfile)
    arch_ids = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    blocks = gfile.metadata.get(f"{arch}.block_count")
    tmap = gguf.get_tensor_name_map(arch_ids[arch], blocks if isinstance(blocks, int) else 0)
    splits = entry.get("split") or {}
    out: dict[str, list[str]] = {}
    for name in names:
        whole = _one(tmap, name)
        if whole is not None:
            out[name] = [whole]
            continue
        for end, rule in splits.items():
            if name.endswith(end):
                parts = [_one(tmap, name[:-len(end)] + part) for part in rule["parts"]]
                if all(parts):
                    out[name] = parts
    return out


def _one(tmap, name: str) -> str | None:
    found = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
    if found is None:
        return None
    return found if found.endswith((".weight", ".bias")) else found + ".weight"


def as_checkpoint(gfile: GGUFFile, names, transposed=()) -> Checkpoint:
    """The file's tensors as a checkpoint named as the template names them (`names`: the template's
    tensor names), split parts joined; a tensor no name maps keeps its GGUF name (an extra).  Each
    tensor's dtype is its ggml type, its bytes as stored."""
    entry = architecture(gfile)[1]
    splits = entry.get("split") or {}
    used: set[str] = set()
    tensors: dict[str, StoredTensor] = {}
    for name, parts in gguf_names(gfile, names).items():
        found = [gfile.tensors[p] for p in parts if p in gfile.tensors]
        if len(found) != len(parts):
            continue
        used.update(parts)
        shape = list(found[0].shape)
        if len(found) > 1:
            dim = next(rule["dim"] for end, rule in splits.items() if name.endswith(end))
            if any(len(t.shape) != len(shape) for t in found) or dim >= len(shape):
                continue
            shape[dim] = sum(t.shape[dim] for t in found)
        if name.endswith(tuple(transposed)) and len(shape) == 2:
            shape.reverse()
        kinds = sorted({t.type_name for t in found})
        tensors[name] = StoredTensor("+".join(kinds), tuple(shape), sum(t.nbytes for t in found))
    for tensor in gfile.tensors.values():
        if tensor.name not in used:
            tensors[tensor.name] = StoredTensor(tensor.type_name, tensor.shape, tensor.nbytes)
    return Checkpoint(gfile.path, tensors, [gfile.path], notes=list(gfile.notes))


def check_tensors(model, gfile: GGUFFile, model_type: str) -> None:
    """Refuse, by both names and shapes, a file whose tensors are not `model`'s (built by `model_type`'s
    template); llama.cpp's computed buffers (rope_freqs.weight) are not parameters and pass."""
    from .passes.checkpoint import compare
    result = compare(model, checkpoint_for(model, gfile))
    where = Loc(str(gfile.path), 0)
    fix = "the file's tensors are not those of the architecture its metadata names: convert it again"
    for name, spec_shape, info in result.wrong_shape:
        stored = " + ".join(gguf_names(gfile, [name]).get(name, []))
        raise ArchgraphError(f"tensor '{shortened(name)}' ({stored} in the file) is {list(info.shape)} in the "
                             f"file but {list(spec_shape)} in the '{model_type}' template", loc=where, hint=fix)
    for name, spec_shape in result.missing:
        stored = " + ".join(gguf_names(gfile, [name]).get(name, [])) or "no GGUF name"
        raise ArchgraphError(f"the file has no tensor for '{shortened(name)}' {list(spec_shape)} of the "
                             f"'{model_type}' template ({stored})", loc=where, hint=fix)
    for name, info in result.extra:
        if name not in BUFFERS:
            raise ArchgraphError(f"the file's tensor '{shortened(name)}' {list(info.shape)} is no tensor of "
                                 f"the template", loc=where, hint=fix)


def checkpoint_for(model, gfile: GGUFFile) -> Checkpoint:
    """The GGUF file's tensors named for `model`'s tensors (`check --against model.gguf`)."""
    from .passes.checkpoint import spec_tensors
    params, _ties, buffers, _ = spec_tensors(model)
    transposed = architecture(gfile)[1].get("transpose") or ()
    return as_checkpoint(gfile, [*params, *buffers], transposed)


def stored_weights(gfile: GGUFFile) -> dict[str, tuple[int, int, int]]:
    """ggml type -> (tensors, elements, bytes) of the file's tensors, the largest first."""
    out: dict[str, list[int]] = {}
    for t in gfile.tensors.values():
        row = out.setdefault(t.type_name, [0, 0, 0])
        row[0] += 1
        row[1] += t.elements
        row[2] += t.nbytes
    return {k: tuple(v) for k, v in sorted(out.items(), key=lambda kv: (-kv[1][2], kv[0]))}
