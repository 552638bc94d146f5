"""Generate the benchmark corpus of ``bench/bench_check.py`` into ``bench/out/`` (git-ignored).

    python bench/make_corpus.py            # writes what is missing
    python bench/make_corpus.py --force    # writes everything again

Outputs (all made here with the installed torch, 2.13 in this project; never committed):

* ``bench/out/transformer_d512.pt``: ``torch.jit.script(nn.Transformer(d_model=512))``
  saved with its weights (about 177 MB);
* ``bench/out/zoo/*.pt``: one archive per model, each a different model: ``torch.nn``
  containers (``Sequential``, ``ModuleList``, ``ModuleDict`` of linear, convolution,
  normalisation and activation layers), transformer stacks (encoder, decoder,
  ``nn.Transformer``, attention), recurrent nets (``RNN``, ``LSTM``, ``GRU``, their cells,
  bidirectional and stacked), and the fixture models of ``fixtures/models.py`` (scripted
  or traced as each case says), all saved with their weights.

``bench/out/corpus.json`` records what was made and with which torch; a corpus made by
another torch version is made again.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import warnings
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
ZOO = OUT / "zoo"
LARGE = OUT / "transformer_d512.pt"
STAMP = OUT / "corpus.json"
MIN_ZOO = 40


def _nn_models() -> dict[str, Callable[[], tuple]]:
    """name -> factory returning (module, example inputs or None to script)."""
    import torch
    from torch import nn

    class Stack(nn.Module):  # a ModuleList walked in a loop
        def __init__(self, width: int, depth: int, act: nn.Module):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
            self.act = act

        def forward(self, x):
            for layer in self.layers:
                x = self.act(layer(x))
            return x

    class Heads(nn.Module):  # a ModuleDict of heads, one chosen by name
        def __init__(self):
            super().__init__()
            self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
            self.heads = nn.ModuleDict({"cls": nn.Linear(64, 10), "reg": nn.Linear(64, 1)})

        def forward(self, x, task: str):
            h = self.trunk(x)
            out = h
            for name, head in self.heads.items():
                if name == task:
                    out = head(h)
            return out

    class CellLoop(nn.Module):  # a GRU or RNN cell unrolled over time
        def __init__(self, cell: nn.Module, hidden: int):
            super().__init__()
            self.cell = cell
            self.hidden = hidden

        def forward(self, x):
            h = torch.zeros(x.size(1), self.hidden)
            outs = []
            for t in range(x.size(0)):
                h = self.cell(x[t], h)
                outs.append(h)
            return torch.stack(outs)

    class LSTMLoop(nn.Module):  # an LSTM cell unrolled over time
        def __init__(self, hidden: int):
            super().__init__()
            self.cell = nn.LSTMCell(8, hidden)
            self.hidden = hidden

        def forward(self, x):
            h = torch.zeros(x.size(1), self.hidden)
            c = torch.zeros(x.size(1), self.hidden)
            outs = []
            for t in range(x.size(0)):
                h, c = self.cell(x[t], (h, c))
                outs.append(h)
            return torch.stack(outs)

    class Attention(nn.Module):
        def __init__(self, d: int, heads: int):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, heads)
            self.norm = nn.LayerNorm(d)

        def forward(self, x):
            y, _ = self.attn(x, x, x)
            return self.norm(x + y)

    class Recurrent(nn.Module):  # a recurrent layer and a classifier on its last step
        def __init__(self, rnn: nn.Module, hidden: int):
            super().__init__()
            self.rnn = rnn
            self.fc = nn.Linear(hidden, 5)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y[-1])

    def enc(d, heads, layers, **kw):
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, **kw), layers,
                                     enable_nested_tensor=False)

    def dec(d, heads, layers, **kw):
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(d, heads, dim_feedforward=2 * d, **kw), layers)

    s = None  # script
    models: dict[str, Callable[[], tuple]] = {
        # torch.nn containers
        "mlp_relu": lambda: (nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), s),
        "mlp_gelu_dropout": lambda: (nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(0.1),
                                                   nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10)), s),
        "mlp_tanh_layernorm": lambda: (nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.Tanh(),
                                                     nn.Linear(32, 4), nn.Softmax(dim=-1)), s),
        "conv_bn_pool": lambda: (nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                               nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.AdaptiveAvgPool2d(1),
                                               nn.Flatten(), nn.Linear(16, 10)), s),
        "conv1d_stack": lambda: (nn.Sequential(nn.Conv1d(4, 8, 5), nn.ELU(), nn.Conv1d(8, 8, 3, dilation=2),
                                               nn.GroupNorm(2, 8), nn.SiLU(), nn.AdaptiveMaxPool1d(1)), s),
        "conv_transpose": lambda: (nn.Sequential(nn.ConvTranspose2d(8, 4, 4, stride=2), nn.LeakyReLU(0.2),
                                                 nn.Upsample(scale_factor=2.0), nn.Conv2d(4, 3, 1), nn.Sigmoid()), s),
        "conv3d_instancenorm": lambda: (nn.Sequential(nn.Conv3d(2, 4, 3), nn.InstanceNorm3d(4), nn.PReLU(),
                                                      nn.AvgPool3d(2)), s),
        "embedding_bag": lambda: (nn.Sequential(nn.Embedding(100, 16), nn.Flatten(), nn.Linear(16 * 8, 2)), s),
        "modulelist_stack": lambda: (Stack(32, 4, nn.ReLU()), s),
        "modulelist_hardswish": lambda: (Stack(16, 6, nn.Hardswish()), s),
        "moduledict_heads": lambda: (Heads(), s),
        "pixel_shuffle": lambda: (nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.PixelShuffle(2),
                                                nn.ReflectionPad2d(1), nn.Conv2d(3, 3, 3)), s),
        "bilinear_cosine": lambda: (nn.Sequential(nn.Linear(8, 8), nn.Softplus(), nn.Linear(8, 8),
                                                  nn.Mish()), s),
        # transformer stacks
        "encoder_1x64": lambda: (enc(64, 4, 1), s),
        "encoder_2x128_gelu": lambda: (enc(128, 8, 2, activation="gelu"), s),
        "encoder_3x64_normfirst": lambda: (enc(64, 4, 3, norm_first=True), s),
        "encoder_batchfirst": lambda: (enc(32, 2, 2, batch_first=True), s),
        "decoder_1x64": lambda: (dec(64, 4, 1), s),
        "decoder_2x32_normfirst": lambda: (dec(32, 2, 2, norm_first=True), s),
        "transformer_small": lambda: (nn.Transformer(d_model=32, nhead=2, num_encoder_layers=1,
                                                     num_decoder_layers=1, dim_feedforward=64), s),
        "transformer_batchfirst": lambda: (nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2,
                                                          num_decoder_layers=2, dim_feedforward=128,
                                                          batch_first=True), s),
        "attention_block": lambda: (Attention(64, 4), s),
        "attention_wide": lambda: (Attention(128, 8), s),
        # recurrent nets
        "rnn_tanh": lambda: (Recurrent(nn.RNN(16, 32), 32), s),
        "rnn_relu_2layer": lambda: (Recurrent(nn.RNN(16, 32, num_layers=2, nonlinearity="relu"), 32), s),
        "lstm": lambda: (Recurrent(nn.LSTM(16, 32), 32), s),
        "lstm_bidirectional": lambda: (Recurrent(nn.LSTM(16, 32, bidirectional=True), 64), s),
        "lstm_proj": lambda: (Recurrent(nn.LSTM(16, 32, proj_size=8), 8), s),
        "lstm_3layer_batchfirst": lambda: (nn.LSTM(8, 16, num_layers=3, batch_first=True), s),
        "gru": lambda: (Recurrent(nn.GRU(16, 32), 32), s),
        "gru_bidirectional_2layer": lambda: (Recurrent(nn.GRU(16, 24, num_layers=2, bidirectional=True), 48), s),
        "lstm_cell_loop": lambda: (LSTMLoop(16), s),
        "gru_cell_loop": lambda: (CellLoop(nn.GRUCell(8, 16), 16), s),
        "rnn_cell_loop": lambda: (CellLoop(nn.RNNCell(8, 16), 16), s),
    }
    return models


def _fixture_models() -> dict[str, Callable[[], tuple]]:
    """The fixture models of fixtures/models.py, scripted or traced as each case says."""
    spec = importlib.util.spec_from_file_location("codeparse_fixture_models", ROOT / "fixtures" / "models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.register_fixture_ops()
    out: dict[str, Callable[[], tuple]] = {}
    for name, case in module.CASES.items():
        def factory(case=case):
            model, inputs = case.factory()
            return model, (inputs if case.trace else None)
        out[f"fixture_{name}"] = factory
    return out


def _save(make: Callable[[], tuple], path: Path) -> Optional[str]:
    import torch

    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, inputs = make()
            model = model.eval()
            saved = torch.jit.script(model) if inputs is None else torch.jit.trace(model, inputs, check_trace=False)
            torch.jit.save(saved, str(path))
            torch.jit.load(str(path))  # torch reads it back: a fair baseline
    except Exception as exc:  # noqa: BLE001 - a fixture that needs test-only patches is left out
        path.unlink(missing_ok=True)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def make(force: bool = False, fixtures: int = 24, quiet: bool = False) -> tuple[Path, list[Path]]:
    """Make what is missing (everything with ``force``); returns the large archive and the zoo."""
    import torch

    stamp = json.loads(STAMP.read_text()) if STAMP.is_file() else {}
    if stamp.get("torch") != torch.__version__:
        force = True
    ZOO.mkdir(parents=True, exist_ok=True)
    if force or not LARGE.is_file():
        _save(lambda: (torch.nn.Transformer(d_model=512), None), LARGE)
    models = _nn_models()
    taken = 0
    for name, factory in _fixture_models().items():
        if taken >= fixtures:
            break
        models[name] = factory
        taken += 1
    skipped = {}
    for name, factory in models.items():
        path = ZOO / f"{name}.pt"
        if path.is_file() and not force:
            continue
        problem = _save(factory, path)
        if problem:
            skipped[name] = problem
            if not quiet:
                print(f"skipped {name}: {problem}", file=sys.stderr)
    zoo = sorted(ZOO.glob("*.pt"))
    if len(zoo) < MIN_ZOO:
        raise SystemExit(f"only {len(zoo)} archives in {ZOO}; at least {MIN_ZOO} are needed")
    STAMP.write_text(json.dumps({"torch": torch.__version__, "large": LARGE.name,
                                 "zoo": [p.name for p in zoo], "skipped": skipped}, indent=1) + "\n")
    return LARGE, zoo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="make every archive again")
    parser.add_argument("--fixtures", type=int, default=24, help="fixture models to include")
    args = parser.parse_args()
    large, zoo = make(args.force, args.fixtures)
    print(f"{large} ({large.stat().st_size / 1e6:.0f} MB); {len(zoo)} archives in {ZOO} "
          f"({sum(p.stat().st_size for p in zoo) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
