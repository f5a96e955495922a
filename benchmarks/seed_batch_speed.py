"""How fast S seeds' actor-critics update together, against S separate updates (issue 46, item 1's choice).

For S seeds of a benchmark row (default S = 1, 8, 16, 26), each with its own networks, Adam state, minibatch
order and data, this times one PPO update epoch (forward, loss, gradient, gradient clipping and an Adam step
over every minibatch) and the rollout's forward pass (S x ``num_envs`` rows: the actor's log-policy and the
critic's value) done four ways:

* ``loop`` (the baseline, in the same process): today's trainer, ``PPOTrainer.update`` of each seed's own
  trainer in turn (its numpy forward, hand-written gradient and Adam, ``scope_envs.train.numpy_ac``);
* ``numpy_stacked``: the same arithmetic with the S weight sets stacked on a leading axis (batched matmuls);
* ``torch_vmap``: ``torch.func.functional_call`` under ``vmap`` over ``stack_module_state``, autograd's
  gradient, ``torch.optim.Adam`` on the stacked parameters (elementwise, so each seed's own Adam);
* ``torch_bmm``: plain batched matmuls (``baddbmm``) on stacked parameter tensors, autograd, the same Adam.

The sizes are the benchmark's, read, not chosen: the row ``frozen`` of each game (``method_setup``), whose
``PPOConfig`` is the default one (hidden units, ``num_envs``, ``episodes_per_iter``, ``num_minibatches``,
``min_minibatch``, the loss's coefficients); each seed's batch is one real iteration of its own trainer (its
``episodes_per_iter`` episodes), cut to the shortest seed's so that the seeds' minibatches line up (a batched
trainer must pad ragged batches; that cost is not in these figures). One BLAS and one torch thread, as the
benchmark trains.

Checked before timing (the script fails otherwise): every variant's clipped gradient of every minibatch, its
parameters after the epoch and its last minibatch's losses equal the per-seed trainer's to float32 tolerance;
and seed ``--probe-seed`` trained alone (S = 1) and among ``--among`` seeds gives the same result (the
JSON says where that is bit for bit). Figures: ``benchmarks/results/seed_batch_speed.json`` and a table.

    python benchmarks/seed_batch_speed.py                                # p4g, cooperbench, tau2; S = 1 8 16 26
    python benchmarks/seed_batch_speed.py --games p4g --seeds 1 2 --rounds 1 --among 2 --out /tmp/s.json
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torch.func import functional_call, stack_module_state, vmap

from scope_envs.arguments import count, output_file
from scope_envs.bench.methods import method_setup
from scope_envs.bench.presets import GAMES
from scope_envs.files import write_json
from scope_envs.train.act_ppo import AGENT, PPOConfig, PPOTrainer, Tanh
from scope_envs.train.activation import tanh
from scope_envs.train.numpy_ac import MASKED_LOGIT, Adam, entropy, log_policy, max_grad_split, mlp, normalize

VARIANTS = ("loop", "numpy_stacked", "torch_vmap", "torch_bmm")
BASELINE = "loop"
OUT = Path(__file__).resolve().parent / "results" / "seed_batch_speed.json"
# float32 tolerances of a variant against the per-seed trainer (absolute; the clipped gradient's norm is at most
# max_grad_norm = 0.5, the parameters are O(1)): several float32 roundings of sums over 128 rows, reordered
GRAD_TOL, PARAM_TOL, LOSS_TOL = 1e-5, 1e-5, 1e-5
COLUMNS = ("x", "m", "a", "logp", "v", "adv", "ret")


# -- the data: each seed's own trainer and one real iteration of it ----------------------------------------
def seed_trainers(game: str, n_seeds: int) -> tuple[list[PPOTrainer], list[dict], dict]:
    """Trainers of seeds 0..n_seeds-1 of ``game``'s ``frozen`` row (its env and PPOConfig as the benchmark
    builds them), each with one iteration of its own episodes as a batch, all cut to the shortest; and the
    sizes read off them."""
    env_id, env_kwargs, overrides = method_setup(game, "frozen")
    trainers, batches = [], []
    for seed in range(n_seeds):
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=env_kwargs, seed=seed, **overrides))
        cfg = trainer.cfg
        episodes, _ = trainer.play(trainer.envs, cfg.episodes_per_iter, seed=seed * 10_000)
        batches.append(trainer.batches(episodes)[AGENT])
        trainer.cfg = dataclasses.replace(cfg, update_epochs=1, anneal_lr=False)  # update() is then one epoch
        trainers.append(trainer)
    before = [len(b["a"]) for b in batches]
    n = min(before)
    batches = [{k: v[:n] for k, v in b.items()} for b in batches]
    cfg = trainers[0].cfg
    sizes = {"env_id": env_id, "obs_dim": trainers[0].dims[AGENT], "n_actions": int(trainers[0].n_acts[AGENT]),
             "hidden": cfg.hidden, "num_envs": cfg.num_envs, "episodes_per_iter": cfg.episodes_per_iter,
             "rows_per_seed": n, "rows_per_seed_before_cut": before,
             # the trainer's minibatch rule (PPOTrainer.update)
             "minibatch": max(cfg.min_minibatch, -(-n // cfg.num_minibatches)),
             "num_minibatches": cfg.num_minibatches, "min_minibatch": cfg.min_minibatch,
             "update_epochs_per_iteration": PPOConfig.update_epochs,
             "params_per_seed": trainers[0].optimizers[AGENT].flat.size}
    return trainers, batches, sizes


class Start:
    """Every seed's state before the epoch (parameters, Adam's, its generator), to put back."""

    def __init__(self, trainers: list[PPOTrainer]):
        self.flat = np.stack([t.optimizers[AGENT].flat for t in trainers])
        self.rngs = [copy.deepcopy(t.rng) for t in trainers]
        self.shapes = [a.shape for a in trainers[0].params[AGENT]]

    def perms(self, seeds: list[int], n: int) -> np.ndarray:
        """Each seed's minibatch order of the epoch: the first draw of its own trainer's generator."""
        return np.stack([copy.deepcopy(self.rngs[s]).permutation(n) for s in seeds])

    def restore(self, trainers: list[PPOTrainer], seeds: list[int]) -> None:
        for s in seeds:
            opt = trainers[s].optimizers[AGENT]
            opt.flat[...] = self.flat[s]
            opt.exp_avg[...] = 0.0
            opt.exp_avg_sq[...] = 0.0
            opt.steps = 0
            trainers[s].rng = copy.deepcopy(self.rngs[s])


class Recorder:
    """An optimizer in front of a trainer's Adam that keeps every gradient it is given (already clipped)."""

    def __init__(self, adam: Adam):
        self.adam, self.grads = adam, []

    def __getattr__(self, name):
        return getattr(self.adam, name)

    def step(self, grad: np.ndarray, scale: float = 1.0) -> None:
        self.adam.step(grad, scale)
        self.grads.append(grad.copy())  # (``step`` leaves it scaled)


# -- (a) the baseline: today's trainer, seed after seed -----------------------------------------------------
class Loop:
    def __init__(self, trainers, batches, start: Start, seeds: list[int]):
        self.trainers, self.batches, self.seeds = [trainers[s] for s in seeds], [batches[s] for s in seeds], seeds
        self.start, self.all_trainers = start, trainers
        self.forward_rows = [b["x"][: t.cfg.num_envs] for t, b in zip(self.trainers, self.batches)]
        self.forward_masks = [b["m"][: t.cfg.num_envs] for t, b in zip(self.trainers, self.batches)]

    def epoch(self) -> None:
        for t, b in zip(self.trainers, self.batches):
            t.update(AGENT, b)

    def checked_epoch(self) -> dict:
        self.start.restore(self.all_trainers, self.seeds)
        recorders = []
        for t in self.trainers:
            recorders.append(Recorder(t.optimizers[AGENT]))
            t.optimizers[AGENT] = recorders[-1]
        try:
            stats = [t.update(AGENT, b) for t, b in zip(self.trainers, self.batches)]
        finally:
            for t, r in zip(self.trainers, recorders):
                t.optimizers[AGENT] = r.adam
        return {"grads": np.stack([np.stack(r.grads) for r in recorders], 1),  # (minibatches, S, P)
                "params": np.stack([t.optimizers[AGENT].flat.copy() for t in self.trainers]),
                "losses": np.array([[s["pg_loss"], s["v_loss"], s["entropy"]] for s in stats])}

    def forward(self) -> tuple[np.ndarray, np.ndarray]:
        logps, values = [], []
        for t, x, m in zip(self.trainers, self.forward_rows, self.forward_masks):  # NetworkPolicy.act's passes
            p = t.policies[AGENT]
            logps.append(log_policy(p.actor, x, m))
            values.append(mlp(p.critic, x)[2][:, 0])
        return np.stack(logps), np.stack(values)

TANH = Tanh()  # the networks' activation, as the trainer's


# -- (b) numpy, the S weight sets stacked on a leading axis -------------------------------------------------
def mlp_stacked(layers, x):
    """``numpy_ac.mlp`` with an optional leading seed axis on the weights (S, out, in) and rows (S, B, in)."""
    w1, b1, w2, b2, w3, b3 = layers
    t = (lambda w: w.T) if w1.ndim == 2 else (lambda w: w.transpose(0, 2, 1))
    e = (lambda b: b) if w1.ndim == 2 else (lambda b: b[:, None, :])
    h1 = tanh(x @ t(w1) + e(b1))
    h2 = tanh(h1 @ t(w2) + e(b2))
    return h1, h2, h2 @ t(w3) + e(b3)


def mlp_backward_stacked(layers, x, h1, h2, d_out, grads) -> None:
    """``numpy_ac.mlp_backward`` over the seed axis."""
    _, _, w2, _, w3, _ = layers
    g1, gb1, g2, gb2, g3, gb3 = grads
    np.matmul(d_out.transpose(0, 2, 1), h2, out=g3)
    d_out.sum(1, out=gb3)
    d2 = d_out @ w3
    d2 *= 1.0 - h2 * h2
    np.matmul(d2.transpose(0, 2, 1), h1, out=g2)
    d2.sum(1, out=gb2)
    d1 = d2 @ w2
    d1 *= 1.0 - h1 * h1
    np.matmul(d1.transpose(0, 2, 1), x, out=g1)
    d1.sum(1, out=gb1)


def stacked_views(flat: np.ndarray, shapes) -> list[np.ndarray]:
    out, offset = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        out.append(flat[:, offset : offset + size].reshape((len(flat), *shape)))
        offset += size
    return out


class Stacked:
    """The state and data every stacked variant shares: the seeds' batches as (S, n, ...) arrays."""

    def __init__(self, trainers, batches, start: Start, seeds: list[int]):
        self.cfg, self.start, self.seeds = trainers[0].cfg, start, seeds
        self.data = {k: np.stack([batches[s][k] for s in seeds]) for k in COLUMNS}
        self.n = self.data["a"].shape[1]
        self.mb = max(self.cfg.min_minibatch, -(-self.n // self.cfg.num_minibatches))
        self.perms = start.perms(seeds, self.n)
        self.rows = np.arange(len(seeds))[:, None]
        num_envs = self.cfg.num_envs
        self.forward_x, self.forward_m = self.data["x"][:, :num_envs], self.data["m"][:, :num_envs]

    def minibatches(self, take):
        """Each minibatch's columns, every seed's rows in its own order."""
        shuffled = [take(self.data[k], self.perms) for k in COLUMNS]
        for start in range(0, self.n, self.mb):
            yield [t[:, start : start + self.mb] for t in shuffled]


class NumpyStacked(Stacked):
    def __init__(self, trainers, batches, start, seeds):
        super().__init__(trainers, batches, start, seeds)
        self.reset()

    def reset(self) -> None:
        flat = self.start.flat[self.seeds].copy()
        self.params = stacked_views(flat, self.start.shapes)
        self.adam = Adam(flat, lr=self.cfg.learning_rate, eps=1e-5)  # elementwise: each seed's own Adam
        self.grad = np.zeros_like(flat)
        views = stacked_views(self.grad, self.start.shapes)
        self.grad_critic, self.grad_actor = views[:6], views[6:]

    def epoch(self, record: list | None = None) -> np.ndarray:
        cfg, c = self.cfg, self.cfg.clip_coef
        critic, actor, grad = self.params[:6], self.params[6:], self.grad
        ent_coef = np.float32(cfg.ent_coef)  # the trainer's per-row float32 coefficient (no user rows here)
        losses = None
        for x, m, a, old_logp, old_v, adv, ret in self.minibatches(lambda v, p: v[self.rows, p]):
            per_row = 1.0 / a.shape[1]
            h1, h2, logits = mlp_stacked(actor, x)
            logp = normalize(logits, m)
            p = np.exp(logp)
            logratio = np.take_along_axis(logp, a[..., None], -1)[..., 0] - old_logp
            ratio = np.exp(logratio)
            if cfg.norm_adv and a.shape[1] > 1:
                adv = (adv - adv.mean(1, keepdims=True)) / (adv.std(1, ddof=1, keepdims=True) + 1e-8)
            surrogate, clipped = -adv * ratio, -adv * np.clip(ratio, 1 - c, 1 + c)
            through = max_grad_split(surrogate, clipped, True) \
                + max_grad_split(clipped, surrogate, (ratio >= 1 - c) & (ratio <= 1 + c))
            d_logratio = (per_row * -adv * ratio * through).astype(np.float32)
            dz = p * -d_logratio[..., None]
            dz[self.rows, np.arange(a.shape[1]), a] += d_logratio
            ent = entropy(logp, p)
            dz += (ent_coef * per_row) * p * (logp + ent[..., None])
            c1, c2, v = mlp_stacked(critic, x)
            v = v[..., 0]
            diff = v - old_v
            v_clipped = old_v + np.clip(diff, -c, c)
            err, err_clipped = (v - ret) ** 2, (v_clipped - ret) ** 2
            d_v = (v - ret) * max_grad_split(err, err_clipped, True) \
                + (v_clipped - ret) * max_grad_split(err_clipped, err, (diff >= -c) & (diff <= c))
            d_v = (cfg.vf_coef * per_row * d_v).astype(np.float32)[..., None]
            mlp_backward_stacked(actor, x, h1, h2, dz.astype(np.float32, copy=False), self.grad_actor)
            mlp_backward_stacked(critic, x, c1, c2, d_v, self.grad_critic)
            # each seed's sdot and float32 square root, then the scale in float64, as the trainer's
            norm = np.sqrt(np.array([np.dot(g, g) for g in grad], np.float32)).astype(np.float64)
            grad *= np.minimum(1.0, cfg.max_grad_norm / (norm + 1e-6)).astype(np.float32)[:, None]
            self.adam.step(grad)
            if record is not None:
                record.append(grad.copy())
            losses = (np.maximum(surrogate, clipped).mean(1), 0.5 * np.maximum(err, err_clipped).mean(1),
                      ent.mean(1))
        return np.stack(losses, 1)

    def checked_epoch(self) -> dict:
        self.reset()
        grads = []
        losses = self.epoch(grads)
        return {"grads": np.stack(grads), "params": self.adam.flat.copy(), "losses": losses}

    def forward(self):
        return normalize(mlp_stacked(self.params[6:], self.forward_x)[2], self.forward_m), \
            mlp_stacked(self.params[:6], self.forward_x)[2][..., 0]


# -- (c), (d): torch ------------------------------------------------------------------------------------
def seed_loss(cfg, logits, v, m, a, old_logp, old_v, adv, ret):
    """One seed's (or, with a leading seed axis, every seed's) CleanRL loss, as the trainer differentiates it:
    (loss, pg_loss, v_loss, entropy), each reduced over the rows (the last axis of ``a``)."""
    c = cfg.clip_coef
    logp = torch.log_softmax(logits.masked_fill(~m, MASKED_LOGIT), -1)
    p = logp.exp()
    logratio = logp.gather(-1, a[..., None])[..., 0] - old_logp
    ratio = logratio.exp()
    if cfg.norm_adv and a.shape[-1] > 1:
        adv = (adv - adv.mean(-1, keepdim=True)) / (adv.std(-1, keepdim=True) + 1e-8)
    pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - c, 1 + c)).mean(-1)
    ent = (-(p * logp).sum(-1)).mean(-1)
    v_clipped = old_v + (v - old_v).clamp(-c, c)
    v_loss = 0.5 * torch.maximum((v - ret) ** 2, (v_clipped - ret) ** 2).mean(-1)
    return pg - cfg.ent_coef * ent + cfg.vf_coef * v_loss, pg, v_loss, ent


class Torch(Stacked):
    """What both torch variants share: the data as tensors, per-seed gradient clipping, the stacked Adam."""

    def __init__(self, trainers, batches, start, seeds):
        super().__init__(trainers, batches, start, seeds)
        self.data = {k: torch.from_numpy(v) for k, v in self.data.items()}
        self.perms = torch.from_numpy(self.perms)
        self.rows = torch.from_numpy(self.rows)
        self.forward_x = torch.from_numpy(np.ascontiguousarray(self.forward_x))
        self.forward_m = torch.from_numpy(np.ascontiguousarray(self.forward_m))
        self.trainers = trainers
        self.reset()

    def leaves(self) -> list[torch.Tensor]:
        """The stacked parameters in the trainer's order (the critic's 6, then the actor's 6)."""
        raise NotImplementedError

    def step(self, record) -> None:
        leaves = self.leaves()
        norm = torch.stack([g.grad.flatten(1).square().sum(1) for g in leaves]).sum(0).sqrt()
        scale = (self.cfg.max_grad_norm / (norm + 1e-6)).clamp(max=1.0)
        for leaf in leaves:
            leaf.grad.mul_(scale.view(-1, *([1] * (leaf.dim() - 1))))
        if record is not None:
            record.append(torch.cat([g.grad.flatten(1) for g in leaves], 1).numpy().copy())
        self.opt.step()

    def make_adam(self) -> None:
        self.opt = torch.optim.Adam(self.leaves(), lr=self.cfg.learning_rate, eps=1e-5)

    def checked_epoch(self) -> dict:
        self.reset()
        grads = []
        losses = self.epoch(grads)
        with torch.no_grad():
            params = torch.cat([p.flatten(1) for p in self.leaves()], 1).numpy().copy()
        return {"grads": np.stack(grads), "params": params, "losses": losses}


class TorchVmap(Torch):
    def reset(self) -> None:
        nets = [self.trainers[s].learners[AGENT] for s in self.seeds]
        with torch.no_grad():  # the nets' memory is the trainers' (numpy_ac.bind): load the start into copies
            copies = [copy.deepcopy(n) for n in nets]
            for net, s in zip(copies, self.seeds):
                torch.nn.utils.vector_to_parameters(torch.from_numpy(self.start.flat[s]), net.parameters())
        self.critic, _ = stack_module_state([n.critic for n in copies])
        self.actor, _ = stack_module_state([n.actor for n in copies])
        self.critic_base = copy.deepcopy(copies[0].critic).to("meta")
        self.actor_base = copy.deepcopy(copies[0].actor).to("meta")
        self.make_adam()

    def leaves(self):
        return list(self.critic.values()) + list(self.actor.values())

    def one_seed(self, critic, actor, x, m, a, old_logp, old_v, adv, ret):
        logits = functional_call(self.actor_base, actor, (x,))
        v = functional_call(self.critic_base, critic, (x,))[..., 0]
        return torch.stack(seed_loss(self.cfg, logits, v, m, a, old_logp, old_v, adv, ret))

    def epoch(self, record: list | None = None) -> np.ndarray:
        batched = vmap(self.one_seed)
        losses = None
        for mb in self.minibatches(lambda v, p: v[self.rows, p]):
            self.opt.zero_grad(set_to_none=True)
            out = batched(self.critic, self.actor, *mb)  # (S, 4)
            out[:, 0].sum().backward()  # seeds share no parameter: each seed's gradient is its own loss's
            self.step(record)
            losses = out[:, 1:].detach()
        return losses.numpy()

    def forward(self):
        with torch.no_grad():
            logits = vmap(lambda p, x: functional_call(self.actor_base, p, (x,)))(self.actor, self.forward_x)
            v = vmap(lambda p, x: functional_call(self.critic_base, p, (x,)))(self.critic, self.forward_x)
            logp = torch.log_softmax(logits.masked_fill(~self.forward_m, MASKED_LOGIT), -1)
        return logp.numpy(), v[..., 0].numpy()


class TorchBmm(Torch):
    def reset(self) -> None:
        flat = torch.from_numpy(self.start.flat[self.seeds].copy())
        self.params = [v.clone().requires_grad_(True) for v in
                       (torch.from_numpy(a) for a in stacked_views(flat.numpy(), self.start.shapes))]
        self.make_adam()

    def leaves(self):
        return self.params

    @staticmethod
    def mlp(layers, x):
        w1, b1, w2, b2, w3, b3 = layers
        h = TANH(torch.baddbmm(b1[:, None], x, w1.transpose(1, 2)))
        h = TANH(torch.baddbmm(b2[:, None], h, w2.transpose(1, 2)))
        return torch.baddbmm(b3[:, None], h, w3.transpose(1, 2))

    def epoch(self, record: list | None = None) -> np.ndarray:
        losses = None
        for x, m, a, old_logp, old_v, adv, ret in self.minibatches(lambda v, p: v[self.rows, p]):
            self.opt.zero_grad(set_to_none=True)
            logits, v = self.mlp(self.params[6:], x), self.mlp(self.params[:6], x)[..., 0]
            out = seed_loss(self.cfg, logits, v, m, a, old_logp, old_v, adv, ret)
            out[0].sum().backward()
            self.step(record)
            losses = torch.stack(out[1:], 1).detach()
        return losses.numpy()

    def forward(self):
        with torch.no_grad():
            logits, v = self.mlp(self.params[6:], self.forward_x), self.mlp(self.params[:6], self.forward_x)
            logp = torch.log_softmax(logits.masked_fill(~self.forward_m, MASKED_LOGIT), -1)
        return logp.numpy(), v[..., 0].numpy()


BUILD = {"loop": Loop, "numpy_stacked": NumpyStacked, "torch_vmap": TorchVmap, "torch_bmm": TorchBmm}


# -- the checks ------------------------------------------------------------------------------------------
def largest(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def equal(a: dict, b: dict, forward_a, forward_b) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in ("grads", "params", "losses")) \
        and all(np.array_equal(x, y) for x, y in zip(forward_a, forward_b))


def check(trainers, batches, start: Start, seeds: list[int], probe: int) -> dict:
    """Each variant against the per-seed trainer (``loop``) on ``seeds``, and ``probe`` alone against ``probe``
    among ``seeds``. Raises AssertionError past the tolerances."""
    out = {}
    among = {name: BUILD[name](trainers, batches, start, seeds) for name in VARIANTS}
    ref = among["loop"].checked_epoch()
    ref_forward = among["loop"].forward()
    k = seeds.index(probe)
    for name in VARIANTS:
        got = ref if name == "loop" else among[name].checked_epoch()
        forward = ref_forward if name == "loop" else among[name].forward()
        diffs = {"grads": largest(got["grads"], ref["grads"]), "params": largest(got["params"], ref["params"]),
                 "losses": largest(got["losses"], ref["losses"]),
                 "forward_logp": largest(np.maximum(forward[0], -1e3), np.maximum(ref_forward[0], -1e3)),
                 "forward_value": largest(forward[1], ref_forward[1])}
        assert got["grads"].shape == ref["grads"].shape and diffs["grads"] <= GRAD_TOL, (name, diffs)
        assert diffs["params"] <= PARAM_TOL and diffs["losses"] <= LOSS_TOL, (name, diffs)
        assert diffs["forward_logp"] <= LOSS_TOL and diffs["forward_value"] <= LOSS_TOL, (name, diffs)
        if name == "loop":  # the trainers' state after the check: back to the start for the others
            start.restore(trainers, seeds)
        alone = BUILD[name](trainers, batches, start, [probe])
        got_alone, forward_alone = alone.checked_epoch(), alone.forward()
        start.restore(trainers, seeds)
        mine = {"grads": got["grads"][:, k : k + 1], "params": got["params"][k : k + 1],
                "losses": got["losses"][k : k + 1]}
        mine_forward = (forward[0][k : k + 1], forward[1][k : k + 1])
        independence = max(largest(got_alone[key], mine[key]) for key in mine)
        independence = max(independence, largest(forward_alone[1], mine_forward[1]),
                           largest(np.maximum(forward_alone[0], -1e3), np.maximum(mine_forward[0], -1e3)))
        bit_equal = equal(got_alone, mine, forward_alone, mine_forward)
        assert bit_equal or independence <= GRAD_TOL, (name, "alone vs among", independence)
        out[name] = {"max_diff_vs_per_seed": diffs, "bit_equal_to_per_seed": name == "loop" or (
                         equal(got, ref, forward, ref_forward)),
                     "alone_vs_among": {"seed": probe, "among": len(seeds), "bit_equal": bit_equal,
                                        "max_diff": independence}}
    return out


# -- the timing ------------------------------------------------------------------------------------------
def seconds(fn, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def time_row(trainers, batches, start: Start, seeds: list[int], rounds: int, forward_reps: int) -> dict:
    """Median seconds of one update epoch and of one forward pass per variant, the variants alternating in
    each round (the machine is shared: a slow spell falls on all of them)."""
    built = {name: BUILD[name](trainers, batches, start, seeds) for name in VARIANTS}
    epochs = {name: [] for name in VARIANTS}
    forwards = {name: [] for name in VARIANTS}
    for name in VARIANTS:  # warm-up (first-call costs: vmap's and autograd's set-up, BLAS buffers)
        built[name].epoch()
        built[name].forward()
    for r in range(rounds):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        for name in order:
            epochs[name].append(seconds(built[name].epoch, 1))
            forwards[name].append(seconds(built[name].forward, forward_reps))
    start.restore(trainers, list(range(len(trainers))))
    out = {}
    for name in VARIANTS:
        e, f = float(np.median(epochs[name])), float(np.median(forwards[name]))
        out[name] = {"update_epoch_ms": round(1e3 * e, 3), "forward_ms": round(1e3 * f, 4)}
    for name in VARIANTS:
        out[name]["update_ratio_to_loop"] = round(out[BASELINE]["update_epoch_ms"] / out[name]["update_epoch_ms"], 3)
        out[name]["forward_ratio_to_loop"] = round(out[BASELINE]["forward_ms"] / out[name]["forward_ms"], 3)
    return out


def cpu_model() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")),
                "unknown")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", nargs="+", choices=GAMES, default=list(GAMES), help="the games (default: all of them)")
    ap.add_argument("--seeds", nargs="+", type=count(64), default=[1, 8, 16, 26],
                    help="row sizes S to time (each at most 64)")
    ap.add_argument("--rounds", type=count(100), default=7, help="timing rounds, variants alternating (at most 100)")
    ap.add_argument("--forward-reps", type=count(10_000), default=50,
                    help="forward passes per round and variant (at most 10_000)")
    ap.add_argument("--among", type=count(64, low=2), default=8,
                    help="the row the independence check runs the probe seed in (2 to 64)")
    ap.add_argument("--probe-seed", type=count(63, low=0), default=3,
                    help="the seed trained alone and among --among seeds (below --among)")
    ap.add_argument("--out", type=output_file, default=OUT,
                    help="the JSON (default benchmarks/results/seed_batch_speed.json)")
    args = ap.parse_args()
    if args.probe_seed >= args.among:
        ap.error(f"argument --probe-seed: must be below --among ({args.among}), got {args.probe_seed}")
    load_before = [round(x, 2) for x in os.getloadavg()]
    torch.set_num_threads(1)
    threadpool_limits(1)
    result = {"what": "ms per PPO update epoch and per rollout forward pass of S seeds' actor-critics, by variant; "
                      "ratio = loop's time / the variant's",
              "date": datetime.date.today().isoformat(), "machine": cpu_model(), "threads": 1,
              "torch": torch.__version__, "numpy": np.__version__, "loadavg_before": load_before,
              "rounds": args.rounds, "forward_reps": args.forward_reps, "variants": list(VARIANTS),
              "baseline": BASELINE, "tolerance": {"grads": GRAD_TOL, "params": PARAM_TOL, "losses": LOSS_TOL},
              "games": {}}
    lines = ["| game | S | " + " | ".join(f"{v} update ms (x)" for v in VARIANTS) + " | "
             + " | ".join(f"{v} forward ms (x)" for v in VARIANTS) + " |",
             "|---|---|" + "---|" * (2 * len(VARIANTS))]
    for game in args.games:
        n_seeds = max(max(args.seeds), args.among)
        trainers, batches, sizes = seed_trainers(game, n_seeds)
        start = Start(trainers)
        checks = check(trainers, batches, start, list(range(args.among)), args.probe_seed)
        rows = {}
        for s in args.seeds:
            rows[str(s)] = time_row(trainers, batches, start, list(range(s)), args.rounds, args.forward_reps)
            r = rows[str(s)]
            lines.append(f"| {game} | {s} | " + " | ".join(
                f"{r[v]['update_epoch_ms']:.2f} ({r[v]['update_ratio_to_loop']:.2f})" for v in VARIANTS) + " | "
                + " | ".join(f"{r[v]['forward_ms']:.3f} ({r[v]['forward_ratio_to_loop']:.2f})" for v in VARIANTS)
                + " |")
        result["games"][game] = {"sizes": sizes, "checks": checks, "by_seeds": rows}
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    write_json(args.out, result)
    print("\n".join(lines))
    print(f"\nload average before {load_before}, after {result['loadavg_after']}; JSON: {args.out}")


if __name__ == "__main__":
    main()
