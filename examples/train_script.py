"""Research code as it is often written: a model, then a training loop at the top level of
the file, with no `if __name__ == "__main__":` guard. Visualize the model: torchscope loads
the definitions only, so the loop below does not run (and no checkpoint is written)."""

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 1000
DIM = 64


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.mix = nn.GRU(DIM, DIM, batch_first=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.mix(self.embed(tokens))
        return self.head(F.layer_norm(h, (DIM,)))


model = TinyLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(30):
    batch = torch.randint(0, VOCAB, (8, 32))
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.3f}")
torch.save(model.state_dict(), "tiny_lm.pt")
