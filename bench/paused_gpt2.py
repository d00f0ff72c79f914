"""GPT-2 (12 layers, random weights) paused in its wrapper's forward (torchscope bench).

The program the paused-frame benchmarks debug: `bench/vscode_panel.ts` (in VS Code) and
`bench/paused_first_trace.py` (through the debugpy adapter alone) stop at the BREAK line.
"""

import torch
from torch import nn
from transformers import GPT2Config, GPT2Model


class LM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gpt2 = GPT2Model(GPT2Config(n_layer=12))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.gpt2(input_ids=input_ids).last_hidden_state  # BREAK: paused
        return hidden.mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    lm = LM().eval()
    with torch.no_grad():
        print(lm(torch.randint(0, 50257, (1, 64))).item())
