"""The input of a Hugging Face transformers model built from its config (no weights can be
downloaded here, so this is how such models are traced): transformers 5's `dummy_inputs` is
`input_ids` for every model, so a ViT, a Swin, Whisper, wav2vec 2.0, CLIP, SigLIP or BLIP
raised on it ("'NoneType' object has no attribute 'shape'") instead of being drawn. The input
is made from the model's config and its forward's main and required inputs, the same for the editor's
runner, the CLI and the paused entry's input box, and said as a guess with its expression."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from test_runner import RunnerProcess  # noqa: E402 - tests/python is on sys.path (rootdir)

import torchscope
from torchscope import debug
from torchscope.build_target import build, choose_input
from torchscope.graph import Graph
from torchscope.inputs import guess_expression
from torchscope.tracer import trace_call

pytest.importorskip("transformers")

SMALL = "hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2"
TEXT = f"dict({SMALL}, vocab_size=100)"
VISION = f"dict({SMALL}, image_size=32, patch_size=8)"
SEQ2SEQ = (
    "d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, "
    "decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64"
)

FACTORIES = {
    # vision: the main input is pixel_values, sized by the config
    "vit": f"T.ViTModel(T.ViTConfig(**{VISION}))",
    "vit_classifier": f"T.ViTForImageClassification(T.ViTConfig(**{VISION}, num_labels=3))",
    "swin": "T.SwinModel(T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], "
    "num_heads=[1, 2], window_size=4))",
    "convnext": "T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], "
    "num_stages=2, image_size=32))",
    # no image size in the config: any size does, ImageNet's
    "resnet": "T.ResNetModel(T.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], "
    "depths=[1, 1]))",
    # a detector: an encoder-decoder whose decoder takes no ids
    "d_fine": "T.DFineModel(T.DFineConfig(d_model=32, encoder_layers=1, decoder_layers=1, "
    "encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, "
    "decoder_ffn_dim=32, num_queries=10, encoder_hidden_dim=32, "
    "decoder_in_channels=[32, 32, 32]))",
    # an image and the text it is asked about, both required
    "grounding_dino": "T.GroundingDinoModel(T.GroundingDinoConfig(d_model=32, encoder_layers=1, "
    "decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, "
    "encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, text_config=dict(hidden_size=32, "
    "intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=100), "
    "backbone_config=dict(model_type='swin', embed_dim=16, depths=[1, 1, 1, 1], "
    "num_heads=[1, 1, 1, 1], out_features=['stage2', 'stage3', 'stage4'])))",
    # video: frames of images
    "videomae": f"T.VideoMAEModel(T.VideoMAEConfig(**{VISION}, num_frames=4, tubelet_size=2))",
    # audio: input_features (mel frames) and input_values (a waveform)
    "whisper": f"T.WhisperModel(T.WhisperConfig({SEQ2SEQ}, num_mel_bins=16, "
    "max_source_positions=32))",
    "speech2text": f"T.Speech2TextModel(T.Speech2TextConfig({SEQ2SEQ}, "
    "input_feat_per_channel=8, conv_channels=16, vocab_size=100, max_source_positions=64, "
    "pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0))",
    "wav2vec2": f"T.Wav2Vec2Model(T.Wav2Vec2Config(**dict({SMALL}), conv_dim=(8, 8), "
    "conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, "
    "num_conv_pos_embedding_groups=2))",
    # an audio codec's waveform has its channels: [batch, channels, samples]
    "encodec": "T.EncodecModel(T.EncodecConfig(num_filters=4, hidden_size=16, "
    "num_residual_layers=1, upsampling_ratios=[2, 2], codebook_size=16))",
    "dac": "T.DacModel(T.DacConfig(encoder_hidden_size=4, downsampling_ratios=[2, 2], "
    "decoder_hidden_size=16, upsampling_ratios=[2, 2], hidden_size=16, n_codebooks=2, "
    "codebook_size=16, codebook_dim=4))",
    # a spectrogram transformer's input_values: frames x mel bins
    "ast": f"T.ASTModel(T.ASTConfig(**dict({SMALL}), max_length=64, num_mel_bins=16, "
    "patch_size=8))",
    # text and image together
    "clip": f"T.CLIPModel(T.CLIPConfig(text_config={TEXT}, vision_config={VISION}, "
    "projection_dim=16))",
    "siglip": f"T.SiglipModel(T.SiglipConfig(text_config={TEXT}, vision_config={VISION}))",
    "blip": f"T.BlipModel(T.BlipConfig(text_config={TEXT}, vision_config={VISION}, "
    "projection_dim=16))",
    # text: dummy_inputs worked and still does
    "llama": f"T.LlamaModel(T.LlamaConfig(**{TEXT}, num_key_value_heads=2))",
    "bert": f"T.BertModel(T.BertConfig(**{TEXT}))",
    "t5": "T.T5Model(T.T5Config(d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16, "
    "vocab_size=100))",
    # (QA: its dummy_inputs hold one tensor under two names, and its encoder's the
    # decoder's keys, which its forward takes through **kwargs and never reads)
    "t5_encoder": "T.T5EncoderModel(T.T5Config(d_model=32, d_ff=64, num_layers=1, "
    "num_heads=2, d_kv=16, vocab_size=100))",
    "bart": f"T.BartModel(T.BartConfig({SEQ2SEQ}, vocab_size=100))",
    # an encoder-decoder whose dummy_inputs lack the decoder's ids (Pegasus does not make
    # them from input_ids as BART does)
    "pegasus": f"T.PegasusModel(T.PegasusConfig({SEQ2SEQ}, vocab_size=100))",
}

# what each model's graph gets as its input tensors (name → shape)
EXPECTED = {
    "vit": {"pixel_values": [1, 3, 32, 32]},
    "vit_classifier": {"pixel_values": [1, 3, 32, 32]},
    "swin": {"pixel_values": [1, 3, 32, 32]},
    "convnext": {"pixel_values": [1, 3, 32, 32]},
    "whisper": {"input_features": [1, 16, 64], "decoder_input_ids": [1, 4]},
    "wav2vec2": {"input_values": [1, 16000]},
    "encodec": {"input_values": [1, 1, 16000]},
    "dac": {"input_values": [1, 1, 16000]},
    "ast": {"input_values": [1, 64, 16]},
    "pegasus": {"input_ids": [1, 16], "decoder_input_ids": [1, 4]},
    "d_fine": {"pixel_values": [1, 3, 224, 224]},
    "grounding_dino": {"pixel_values": [1, 3, 224, 224], "input_ids": [1, 16]},
    "videomae": {"pixel_values": [1, 4, 3, 32, 32]},
    "resnet": {"pixel_values": [1, 3, 224, 224]},
    "speech2text": {"input_features": [1, 64, 8], "decoder_input_ids": [1, 4]},
    "clip": {"input_ids": [1, 16], "pixel_values": [1, 3, 32, 32]},
    "siglip": {"input_ids": [1, 16], "pixel_values": [1, 3, 32, 32]},
    "blip": {"input_ids": [1, 16], "pixel_values": [1, 3, 32, 32]},
    # each name its own input, as the expression an input box starts with makes them
    "t5": {"input_ids": [3, 5], "decoder_input_ids": [3, 5], "decoder_attention_mask": [3, 5]},
    "t5_encoder": {"input_ids": [3, 5]},
}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hf") / "hf_models.py"
    lines = ["import transformers as T", ""]
    for name, expr in FACTORIES.items():
        lines += [f"def {name}():", f"    return {expr}", ""]
    path.write_text("\n".join(lines))
    return path


def _inputs(g: Graph) -> dict[str, list[int]]:
    names = {n.id: n.name for n in g.nodes if n.kind == "input"}
    return {names[e.src]: e.shape for e in g.edges if e.src in names}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_a_model_built_from_its_config_is_traced_with_an_input_that_fits(models, name):
    built = build(f"{models}:{name}")
    chosen = choose_input(built)
    assert chosen.kind == "guess", chosen
    assert chosen.described.startswith(f"guessed from {type(built.model).__name__}'s ")
    # the expression an input box starts with makes the same input
    again = eval(chosen.expr, {"torch": torch})  # noqa: S307 - the test's own expression
    assert again.keys() == chosen.value.keys()
    for key, value in again.items():
        assert value.shape == chosen.value[key].shape and value.dtype == chosen.value[key].dtype

    graph = trace_call(built.model, (), chosen.value, raise_errors=False)
    assert graph.error is None, graph.error
    assert len([n for n in graph.nodes if n.kind == "op"]) > 5
    if name in EXPECTED:
        assert _inputs(graph) == EXPECTED[name]


def test_a_text_model_keeps_its_dummy_inputs(models):
    """Where dummy_inputs runs (a text model), it stays what is traced."""
    built = build(f"{models}:bert")
    chosen = choose_input(built)
    assert torch.equal(chosen.value["input_ids"], built.model.dummy_inputs["input_ids"])
    assert "dummy_inputs" in chosen.described


def test_dummy_inputs_past_a_small_vocabulary_give_way_to_the_config(tmp_path):
    """QA: GPT2Config(vocab_size=5) kept transformers' fixed dummy ids (up to 7): the trace
    ended in an IndexError in the embedding."""
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(GPT2Config(vocab_size=5, n_layer=1, n_embd=16, n_head=2))
    assert int(model.dummy_inputs["input_ids"].max()) >= 5
    expr = guess_expression(model)
    assert expr is not None and "torch.randint(0, 5," in expr, expr
    graph = trace_call(model, (), eval(expr, {"torch": torch}), raise_errors=False)
    assert graph.error is None
    with torch.device("meta"):  # (review: dummy ids made on meta have no values to check)
        assert guess_expression(model) is not None


def test_the_editor_the_cli_and_the_paused_entry_agree(models, tmp_path):
    runner = RunnerProcess()
    try:
        reply = runner.ask(op="trace", file=str(models), target="clip", out=str(tmp_path / "e.mp"))
    finally:
        runner.close()
    assert reply["ok"], reply
    summary = reply["result"]["summary"]
    assert summary["error"] is None, summary
    assert summary["inputKind"] == "guess" and summary["inputExpr"].startswith("{'input_ids'")
    assert _inputs(Graph.load(tmp_path / "e.mp")) == EXPECTED["clip"]

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscope",
            "trace",
            f"{models}:vit",
            "-o",
            str(tmp_path / "c.msgpack"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "guessed from ViTModel's config" in run.stdout, run.stdout
    assert _inputs(Graph.load(tmp_path / "c.msgpack")) == EXPECTED["vit"]

    # at a breakpoint with no input in the frame: the box starts with the same expression
    model = build(f"{models}:whisper").model
    assert guess_expression(model) == choose_input(build(f"{models}:whisper")).expr
    frame = sys._getframe()
    seen = json.loads(debug.handle(json.dumps({"op": "candidates"}), frame=frame))
    first = next(c for c in seen["modules"] if c["expr"] == "model")
    assert first["guess"] == guess_expression(model)
    out = tmp_path / "p.mp"
    request = {"op": "trace", "expr": "model", "out": str(out), "input": first["guess"]}
    traced = json.loads(debug.handle(json.dumps(request), frame=frame))
    assert traced["ok"] and traced["summary"]["error"] is None, traced
    assert _inputs(Graph.load(out)) == EXPECTED["whisper"]


def test_listing_a_paused_frame_draws_no_random_numbers(models):
    """The input box's starting expression is only written, never evaluated, when a paused
    program's models are listed: the program's RNG goes on as it would have."""
    model = build(f"{models}:vit").model  # noqa: F841 - the paused frame holds it
    before = torch.get_rng_state()
    seen = json.loads(debug.handle(json.dumps({"op": "candidates"}), frame=sys._getframe()))
    first = next(c for c in seen["modules"] if c["expr"] == "model")
    assert first["guess"] == "{'pixel_values': torch.randn(1, 3, 32, 32)}"
    assert torch.equal(torch.get_rng_state(), before)


def test_a_model_whose_config_says_nothing_usable_falls_back(tmp_path):
    """A transformers model whose main input torchscope can't size from the config keeps
    transformers' dummy_inputs, as before."""
    path = tmp_path / "odd.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            import transformers as T

            class OddConfig(T.PretrainedConfig):
                model_type = "odd"

            class Odd(T.PreTrainedModel):
                config_class = OddConfig
                main_input_name = "signal"

                def __init__(self, config=None):
                    super().__init__(config or OddConfig())
                    self.fc = torch.nn.Linear(4, 2)
                    self.post_init()

                def forward(self, input_ids=None, signal=None):
                    return self.fc(torch.ones(1, 4)) + (0 if input_ids is None else 1)
            """
        )
    )
    built = build(f"{path}:Odd")
    chosen = choose_input(built)
    assert "input_ids" in chosen.value
    graph = trace_call(built.model, (), chosen.value, raise_errors=False)
    assert graph.error is None


def test_a_forward_that_takes_none_of_those_names_gets_its_first_layer_guess(tmp_path):
    """A PreTrainedModel subclass of the user's with `forward(self, x)`: dummy_inputs'
    `input_ids=` would fail with an unexpected keyword; the first layer says what x is."""
    path = tmp_path / "own.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            import transformers as T

            class Own(T.PreTrainedModel):
                config_class = T.PretrainedConfig

                def __init__(self, config=None):
                    super().__init__(config or T.PretrainedConfig())
                    self.fc = torch.nn.Linear(6, 2)
                    self.post_init()

                def forward(self, x):
                    return self.fc(x)
            """
        )
    )
    built = build(f"{path}:Own")
    chosen = choose_input(built)
    assert chosen.described.startswith("guessed from the first layer fc (Linear)"), chosen
    graph = trace_call(built.model, (chosen.value,), {}, raise_errors=False)
    assert graph.error is None, graph.error


def test_a_kv_cache_among_the_inputs_is_named():
    """A generation step's cache (a DynamicCache object, not a tuple) gave nameless constants
    inside each attention. The returned cache is no output (two a layer, on every forward)."""
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100)).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 100, (1, 5)), use_cache=True).past_key_values
    g = torchscope.trace(model, torch.randint(0, 100, (1, 1)), past_key_values=cache)
    layers = [f"past_key_values.layers[{i}].{kv}" for i in range(2) for kv in ("keys", "values")]
    assert [n.name for n in g.nodes if n.kind == "input"] == ["input_ids", *layers]
    assert not [n for n in g.nodes if n.kind == "constant" and not n.target], "none nameless"
    assert [n.name for n in g.nodes if n.kind == "output"] == ["last_hidden_state"]
    # the cached keys go into the attention's cat, beside the step's own
    [keys] = [n for n in g.nodes if n.kind == "input" and n.name == layers[0]]
    [edge] = [e for e in g.edges if e.src == keys.id]
    assert edge.shape == [1, 2, 5, 16] and g.nodes[edge.dst].name == "cat"
