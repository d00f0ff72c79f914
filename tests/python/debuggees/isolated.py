"""Debuggee that can import neither torchscope nor msgpack, as on a machine the extension's
files are not on (remote attach): the helper must arrive through DAP itself."""

import sys


class NoTorchscopeOrMsgpack:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("torchscope", "msgpack"):
            raise ModuleNotFoundError(name)
        return None


sys.meta_path.insert(0, NoTorchscopeOrMsgpack)

import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
x = torch.randn(4, 3)
y = model(x)  # BREAK: here
print(f"{y.sum().item():.6f} {torch.rand(1).item():.6f}")
