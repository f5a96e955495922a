"""The act-level PPO trainer: it learns, co-trains both sides, keeps population members apart,
shares one network in selfplay, saves/loads, trains one public step at a time (a curriculum over simulators
needs nothing else) and on one thread."""

import numpy as np
import pytest
import torch

from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate

torch.set_num_threads(1)


def params(net):
    return torch.cat([p.detach().flatten() for p in net.parameters()])


def params_of(state: dict):
    return torch.cat([v.flatten() for v in state.values()])


def test_ppo_learns_on_a_fixed_seed():
    """Against the frozen simulator the training return rises; held-out is only measured, before and after."""
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=8000, seed=0))
    before = evaluate(trainer, "p4g-frozen", episodes=200, seed=1)["success"]
    history = trainer.train()
    after = evaluate(trainer, "p4g-frozen", episodes=200, seed=1)["success"]
    first, last = np.mean([r["return"] for r in history[:2]]), np.mean([r["return"] for r in history[-2:]])
    assert last > first + 0.2, (first, last)
    assert after > before + 0.2, (before, after)
    assert history[-1]["policy_entropy"] < history[0]["policy_entropy"]
    assert trainer.agent_steps >= 8000 and trainer.env_steps >= trainer.agent_steps


def test_masks_are_respected():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=0, seed=0, user_init="random"))
    env = trainer.envs[0]
    obs, infos = env.reset(seed=3)
    while env.agents:  # every act the trainer picks is legal (the env raises otherwise)
        reqs = [(a, obs[a]) for a in env.agents if infos[a]["active"]]
        acts = {a: 0 for a in env.agents}
        for a, o in reqs:  # each seat's network through the policy protocol
            x, m = trainer.encode(a, o)
            d = {"a": int(trainer.policies[a].act(x[None], m[None]).actions[0])}
            assert o["action_mask"][d["a"]] == 1
            acts[a] = d["a"]
        obs, _, _, _, infos = env.step(acts)


def test_cotraining_changes_both_networks():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=1500, seed=0, bc_episodes=40, bc_steps=20))
    assert set(trainer.learners) == {"agent_0", "user_0"}
    before = {n: params(net) for n, net in trainer.learners.items()}
    init_user = params(trainer.init["user_0"])
    history = trainer.train()
    for n, net in trainer.learners.items():
        assert not torch.allclose(before[n], params(net)), f"{n} did not change"
    assert torch.equal(init_user, params(trainer.init["user_0"]))  # the KL anchor stays frozen
    assert "user_0" in history[-1]["losses"] and history[-1]["losses"]["user_0"]["kl_init"] >= 0


def test_population_members_diverge():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-population", env_kwargs={"members": 3}, total_steps=2000, seed=0,
                                   bc_episodes=40, bc_steps=20, diversity_coef=0.05))
    users = ["user_0", "user_1", "user_2"]
    assert set(trainer.learners) == {"agent_0", *users}
    start = [params(trainer.learners[u]) for u in users]
    assert all(torch.equal(start[0], s) for s in start)  # members start as one clone of the frozen simulator
    trainer.train()
    end = [params(trainer.learners[u]) for u in users]
    for i in range(3):
        assert not torch.equal(start[i], end[i])
        for j in range(i + 1, 3):
            assert (end[i] - end[j]).norm() > 1e-3, (i, j)


def test_selfplay_uses_one_network():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", selfplay=True, total_steps=1000, seed=0,
                                   bc_episodes=30, bc_steps=20))
    assert list(trainer.learners) == ["shared"]
    assert trainer.seat == {"agent_0": "shared", "user_0": "shared"}
    env = trainer.envs[0]
    obs, _ = env.reset(seed=0)
    x_agent, _ = trainer.encode("agent_0", obs["agent_0"])
    x_user, _ = trainer.encode("user_0", obs["user_0"])
    assert x_agent.shape == x_user.shape and x_agent[0] == 1 and x_user[1] == 1  # told its role
    before = params(trainer.learners["shared"])
    history = trainer.train()
    assert not torch.equal(before, params(trainer.learners["shared"]))
    assert set(history[-1]["losses"]) == {"shared"}
    with pytest.raises(ValueError, match="selfplay"):
        PPOTrainer(PPOConfig(env_id="p4g-frozen", selfplay=True, total_steps=0))


def test_save_and_load(tmp_path):
    trainer = PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=500, seed=1, bc_episodes=20, bc_steps=10))
    trainer.train()
    trainer.save(tmp_path / "run")
    assert (tmp_path / "run" / "config.json").exists() and (tmp_path / "run" / "model.pt").exists()
    loaded = PPOTrainer.load(tmp_path / "run")
    assert loaded.cfg == trainer.cfg and loaded.agent_steps == trainer.agent_steps
    for n in trainer.learners:
        assert torch.equal(params(trainer.learners[n]), params(loaded.learners[n]))
        assert torch.equal(params(trainer.init[n] if n in trainer.init else trainer.learners[n]),
                           params(loaded.init[n] if n in loaded.init else loaded.learners[n]))
    a = evaluate(trainer, "p4g-heldout", episodes=20, seed=5, greedy=True)
    b = evaluate(loaded, "p4g-heldout", episodes=20, seed=5, greedy=True)
    assert a["success"] == b["success"]



def test_a_save_cut_short_leaves_the_one_before(tmp_path, monkeypatch):
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=300, seed=2))
    trainer.save(tmp_path / "run")
    before = {f: (tmp_path / "run" / f).read_bytes() for f in ("config.json", "model.pt")}
    trainer.train()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        trainer.save(tmp_path / "run")
    assert {f.name for f in (tmp_path / "run").iterdir()} == set(before)  # no temporary file left either
    assert {f: (tmp_path / "run" / f).read_bytes() for f in before} == before
    assert PPOTrainer.load(tmp_path / "run").agent_steps == 0

def test_same_seed_same_training():
    runs = [PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=600, seed=4)).train() for _ in range(2)]
    assert [r["return"] for r in runs[0]] == [r["return"] for r in runs[1]]


def test_bad_config():
    with pytest.raises(ValueError, match="user_init"):
        PPOTrainer(PPOConfig(env_id="p4g-cotrain", user_init="nope", total_steps=0))


@pytest.mark.parametrize("name", ["selfplay", "batched", "anneal_lr", "norm_adv", "clip_vloss", "grpo_std_norm"])
def test_a_switch_takes_a_bool_only(name):
    """``selfplay="False"`` turned self-play on (any string is true), as ``batched="False"`` ran the batched
    engine; every other setting was already checked."""
    with pytest.raises(ValueError, match=f"{name} must be True or False, got 'False'"):
        PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=0, **{name: "False"}))
    PPOTrainer(PPOConfig(env_id="p4g-cotrain", total_steps=0, **{name: np.bool_(False)}))


def test_default_path_is_unchanged():
    """group_size=1 with gae is the default and the ungrouped rollout: spelled out, it trains bit-identically,
    and its log rows carry no group diagnostics (the benchmark's numbers depend on this path)."""
    cfg = PPOConfig(env_id="p4g-frozen", total_steps=600, seed=2)
    assert (cfg.group_size, cfg.advantage, cfg.grpo_std_norm) == (1, "gae", False)
    runs, histories = [], []
    for c in (cfg, PPOConfig(env_id="p4g-frozen", total_steps=600, seed=2, group_size=1, advantage="gae",
                             grpo_std_norm=False)):
        runs.append(PPOTrainer(c))  # the seeds are global (torch's, numpy's): build, then train, one at a time
        histories.append(runs[-1].train())
    assert torch.equal(params(runs[0].learners["agent_0"]), params(runs[1].learners["agent_0"]))
    assert [r["return"] for r in histories[0]] == [r["return"] for r in histories[1]]
    assert set(histories[0][0]) == {"iteration", "agent_steps", "env_steps", "return", "policy_entropy",
                                    "user_entropy", "steps_per_s", "losses"}
    assert runs[0].pools == [] and not runs[0].curriculum


def reference_update(trainer, name, b):
    """The update written with torch's own objects (``Categorical``, autograd, ``clip_grad_norm_``,
    ``torch.optim.Adam`` from a fresh state) on the trainer's minibatch draws: the trainer's numpy update
    must reach its parameters."""
    from torch.distributions import Categorical

    cfg, net = trainer.cfg, trainer.learners[name]
    opt = torch.optim.Adam(net.parameters(), lr=trainer.optimizers[name].lr, eps=1e-5)
    b = {k: torch.as_tensor(v) for k, v in b.items()}

    def dist(module, x, m):
        return Categorical(logits=module.actor(x).masked_fill(~m, -1e9), validate_args=False)

    def kl(p, q):
        return (p.probs * (p.logits - q.logits)).sum(-1)

    n = len(b["a"])
    mb_size = max(cfg.min_minibatch, -(-n // cfg.num_minibatches))
    ent_coef = torch.where(b["user"], cfg.user_ent_coef, cfg.ent_coef)
    others = [o for k, o in trainer.learners.items() if k != name and k.startswith("user_")] \
        if name.startswith("user_") else []
    for _ in range(cfg.update_epochs):
        perm = torch.as_tensor(trainer.rng.permutation(n))
        for start in range(0, n, mb_size):
            mb = perm[start : start + mb_size]
            x, m, user = b["x"][mb], b["m"][mb], b["user"][mb]
            d = dist(net, x, m)
            ratio = (d.log_prob(b["a"][mb]) - b["logp"][mb]).exp()
            adv = b["adv"][mb]
            if cfg.norm_adv and cfg.advantage == "gae" and len(mb) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
            v = net.value(x)
            if cfg.clip_vloss:
                v_clipped = b["v"][mb] + (v - b["v"][mb]).clamp(-cfg.clip_coef, cfg.clip_coef)
                v_loss = 0.5 * torch.max((v - b["ret"][mb]) ** 2, (v_clipped - b["ret"][mb]) ** 2).mean()
            else:
                v_loss = 0.5 * ((v - b["ret"][mb]) ** 2).mean()
            loss = pg - (ent_coef[mb] * d.entropy()).mean() + cfg.vf_coef * v_loss
            if name in trainer.init and cfg.user_kl_coef > 0 and user.any():
                loss = loss + cfg.user_kl_coef * kl(d, dist(trainer.init[name], x, m))[user].mean()
            if cfg.diversity_coef > 0 and others:
                with torch.no_grad():
                    qs = [dist(o, x, m) for o in others]
                loss = loss - cfg.diversity_coef * torch.stack([kl(d, q) for q in qs]).mean(0).clamp(
                    max=cfg.diversity_cap).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            opt.step()


@pytest.mark.parametrize("env_id,extra", [("p4g-frozen", {}), ("p4g-frozen", {"clip_vloss": False}),
                                          ("p4g-frozen", {"group_size": 4, "advantage": "grpo"}),
                                          ("p4g-cotrain", {"selfplay": False}), ("p4g-cotrain", {"selfplay": True}),
                                          ("cooperbench-population", {"diversity_coef": 0.05})])
def test_update_equals_the_autograd_update(env_id, extra):
    """The trainer's update is numpy with its gradient written out (numpy_ac); from the same state and the
    same minibatch draws it reaches the parameters torch autograd and torch's Adam reach (KL anchor, the
    population's diversity term, selfplay's shared network included), up to float32 rounding."""
    import copy

    from scope_envs.train.numpy_ac import Adam

    kwargs = {"members": 2} if env_id.endswith("population") else {}
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, total_steps=300, seed=1, bc_episodes=20,
                                   bc_steps=20, **extra))
    trainer.train()
    batches = trainer.batches(trainer.play(trainer.envs, 32, seed=9)[0])
    for name, b in batches.items():
        start = copy.deepcopy(trainer.learners[name].state_dict())
        results = []
        for update in (trainer.update, lambda n, bb: reference_update(trainer, n, bb)):
            trainer.learners[name].load_state_dict(start)
            old = trainer.optimizers[name]
            trainer.optimizers[name] = Adam(old.flat, lr=trainer.cfg.learning_rate, eps=old.eps)  # fresh, both
            trainer.rng = np.random.default_rng(3)
            update(name, b)
            results.append(params(trainer.learners[name]))
        moved = (results[0] - params_of(start)).abs().max()
        assert moved > 1e-3, name  # it learned something
        torch.testing.assert_close(results[0], results[1], rtol=0, atol=5e-4 * float(moved))


def weights(trainer):
    return [params(net) for _, net in sorted(trainer.learners.items())]


def without_clock(rows):
    return [{k: v for k, v in row.items() if k != "steps_per_s"} for row in rows]


def test_train_is_a_loop_over_step():
    """``train()`` is ``step()`` until the budget: the same rows, the same weights, bit for bit; a step that
    names the config's own simulator is a plain step."""
    cfg = PPOConfig(env_id="p4g-cotrain", total_steps=400, num_envs=8, episodes_per_iter=8, seed=3, bc_episodes=20,
                    bc_steps=10)
    trained = PPOTrainer(cfg)
    history = trained.train()
    stepped = PPOTrainer(cfg)
    rows = [stepped.step()]
    while stepped.agent_steps < cfg.total_steps:
        rows.append(stepped.step("p4g-cotrain"))
    assert len(rows) > 2 and stepped.other_envs == []
    assert without_clock(rows) == without_clock(history) and [r["iteration"] for r in rows] == list(range(len(rows)))
    assert all(torch.equal(a, b) for a, b in zip(weights(trained), weights(stepped)))


def minimax(trainer, members):
    """A minimax curriculum over simulators on the public API: train against the member where agent_0's
    last training return was lowest (each member once first)."""
    last = [-np.inf] * len(members)
    while trainer.agent_steps < trainer.cfg.total_steps:
        i = int(np.argmin(last))
        last[i] = trainer.step(members[i])["return"]
    return last


def test_a_minimax_curriculum_over_simulators_needs_only_step():
    members = ["p4g-frozen", ("p4g-vs", {"k": 3}), "p4g-rotation"]
    runs = []
    for _ in range(2):
        trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=900, num_envs=8, episodes_per_iter=8, seed=1))
        start = params(trainer.learners["agent_0"])
        runs.append((minimax(trainer, members), trainer))
    (last, trainer), (again, twin) = runs
    assert [(env_id, kwargs) for env_id, kwargs, _ in trainer.other_envs] == [("p4g-vs", {"k": 3}),
                                                                             ("p4g-rotation", {})]
    assert np.isfinite(last).all() and trainer.updates > len(members)
    assert not torch.equal(start, params(trainer.learners["agent_0"]))
    assert again == last  # every simulator's envs are seeded: the run repeats
    assert all(torch.equal(a, b) for a, b in zip(weights(trainer), weights(twin)))


def test_a_simulator_the_networks_do_not_fit_is_refused():
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=100, num_envs=2, episodes_per_iter=2, seed=0))
    with pytest.raises(ValueError, match="seats"):
        trainer.step("p4g-cotrain")  # a learnable user: a seat the trainer has no network for
    with pytest.raises(ValueError, match="act counts"):
        trainer.step("cooperbench-frozen")
    with pytest.raises(ValueError, match="env id"):
        trainer.step(3)
    assert trainer.updates == 0 and trainer.other_envs == []


def test_the_held_out_population_is_refused_as_a_training_env_but_the_ceilings_recipe_is_not():
    """The command line refused a -heldout id while the Python trainer trained on it, directly or through
    ``step(env)``: now both refuse it, by one definition (``registry.held_out_refusal``). The ceiling's recipe,
    the held-out behaviour model on the *train* cards (``personas="train"``), stays trainable."""
    small = dict(total_steps=100, num_envs=2, episodes_per_iter=2, seed=0)
    with pytest.raises(ValueError, match="p4g-heldout is the held-out population every policy is evaluated "
                                         "against, not trained on"):
        PPOTrainer(PPOConfig(env_id="p4g-heldout", **small))
    trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", **small))
    with pytest.raises(ValueError, match="held-out population"):
        trainer.step("p4g-heldout")
    with pytest.raises(ValueError, match="held-out population"):
        trainer.step(("p4g-heldout", {"personas": "heldout"}))
    assert trainer.updates == 0 and trainer.other_envs == []
    ceiling = PPOTrainer(PPOConfig(env_id="p4g-heldout", env_kwargs={"personas": "train"}, **small))
    assert len(ceiling.train()) >= 1


def blas_threads():
    from threadpoolctl import threadpool_info

    return tuple(sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}))


def test_training_runs_on_one_thread_and_gives_the_callers_back():
    """As scope-envs bench runs it (issue 48: OpenBLAS's threads spinning against each other on a busy
    machine): one BLAS and one torch thread while training, the caller's after; ``threads=None`` leaves them."""
    from threadpoolctl import threadpool_limits

    caller = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with threadpool_limits(2, user_api="blas"):
            outside = blas_threads()
            for threads, inside in ((1, ((1,), 1)), (None, (outside, 2))):
                seen = []
                trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=100, num_envs=4, episodes_per_iter=4,
                                               seed=0, threads=threads))
                trainer.train(lambda row: seen.append((blas_threads(), torch.get_num_threads())))
                assert seen and set(seen) == {inside}, threads
                assert blas_threads() == outside and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(caller)
    for bad in (0, 1.0, True):
        with pytest.raises(ValueError, match="threads"):
            PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=0, threads=bad))
