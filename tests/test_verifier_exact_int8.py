"""Exact int8 products on every CPU (judges/verifier/nli.py, ``session_options``; docs/verifier.md,
"Verdicts and the CPU"). Both packaged graphs multiply uint8 activations by int8 weights; x86
kernels without VNNI add pairs of those products in saturating 16 bits unless onnxruntime is told
to use its exact kernel, and then the verdicts depend on the machine. Pure: no database."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from judges.verifier.embedder import Embedder
from judges.verifier.nli import EXACT_INT8_ENTRY, NLIModel, exact_int8_needed, session_options
from judges.verifier.verifier import CROSS_ENCODER_DIR

EPYC_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma bmi2 sha_ni\n"
EPYC_VNNI = "flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_vnni avx512_bf16\n"
ALDER_LAKE = "flags\t\t: fpu sse2 avx avx2 avx_vnni\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 asimddp\n"


@pytest.mark.parametrize(
    "cpuinfo,needed",
    [(EPYC_AVX2, True), (EPYC_VNNI, False), (ALDER_LAKE, False), (ARM, True), ("", True)],
)
def test_the_exact_kernel_is_asked_for_where_the_flags_lack_vnni(cpuinfo, needed):
    # without a flags line (another architecture, where onnxruntime ignores the entry) it is asked for
    assert exact_int8_needed(cpuinfo) is needed


def _entry(opts: ort.SessionOptions) -> str | None:
    try:
        return opts.get_session_config_entry(EXACT_INT8_ENTRY)
    except RuntimeError:  # onnxruntime's answer for an entry never set
        return None


def test_both_packaged_models_run_with_the_exact_kernel_where_this_cpu_needs_it():
    expected = "1" if exact_int8_needed() else None
    assert _entry(Embedder().session.get_session_options()) == expected
    assert _entry(NLIModel(CROSS_ENCODER_DIR).session.get_session_options()) == expected
    assert _entry(session_options(1, exact_int8=True)) == "1"
    assert _entry(session_options(1, exact_int8=False)) is None


def _saturating_graph(k: int) -> bytes:
    """y = x @ w in int32, with x uint8 and w int8 (a constant, as the packaged graphs' weights are)."""
    w = helper.make_tensor("w", TensorProto.INT8, [k, 2], [127, -128] * k)
    node = helper.make_node("MatMulInteger", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [node],
        "saturation",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 2])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def test_a_product_whose_pair_sums_overflow_16_bits_is_exact_on_this_cpu():
    # 255 x 127 + 255 x 127 = 64,770 per pair of products: a saturating kernel clamps each pair to
    # 32,767 and the sum comes out about half; the sessions the verifier builds must give integer math
    k = 64
    x = np.full((1, k), 255, dtype=np.uint8)
    expected = x.astype(np.int64) @ np.array([[127, -128]] * k, dtype=np.int64)
    for exact in (None, True):
        session = ort.InferenceSession(
            _saturating_graph(k), session_options(1, exact), providers=["CPUExecutionProvider"]
        )
        (y,) = session.run(None, {"x": x})
        assert y.tolist() == expected.tolist(), f"exact_int8={exact}"


def test_the_exact_kernel_changes_no_output_of_the_packaged_models():
    # on a CPU with VNNI both kernels are exact; on one without, the default sessions ask for the
    # exact one: either way the models' outputs (and so every verdict) are the exact kernel's
    texts = [
        "Premium users get 1,000 requests per minute.",
        "The withdrawal fee is 0.0012 ETH; the minimum withdrawal is 0.01 ETH.",
        "Two doses of MMR vaccine are about 97% effective at preventing measles.",
    ]
    default, exact = Embedder(), Embedder(exact_int8=True)
    np.testing.assert_allclose(default.encode(texts), exact.encode(texts), atol=1e-6)
    pairs = [(texts[0], "Premium users get 1000 requests per minute."), (texts[1], "The fee is 0.002 ETH.")]
    ce_default = NLIModel(CROSS_ENCODER_DIR, batch_size=1).predict(pairs)
    ce_exact = NLIModel(CROSS_ENCODER_DIR, batch_size=1, exact_int8=True).predict(pairs)
    for a, b in zip(ce_default, ce_exact):
        np.testing.assert_allclose(list(a.as_dict().values()), list(b.as_dict().values()), atol=1e-6)


def test_the_saturating_graph_is_a_valid_model():
    onnx.checker.check_model(onnx.load_from_string(_saturating_graph(64)))
