"""Bring your own NLI model: `manage.py verifier_model install / status / reset` on a tiny ONNX
cross-encoder the test builds (tests/test_verifier_nli_onnx.py), and a running server that picks the
switch up without a restart."""

import json
from io import StringIO

import httpx
import numpy as np
import onnx
import pytest
from django.core.management import CommandError, call_command
from onnx import TensorProto, helper

from judges.verification import nli_model_dir
from tests.server_process import ServerProcess
from tests.test_verifier_nli_onnx import build_model_dir


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("verifier_model", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def store(tmp_path, settings):
    settings.VERIFIER_MODEL_STORE = str(tmp_path / "store")
    settings.VERIFIER_NLI_MODEL_DIR = None
    return tmp_path / "store"


def test_install_validates_runs_the_smoke_set_and_switches(tmp_path, store):
    model = build_model_dir(tmp_path / "nli")
    assert nli_model_dir() is None
    out, _ = run("install", str(model), "--min-accuracy", "0")
    assert "smoke set: accuracy 0.333 on 30 pairs (entailment 0/10, contradiction 0/10, neutral 10/10)" in out
    assert " ms a pair" in out
    active = json.loads((store / "active.json").read_text())
    assert active["labels"] == {"0": "contradiction", "1": "entailment", "2": "neutral"}
    assert active["inputs"] == ["input_ids", "attention_mask"]
    assert f"installed {active['path']}: the verifier now runs it" in out
    assert nli_model_dir() == active["path"]
    assert sorted(p.name for p in (store / "models").iterdir()) == [active["sha256"][:12]]

    status, _ = run("status")
    assert f"runs: the installed NLI model {active['path']}" in status
    assert "smoke set: accuracy 0.333 on 30 pairs" in status

    out, _ = run("reset")
    assert "runs: the packaged verifier" in out
    assert nli_model_dir() is None
    assert "runs: the packaged verifier (MiniLM embeddings" in run("status")[0]


def test_a_model_below_the_accuracy_floor_is_refused(tmp_path, store):
    model = build_model_dir(tmp_path / "nli")
    with pytest.raises(CommandError) as refused:
        run("install", str(model))
    assert str(refused.value) == (
        "refused: accuracy 0.33 on the 30 smoke pairs is below the floor 0.60 (entailment 0/10, contradiction "
        "0/10, neutral 10/10); is id2label in the order the weights were trained in?. Nothing was changed."
    )
    assert not (store / "active.json").exists()


def _wrong_inputs(path):
    build_model_dir(path)
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["pixel_values", "axes"], ["logits"], keepdims=0)],
        "image",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, "n"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path / "model.onnx"))


def _unknown_labels(path):
    build_model_dir(path)
    config = json.loads((path / "config.json").read_text())
    config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    (path / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(
    "breaks,message",
    [
        (
            lambda p: (build_model_dir(p), (p / "tokenizer.json").unlink()),
            "refused: missing tokenizer: {dir} has no tokenizer.json "
            "(the fast tokenizer, which an Optimum export writes beside the model). Nothing was changed.",
        ),
        (
            _unknown_labels,
            "refused: unknown labels: config.json id2label is {{'0': 'LABEL_0', '1': 'LABEL_1', '2': "
            "'LABEL_2'}}; an NLI cross-encoder names each of its logits entailment, contradiction or neutral, once. "
            "Nothing was changed.",
        ),
        (
            _wrong_inputs,
            "refused: wrong inputs: the graph takes ['pixel_values']; an NLI cross-encoder takes "
            "input_ids, attention_mask and optionally token_type_ids. Nothing was changed.",
        ),
        (
            lambda p: (build_model_dir(p), (p / "config.json").unlink()),
            "refused: missing config.json: {dir} has no "
            "config.json (its id2label names the labels). Nothing was changed.",
        ),
        (
            lambda p: p.mkdir(),
            "refused: missing model.onnx: {dir} has no model.onnx (an ONNX export writes it). Nothing was changed.",
        ),
    ],
    ids=["missing tokenizer", "unknown labels", "wrong inputs", "missing config", "missing model"],
)
def test_a_broken_model_is_refused_and_the_running_one_stays(tmp_path, store, breaks, message):
    good = build_model_dir(tmp_path / "good")
    run("install", str(good), "--min-accuracy", "0")
    before = (store / "active.json").read_bytes()
    models_before = sorted(p.name for p in (store / "models").iterdir())

    broken = tmp_path / "broken"
    breaks(broken)
    with pytest.raises(CommandError) as refused:
        run("install", str(broken), "--min-accuracy", "0")
    assert str(refused.value) == message.format(dir=broken.resolve())
    assert (store / "active.json").read_bytes() == before
    assert sorted(p.name for p in (store / "models").iterdir()) == models_before
    assert not [p for p in store.iterdir() if p.name.startswith(".")]


def test_the_pin_in_the_environment_wins_and_status_says_so(tmp_path, store, settings):
    pinned = build_model_dir(tmp_path / "pinned")
    run("install", str(build_model_dir(tmp_path / "nli")), "--min-accuracy", "0")
    settings.VERIFIER_NLI_MODEL_DIR = str(pinned)
    assert nli_model_dir() == str(pinned)
    status, _ = run("status")
    assert f"runs: the NLI model in {pinned} (pinned by VERIFIER_NLI_MODEL_DIR)" in status
    assert "installed but not running while the pin is set" in status


def test_install_without_a_store_says_which_setting(settings, tmp_path):
    settings.VERIFIER_MODEL_STORE = None
    with pytest.raises(CommandError, match="VERIFIER_MODEL_STORE is empty"):
        run("install", str(build_model_dir(tmp_path / "nli")))


def test_a_running_server_switches_at_its_next_check_and_back(tmp_path):
    model = build_model_dir(tmp_path / "nli")
    store = tmp_path / "store"
    body = {"text": "The limit is agree.", "sources": ["Premium users get requests per minute."]}
    with ServerProcess(
        tmp_path, extra_env={"VERIFIER_MODEL_STORE": str(store), "VERIFIER_NLI_MODEL_DIR": ""}
    ) as server:
        headers = {"Authorization": f"Bearer {server.api_key('agent')}"}

        def methods() -> set[str]:
            # several requests, so both gunicorn workers answer
            return {
                httpx.post(server.url + "/api/v1/grounding/check/", json=body, headers=headers, timeout=30).json()[
                    "method"
                ]
                for _ in range(6)
            }

        assert methods() == {"embedding+facts"}
        server.manage("verifier_model", "install", str(model), "--min-accuracy", "0")
        assert methods() == {"nli"}
        supported = httpx.post(server.url + "/api/v1/grounding/check/", json=body, headers=headers, timeout=30).json()
        assert supported["claims"][0]["verdict"] == "supported"
        assert np.isclose(supported["claims"][0]["probabilities"]["supported"], 1.0)
        server.manage("verifier_model", "reset")
        assert methods() == {"embedding+facts"}


def test_a_store_that_cannot_be_written_is_a_clear_refusal(tmp_path, store):
    store.write_text("not a folder")  # as a read-only or full disk would, the store's mkdir fails
    with pytest.raises(CommandError) as refused:
        run("install", str(build_model_dir(tmp_path / "nli")), "--min-accuracy", "0")
    assert str(refused.value).startswith(f"refused: cannot write the model store {store}: ")
    assert str(refused.value).endswith(". Nothing was changed.")
    assert store.read_text() == "not a folder"
