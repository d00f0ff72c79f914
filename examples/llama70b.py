"""A Llama-3-70B-sized architecture (80 layers, hidden 8192). Trace it with --device meta."""

import torch
from transformers import LlamaConfig, LlamaModel


def llama70b():
    config = LlamaConfig(
        hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
        num_attention_heads=64, num_key_value_heads=8, vocab_size=128256,
        max_position_embeddings=8192, rope_theta=500000.0,
    )
    return LlamaModel(config), {"input_ids": torch.randint(0, 128256, (1, 32))}
