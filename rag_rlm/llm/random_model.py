"""A randomly initialised Llama-style model folder, built locally (nothing downloaded).

For tests of the local backend and for throughput benchmarks (batched vs sequential, 4-bit vs
full precision) where the weights' values do not matter but the shapes do. Its output is
garbage by construction: never a stand-in for a real model in answers.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TOKENIZER_TEXT = """Staff may work remotely two days a week after their probation period ends.
Expenses are reimbursed within thirty days of a claim with receipts attached.
The quick brown fox jumps over the lazy dog. Who directed the movie that the actor starred in?
Answer the question using the passages and cite them as [1] or [2]. Sub questions, JSON, OK."""


def build_random_llama(
    folder: Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    vocab_size: int = 400,
    seed: int = 0,
    chat_template: str | None = CHAT_TEMPLATE,
    max_positions: int = 2048,
) -> Path:
    """Save a BPE tokenizer trained in memory and a random LlamaForCausalLM into `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(TOKENIZER_TEXT.splitlines() * 10, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer.chat_template = chat_template
    heads = max(1, hidden // 64) if hidden >= 128 else 4
    kv_heads = heads if hidden >= 128 else 2
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2 if hidden < 128 else hidden * 3,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=max_positions, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
