"""The one redaction step: what looks like a secret never leaves, what does not is left alone."""

from __future__ import annotations

import json

import pytest

from gb10check import redact
from gb10check.errors import ParseError, excerpt
from gb10check.verdict import CheckFailed, Evidence


@pytest.fixture(autouse=True)
def _clean():
    redact.forget()
    yield
    redact.forget()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("HF_TOKEN=hf_abcdefghijkl\nX=1", "HF_TOKEN=***\nX=1"),
        ('"Env": ["HF_TOKEN=abc123", "PATH=/usr/bin"]', '"Env": ["HF_TOKEN=***", "PATH=/usr/bin"]'),
        ('HUGGING_FACE_HUB_TOKEN: "zzzz"', 'HUGGING_FACE_HUB_TOKEN: "***"'),
        ("  - VLLM_API_KEY=local-key", "  - VLLM_API_KEY=***"),
        ("apiKey: abcdef", "apiKey: ***"),
        ("DB_PASSWORD = hunter22", "DB_PASSWORD = ***"),
        ("vllm serve m --api-key mykeyvalue --port 1", "vllm serve m --api-key *** --port 1"),
        ("Authorization: Bearer abcdef123", "Authorization: *** ***"),
        ("curl -H 'x' token hf_abcdefghijklmnop", "curl -H 'x' token ***"),
        ("pasted hf_abcdefghijklmnop in a comment", "pasted *** in a comment"),
        ("OPENAI=sk-abcdefghijklmnopqrst", "OPENAI=***"),
    ],
)
def test_secrets_are_masked(text, shown):
    assert redact.redact(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        '"passed": 1, "failed": 0',
        "max_tokens=100 reasoning_tokens: 189",
        'host_key_policy = "accept-new"',
        'api_key_env = "VLLM_API_KEY"',
        "HF_TOKEN_FILE=/run/secrets/hf",
        "keyboard=us",
        "the key: is not known",
        "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0",
        "key 'nodes[0].hots' is not known (misspelt?)",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact.redact(text) == text


def test_registered_values_are_hidden_even_without_their_name():
    redact.register_assigned("HF_TOKEN=plainvalue123\nSHORT_KEY=abc\nFLAG_TOKEN=true\n")
    assert redact.redact("vllm ... plainvalue123 ...") == "vllm ... *** ..."
    assert redact.redact("abc true") == "abc true"  # too short, or a word: never harvested
    redact.register(["sk-given-by-the-suite"])
    assert redact.redact("url?key=sk-given-by-the-suite") == "url?key=***"


def test_json_stays_json():
    data = {"message": 'parse failed: "Env": ["HF_TOKEN=hf_abcdefghijkl"]', "count": {"passed": 3}}
    out = json.loads(json.dumps(redact.redact_tree(data)))
    assert out == {"message": 'parse failed: "Env": ["HF_TOKEN=***"]', "count": {"passed": 3}}


def test_every_error_excerpt_and_found_value_passes_the_step():
    err = ParseError(".env", "line 3 is not KEY=VALUE", "HF_TOKEN=hf_abcdefghijkl\nbroken line\n")
    assert "hf_abcdefghijkl" not in str(err) and "HF_TOKEN=***" in str(err)
    assert "hf_" not in excerpt("token=hf_abcdefghijkl")
    ev = Evidence(node="n")
    with pytest.raises(CheckFailed) as failed:
        ev.expect(False, what="env", expected="HF_TOKEN set", found="HF_TOKEN=hf_abcdefghijkl")
    assert "hf_abcdefghijkl" not in str(failed.value) and ev.items[0].found == "HF_TOKEN=***"
