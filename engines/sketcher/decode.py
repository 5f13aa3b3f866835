"""Grammar-constrained decoding of edits from the model, and the random-mutation proposer.

Every proposal is valid by construction: the position is a node of the current program (the
pointer only ranges over its tokens, and every token starts a node), and the replacement is
decoded under a stack machine of grammar categories for that node's rule, with at most two
primitives. Imports torch: load it lazily.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from .data import anchors
from .edits import Edit, random_mutation
from .model import MAX_CONTEXT, EditModel, images_to_tensor
from .vocab import CAT_END, EDIT, END, PAD, POS, Tokens, child_categories, rule_of

MAX_REPLACEMENT = 13  # an operator and two quads


@dataclass(frozen=True)
class Proposal:
    edit: Edit
    logprob: float  # log-probability of the whole edit under the proposer (0 for random)


class Proposer(Protocol):
    name: str

    def propose(self, target: np.ndarray, states: Sequence[Tokens], images: np.ndarray, k: int) -> list[list[Proposal]]:
        """Up to ``k`` edits for each state (duplicates allowed; the search drops repeats)."""


class RandomProposer:
    """The baseline: the paper's small random mutations instead of the model."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def propose(self, target: np.ndarray, states: Sequence[Tokens], images: np.ndarray, k: int) -> list[list[Proposal]]:
        return [[Proposal(random_mutation(s, self.rng), 0.0) for _ in range(k)] for s in states]


class ModelProposer:
    """Samples ``<pos i>`` and a replacement subtree from the edit model, k per state."""

    name = "model"

    def __init__(self, model: EditModel, temperature: float = 1.0, seed: int = 0) -> None:
        self.model = model.eval()
        self.temperature = temperature
        self.generator = torch.Generator().manual_seed(seed)
        self.fallback = RandomProposer(seed)

    @torch.inference_mode()
    def propose(self, target: np.ndarray, states: Sequence[Tokens], images: np.ndarray, k: int) -> list[list[Proposal]]:
        fits = [i for i, s in enumerate(states) if len(s) <= MAX_CONTEXT]
        out: list[list[Proposal]] = [[] for _ in states]
        too_long = [i for i, s in enumerate(states) if len(s) > MAX_CONTEXT]
        for i, props in zip(too_long, self.fallback.propose(target, [states[i] for i in too_long], images, k)):
            out[i] = props
        if fits:
            for i, props in zip(fits, self._sample([states[i] for i in fits], target, images[fits], k)):
                out[i] = props
        return out

    def _sample(self, states: list[Tokens], target: np.ndarray, images: np.ndarray, k: int) -> list[list[Proposal]]:
        model = self.model
        w = len(states)
        lengths = [len(s) for s in states]
        lmax = max(lengths)
        t0 = lmax + 1
        tokens = torch.full((w, t0), PAD, dtype=torch.long)
        positions = torch.zeros((w, t0), dtype=torch.long)
        valid = torch.zeros((w, t0), dtype=torch.bool)
        anchor = torch.zeros((w, t0, 3))
        state_anchors = [anchors(s) for s in states]
        for b, s in enumerate(states):
            pad = lmax - len(s)
            anchor[b, pad:lmax] = torch.tensor(state_anchors[b])
            tokens[b, pad:lmax] = torch.tensor(s)
            tokens[b, lmax] = EDIT
            positions[b, pad:] = torch.arange(len(s) + 1)
            valid[b, pad:] = True
        target_t = images_to_tensor(np.broadcast_to(target, images.shape), torch.device("cpu"))
        image = model.encoder(target_t, images_to_tensor(images, torch.device("cpu")))
        # program tokens see every program token; <edit> sees everything; padding sees itself
        sees = valid[:, None, :].expand(w, t0, t0).clone()
        sees[:, :lmax, lmax] = False
        mask = sees | torch.eye(t0, dtype=torch.bool)[None]
        none = torch.full((w, t0), -1, dtype=torch.long)
        prefix = model.new_cache(w, t0)
        h = model.run(model.embed(tokens, positions, none, torch.full_like(tokens, PAD), image, anchor), mask[:, None], prefix)
        ptr = model.pointer_logits(h[:, -1], h[:, :lmax], valid[:, :lmax]) / self.temperature
        ptr_logp = F.log_softmax(ptr, dim=-1)
        picks = torch.multinomial(ptr_logp.exp(), k, replacement=True, generator=self.generator)  # (w, k)
        rows = w * k
        owner = torch.arange(w).repeat_interleave(k)
        padded = picks.reshape(-1)
        node = padded - torch.tensor([lmax - lengths[o] for o in owner.tolist()])
        logp = ptr_logp[owner, padded].clone()
        cache = prefix.repeat_rows(k, t0 + MAX_REPLACEMENT + 1)
        valid_r = valid.repeat_interleave(k, 0)
        image_r = (image[0].repeat_interleave(k, 0), image[1].repeat_interleave(k, 0))
        step_anchor = torch.tensor([state_anchors[o][n] for o, n in zip(owner.tolist(), node.tolist())])[:, None, :]
        stacks = [[rule_of(states[o][n])] for o, n in zip(owner.tolist(), node.tolist())]
        pointed = torch.tensor([states[o][n] for o, n in zip(owner.tolist(), node.tolist())])
        replacement: list[list[int]] = [[] for _ in range(rows)]
        done = [False] * rows
        step_tok = torch.full((rows, 1), POS, dtype=torch.long)
        step_ptr = node[:, None]
        step_pointed = pointed[:, None]
        pos_ids = torch.tensor([lengths[o] + 1 for o in owner.tolist()])[:, None]
        for _ in range(MAX_REPLACEMENT + 1):
            valid_r = torch.cat([valid_r, torch.ones(rows, 1, dtype=torch.bool)], dim=1)
            x = model.embed(step_tok, pos_ids, step_ptr, step_pointed, image_r, step_anchor)
            h = model.run(x, valid_r[:, None, None, :], cache)
            cats = torch.tensor([s[-1] if s else CAT_END for s in stacks])
            logits = model.head(h[:, 0]) / self.temperature + model.cat_mask[cats]
            logprobs = F.log_softmax(logits, dim=-1)
            chosen = torch.multinomial(logprobs.exp(), 1, generator=self.generator)[:, 0]
            gained = logprobs.gather(1, chosen[:, None])[:, 0]
            for r, tok in enumerate(chosen.tolist()):
                if done[r]:
                    continue
                logp[r] += gained[r]
                if tok == END:
                    done[r] = True
                    continue
                stacks[r].pop()
                stacks[r].extend(reversed(child_categories(tok)))
                replacement[r].append(tok)
            if all(done):
                break
            step_tok = chosen[:, None]
            step_ptr = torch.full((rows, 1), -1, dtype=torch.long)
            step_pointed = torch.full((rows, 1), PAD, dtype=torch.long)
            step_anchor = torch.zeros((rows, 1, 3))
            pos_ids = pos_ids + 1
        out: list[list[Proposal]] = [[] for _ in range(w)]
        for r in range(rows):
            if done[r]:
                out[owner[r]].append(Proposal(Edit(int(node[r]), tuple(replacement[r])), float(logp[r])))
        return out
