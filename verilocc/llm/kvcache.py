"""A key/value-cached forward pass of the project's own Llama-style model, for decoding.

The decoder feeds one line of a few tokens per virtual register, for a batch of samples; a
transformers forward call costs milliseconds of Python per call at this size, more than the
arithmetic. This module runs the same network (`transformers.LlamaForCausalLM` as `lm.
small_config` builds it: RMSNorm, rotary embeddings, multi-head attention without grouping,
SwiGLU, tied embeddings) from its weights in a handful of tensor operations per layer, with
the keys and values of every position kept in preallocated buffers. `tests/test_model.py`
checks its logits against transformers'.
"""

from __future__ import annotations

from typing import Any

import torch


class CachedLlama:
    """`forward(ids)` appends a [batch, tokens] block and returns the logits of its last position."""

    def __init__(self, model: Any, capacity: int = 2048) -> None:
        cfg = model.config
        sd = {k: v.detach().float() for k, v in model.state_dict().items()}
        self.heads = cfg.num_attention_heads
        if cfg.num_key_value_heads != self.heads:
            raise ValueError("grouped-query attention is not supported here")
        self.dim = cfg.hidden_size // self.heads
        self.eps = cfg.rms_norm_eps
        self.embed = sd["model.embed_tokens.weight"]
        self.head = sd.get("lm_head.weight", self.embed)
        self.norm = sd["model.norm.weight"]
        self.layers = []
        for i in range(cfg.num_hidden_layers):
            p = f"model.layers.{i}."
            qkv = torch.cat([sd[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]).t().contiguous()
            gate_up = torch.cat([sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]]).t().contiguous()
            self.layers.append((sd[p + "input_layernorm.weight"], qkv, sd[p + "self_attn.o_proj.weight"].t().contiguous(),
                                sd[p + "post_attention_layernorm.weight"], gate_up,
                                sd[p + "mlp.down_proj.weight"].t().contiguous()))
        theta = float(getattr(cfg, "rope_theta", None) or (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0))
        inv = 1.0 / (theta ** (torch.arange(0, self.dim, 2, dtype=torch.float32) / self.dim))
        angles = torch.outer(torch.arange(capacity, dtype=torch.float32), inv)
        self.cos = torch.cat([angles.cos(), angles.cos()], dim=-1)
        self.sin = torch.cat([angles.sin(), angles.sin()], dim=-1)
        self.capacity = capacity
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.length = 0
        self._masks: dict[tuple[int, int], torch.Tensor] = {}

    def reset(self, batch: int) -> None:
        shape = (batch, self.heads, self.capacity, self.dim)
        if not self.keys or self.keys[0].shape[0] != batch:
            self.keys = [torch.zeros(shape) for _ in self.layers]
            self.values = [torch.zeros(shape) for _ in self.layers]
        self.length = 0

    def copy_prefix(self, other: CachedLlama, length: int) -> None:
        """Take the first `length` positions of a batch-1 cache into every row of this one."""
        for mine, theirs in zip(self.keys + self.values, other.keys + other.values):
            mine[:, :, :length] = theirs[:1, :, :length]
        self.length = length

    def _rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    @torch.no_grad()
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        start, end = self.length, self.length + t
        if end > self.capacity:
            raise ValueError(f"context of {end} tokens exceeds the cache's {self.capacity}")
        x = self.embed[ids]
        cos, sin = self.cos[start:end], self.sin[start:end]
        mask = self._masks.get((t, start))
        if mask is None:
            mask = self._masks[(t, start)] = torch.ones(t, end, dtype=torch.bool).tril(diagonal=start)
        for (ln1, qkv, wo, ln2, gate_up, down), keys, values in zip(self.layers, self.keys, self.values):
            h = self._rms(x, ln1) @ qkv
            qk, v = h.view(b, t, 3, self.heads, self.dim).permute(2, 0, 3, 1, 4).split([2, 1])
            q, k = self._rotate(qk, cos, sin).unbind(0)
            keys[:, :, start:end] = k
            values[:, :, start:end] = v[0]
            att = torch.nn.functional.scaled_dot_product_attention(q, keys[:, :, :end], values[:, :, :end], attn_mask=mask)
            x = x + att.transpose(1, 2).reshape(b, t, -1) @ wo
            g, u = (self._rms(x, ln2) @ gate_up).chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(g) * u) @ down
        self.length = end
        return self._rms(x[:, -1], self.norm) @ self.head.t()
