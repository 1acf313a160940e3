"""The reader's network: the MiniLM encoder (its first layers) and one linear head over the mean of
its token vectors. Mean pooling, not the [CLS] vector: all-MiniLM-L6-v2 was trained as a sentence
encoder with mean pooling, so its mean is what already carries meaning (measured: the [CLS] head
learned slower on the same pairs, bench/eval_results.md). Imported lazily: it needs torch."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HEAD = "head.safetensors"


class ReaderNetwork(nn.Module):
    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """One logit per pair: P(answers) = sigmoid(logit)."""
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state.float()  # bf16 encoder: fp32 mean
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)[:, 0]

    def save(self, folder: Path) -> None:
        """The encoder as a transformers folder and the head beside it, both in fp16."""
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        self.encoder.half().save_pretrained(str(folder), safe_serialization=True)
        self.encoder.float()
        save_file({k: v.half().contiguous() for k, v in self.head.state_dict().items()}, str(folder / HEAD))


def start(base: str, layers: int) -> ReaderNetwork:
    """A new network from the first `layers` layers of the encoder at `base`."""
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(base, num_hidden_layers=layers, local_files_only=True)
    # float32 whatever the folder stores: transformers 5 would otherwise keep fp16 weights in fp16
    return ReaderNetwork(AutoModel.from_pretrained(base, config=config, local_files_only=True, dtype=torch.float32,
                                                   add_pooling_layer=False))


def load(folder: Path) -> ReaderNetwork:
    """A trained network, in float32, in eval mode."""
    from safetensors.torch import load_file
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32, add_pooling_layer=False)
    network = ReaderNetwork(encoder)
    network.head.load_state_dict({k: v.float() for k, v in load_file(str(folder / HEAD)).items()})
    return network.eval()
