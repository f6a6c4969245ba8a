"""A hostile or damaged .onnx file is refused by name, before anything is allocated: a tensor that
claims more bytes than the file holds, external data outside the model's folder or missing, a
custom domain's operator, an operator archgraph has no op for, bytes that are not a model."""
from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def model_file(path, nodes, inits=(), inputs=None, outputs=None, opset=20):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])]
    outputs = outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path.write_bytes(model.SerializeToString())
    return path


def weight(name="w", dims=(4, 4), raw=None, external=None):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    if external is not None:
        t.data_location = TensorProto.EXTERNAL
        for k, v in external.items():
            t.external_data.add(key=k, value=v)
    else:
        t.raw_data = raw if raw is not None else b"\0" * (4 * 16)
    return t


def refused(cli, path, *words):
    code, out, err = cli("params", str(path))
    assert code == 2 and out == "", err
    assert err.startswith("archgraph: error: ") and "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


def test_a_tensor_claiming_two_gigabytes_in_a_small_file(tmp_path, cli):
    path = model_file(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [weight(dims=(4, 2 ** 27), raw=b"\0" * 16)])
    assert path.stat().st_size < 1024
    refused(cli, path, "initializer 'w' claims 536,870,912 elements (2,147,483,648 bytes) but the file holds 16 bytes")


def test_external_data_outside_the_folder(tmp_path, cli):
    path = model_file(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [weight(external={"location": "../../etc/passwd", "offset": "0", "length": "64"})])
    refused(cli, path, "external data '../../etc/passwd', outside the model's folder: refused")
    path = model_file(tmp_path / "a.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [weight(external={"location": "/etc/passwd"})])
    refused(cli, path, "only from a relative path inside the model's folder")


def test_missing_or_short_external_data(tmp_path, cli):
    path = model_file(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [weight(external={"location": "m.onnx.data"})])
    refused(cli, path, "its external data file 'm.onnx.data' is missing")
    (tmp_path / "m.onnx.data").write_bytes(b"\0" * 32)
    refused(cli, path, "initializer 'w' claims 16 elements (64 bytes) but its external data is 32 bytes")
    model_file(path, [helper.make_node("MatMul", ["x", "w"], ["y"])],
               [weight(external={"location": "m.onnx.data", "offset": "16", "length": "64"})])
    refused(cli, path, "reads bytes 16 to 80 of 'm.onnx.data', which holds 32")


def test_custom_domain_and_unknown_operators(tmp_path, cli):
    node = helper.make_node("SkipLayerNormalization", ["x", "x"], ["y"], domain="com.microsoft", name="fused")
    path = model_file(tmp_path / "m.onnx", [node])
    refused(cli, path, "node 'fused' is 'SkipLayerNormalization' of the custom domain 'com.microsoft'",
            "ONNX Runtime's contrib operators")
    path = model_file(tmp_path / "d.onnx", [helper.make_node("NonMaxSuppression", ["x", "x"], ["y"], name="nms")])
    refused(cli, path, "cannot import node 'nms' (NonMaxSuppression): archgraph has no op for the ONNX operator "
                       "'NonMaxSuppression'")


def test_bytes_that_are_not_a_model(tmp_path, cli):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"garbage" * 10)
    refused(cli, path, "this is not an ONNX model")
    folder = tmp_path / "dir.onnx"
    folder.mkdir()
    refused(cli, folder, "cannot read the ONNX model: Is a directory")


def test_a_model_archgraph_reads(tmp_path, cli):
    path = model_file(tmp_path / "m.onnx", [helper.make_node("MatMul", ["x", "fc.weight"], ["h"], name="/fc/MatMul"),
                                            helper.make_node("Relu", ["h"], ["y"], name="/act/Relu")],
                      [weight(name="fc.weight")])
    code, out, err = cli("shapes", str(path), "--set", "B=3", "--json")
    assert code == 0, err
    assert '"fc"' in out and "[3,4]" in out.replace(" ", "")
