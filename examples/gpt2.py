"""GPT-2 (12 layers) from its config, random weights: nothing is downloaded."""

import torch
from transformers import GPT2Config, GPT2Model


def gpt2():
    model = GPT2Model(GPT2Config(n_layer=12)).eval()
    return model, {"input_ids": torch.randint(0, 50257, (1, 64))}
