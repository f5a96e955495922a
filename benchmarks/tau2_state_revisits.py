"""Could tau2's rules be memoized instead of compiled? How often a slot stands where an earlier episode stood.

A table of the rules' answers keyed by a game's state (its features, masks, the next state of each act) pays off
only if states recur. This plays ``--episodes`` episodes of ``tau2-frozen`` and ``tau2-heldout`` with a uniform
agent and with a PPO agent (``--steps`` decisions against ``tau2-frozen``, seed 0; its acts sampled) and counts,
over all steps, the distinct states reached under two keys:

* ``history``: the task and the (role, act) sequence so far (a trie over play: the rules are a function of it);
* ``state``: the task and every field the act game's rules read (counters, flags, the calls made, what was
  revealed (as the set of the task's grounding tokens it holds), the confirmations, the world's trail of writes,
  violations and identified users), which merges histories that lead to the same state
  (``tests/test_tau2_state_revisits.py``: equal keys, equal agent features, masks, user state and outcome);
* ``state_and_card``: that and the user's card (the traits a learnable user's features read);
* ``core``: the state without its counters (steps, tool errors, messages, denials, insists), the key of a memo
  that would keep the counters as arrays beside a table of the rest (the rules read the counters only through the
  step and error limits, the features and two flags, ``denied > 0`` and the user's first turn, which the key
  keeps).

``tasks`` is how many distinct tasks the episodes dealt: a memo is filled per task, and a train split of hundreds
of tasks gives each one few episodes at the benchmark's budgets.

``new_per_step`` near 1 means almost every step meets a state no earlier step met: a memo would miss almost
always, and the route to a faster engine is the rules as arrays (``docs/engines.md``).

    python benchmarks/tau2_state_revisits.py --episodes 2000 --steps 8000
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import scope_envs
from scope_envs.arguments import count


def state_key(g) -> tuple:
    """Every field of ``Tau2ActGame`` that its rules, the agent's features and both masks read, with the task. The
    user's card is left out: only the user's own features and reward read it (``revisits`` counts it apart)."""
    return (g.domain, g.task["id"], g.steps, g.tool_errors, frozenset(g.done), int(g.batch.revealed_bits[0]),
            tuple(sorted(g.told.items())), g.stated, g.details_given, g.asked, g.answered, g.decoy_stated,
            g.decoy_retracted, frozenset(g.confirmed), g.denied, g.insisted, g.inform_alls, g.user_msgs,
            g.agent_msgs, None if g.instructed is None else g.instructed.key(), g.transfer_pending,
            tuple(sorted(g.last.items())), g.asked_slot, g.confirm_target, g.slips, g.termination, g.world.trail,
            len(g.world.violations), frozenset(g.world.identified), g._next, g.decoy_executed)


def core_key(g) -> tuple:
    """``state_key`` without the counters: the told slots in the order told (the identity reads are listed in that
    order), the flags the counters feed kept."""
    confirming = getattr(g, "confirming", None)
    return (g.domain, g.task["id"], frozenset(g.done), int(g.batch.revealed_bits[0]),
            tuple(g.told.items()), g.stated, g.details_given, g.asked, g.answered, g.decoy_stated,
            g.decoy_retracted, frozenset(g.confirmed), None if g.instructed is None else g.instructed.key(),
            g.transfer_pending, g.asked_slot, g.confirm_target, None if confirming is None else confirming.key(),
            g.slips, g.termination, g.world.trail, len(g.world.violations), frozenset(g.world.identified), g._next,
            g.decoy_executed, g.denied > 0, g.user_msgs == 0)


def revisits(env_id: str, act, episodes: int, seed: int) -> dict:
    env = scope_envs.make(env_id)
    game = env.unwrapped.game
    histories, states, cards, cores, tasks, steps = set(), set(), set(), set(), set(), 0
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        tasks.add((game.domain, game.task["id"]))
        while env.agents:
            obs, *_ = env.step({a: act(obs[a]["observation"], obs[a]["action_mask"].astype(bool))
                                for a in env.agents})
            histories.add((game.domain, game.task["id"], tuple((t.role, t.act) for t in game.history)))
            states.add(state_key(game))
            cards.add((state_key(game), tuple(sorted(game.traits.items()))))
            cores.add(core_key(game))
            steps += 1
    return {"steps": steps, "tasks": len(tasks), "history_nodes": len(histories), "state_nodes": len(states),
            "state_and_card_nodes": len(cards), "core_nodes": len(cores),
            "history_new_per_step": round(len(histories) / steps, 3),
            "state_new_per_step": round(len(states) / steps, 3),
            "state_and_card_new_per_step": round(len(cards) / steps, 3),
            "core_new_per_step": round(len(cores) / steps, 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=count(100_000), default=2000,
                    help="episodes per id and agent (default 2000, at most 100_000)")
    ap.add_argument("--steps", type=count(1_000_000), default=8000,
                    help="the PPO agent's training decisions (default 8000, at most 1_000_000)")
    args = ap.parse_args(argv)
    # loaded here, not at the top: --help and a bad argument answer without torch
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    rng = np.random.default_rng(0)
    trainer = PPOTrainer(PPOConfig(env_id="tau2-frozen", seed=0, total_steps=args.steps))
    trainer.train()
    policy = trainer.policies_with(np.random.default_rng(1))["agent_0"]
    agents = {"uniform": lambda x, m: int(rng.choice(np.flatnonzero(m))),
              "ppo": lambda x, m: int(policy.act(x[None], m[None]).actions[0])}
    out = {f"{name} {env_id}": revisits(env_id, act, args.episodes, 10_000)
           for name, act in agents.items() for env_id in ("tau2-frozen", "tau2-heldout")}
    print(json.dumps({"episodes": args.episodes, "ppo_steps": args.steps, **out}, indent=1))


if __name__ == "__main__":
    main()
