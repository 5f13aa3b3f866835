"""Attention backends behind ``engines.attention.flashmask_attention`` (each imports torch)."""
